package plog

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// putDIS is a DIS whose PutRecords a test holds and inspects.
type putDIS struct {
	disclient.API
	// hold, when set, blocks every PutRecords call until it is closed.
	hold chan struct{}
	// results, when set, replaces the per-record results.
	results func(n int) []disclient.PutRecordsResult

	mu      sync.Mutex
	started chan struct{} // receives one value per call as it starts
	written []string      // record data in the order written
	next    int
}

func (d *putDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	if d.started != nil {
		d.started <- struct{}{}
	}
	if d.hold != nil {
		select {
		case <-d.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.results != nil {
		return &disclient.PutRecordsResponse{Records: d.results(len(req.Records))}, nil
	}
	resp := &disclient.PutRecordsResponse{}
	for _, e := range req.Records {
		d.written = append(d.written, string(e.Data))
		resp.Records = append(resp.Records, disclient.PutRecordsResult{SequenceNumber: strconv.Itoa(d.next)})
		d.next++
	}
	return resp, nil
}

func (d *putDIS) writtenData() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.written...)
}

func testWriter(t *testing.T, s testSettings, dis disclient.API) *partitionWriter {
	t.Helper()
	return testTenant(t, s, dis).Partition(testKey("t", 0)).writer
}

// dataOp is a plain op of one record per value.
func dataOp(values ...string) *Append {
	op := NewAppend(false)
	for _, v := range values {
		op.Entries = append(op.Entries, disclient.PutRecordsEntry{Data: []byte(v)})
		op.Records = append(op.Records, protocol.Record{Value: []byte(v)})
		op.Bytes += len(v)
	}
	return op
}

func waitDone(t *testing.T, op *Append) {
	t.Helper()
	select {
	case <-op.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("op never completed")
	}
}

func idemOp(pid int64, epoch int16, first, last int32) *Append {
	op := NewAppend(false)
	op.ProducerID, op.Epoch, op.FirstSeq, op.LastSeq = pid, epoch, first, last
	return op
}

// The idempotent producer rules, fed step by step.
func TestCheckSequence(t *testing.T) {
	w := testWriter(t, testSettings{}, nil)
	step := func(op *Append, wantDup *Append, wantCode int16) {
		t.Helper()
		dup, code := w.checkSequence(op)
		if dup != wantDup || code != wantCode {
			t.Fatalf("batch %d..%d epoch %d: dup %p code %v, want dup %p code %v",
				op.FirstSeq, op.LastSeq, op.Epoch, dup, kerr.ErrorForCode(code), wantDup, kerr.ErrorForCode(wantCode))
		}
	}
	// An unknown producer may start anywhere (its state may have been lost
	// in a restart).
	a := idemOp(7, 0, 10, 14)
	step(a, nil, 0)
	b := idemOp(7, 0, 15, 15)
	step(b, nil, 0)
	// Retries of any of the recent batches are duplicates of the original.
	step(idemOp(7, 0, 10, 14), a, 0)
	step(idemOp(7, 0, 15, 15), b, 0)
	// A gap, and an old sequence no longer remembered.
	step(idemOp(7, 0, 17, 17), nil, kerr.OutOfOrderSequenceNumber.Code)
	step(idemOp(7, 0, 3, 4), nil, kerr.DuplicateSequenceNumber.Code)
	// A batch that overlaps the last one without matching it.
	step(idemOp(7, 0, 15, 16), nil, kerr.OutOfOrderSequenceNumber.Code)
	// An older epoch is fenced; a newer epoch must start at 0.
	step(idemOp(7, -1, 16, 16), nil, kerr.InvalidProducerEpoch.Code)
	step(idemOp(7, 1, 16, 16), nil, kerr.OutOfOrderSequenceNumber.Code)
	c := idemOp(7, 1, 0, 2)
	step(c, nil, 0)
	step(idemOp(7, 1, 0, 2), c, 0)
	// Other producers are independent.
	step(idemOp(8, 0, 0, 0), nil, 0)
	// Only idempotentWindow batches are remembered.
	for i := int32(3); i < 3+idempotentWindow; i++ {
		step(idemOp(7, 1, i, i), nil, 0)
	}
	step(idemOp(7, 1, 0, 2), nil, kerr.DuplicateSequenceNumber.Code)
}

func TestSequenceWraps(t *testing.T) {
	w := testWriter(t, testSettings{}, nil)
	if _, code := w.checkSequence(idemOp(1, 0, 1<<31-2, 1<<31-1)); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if _, code := w.checkSequence(idemOp(1, 0, 0, 3)); code != 0 {
		t.Fatalf("sequence after int32 max: %v, want it to wrap to 0", kerr.ErrorForCode(code))
	}
}

// An op with no records is refused before it is queued, and a DIS answer
// with fewer results than records fails the ops instead of panicking.
func TestWriterEmptyOpAndShortResults(t *testing.T) {
	dis := &putDIS{}
	w := testWriter(t, testSettings{}, dis)
	if _, code := w.enqueue(context.Background(), dataOp()); code != kerr.InvalidRecord.Code {
		t.Fatalf("empty op: %v, want INVALID_RECORD", kerr.ErrorForCode(code))
	}
	if got := dis.writtenData(); len(got) != 0 {
		t.Fatalf("DIS got %v for an empty op", got)
	}
	var empty Append
	empty.complete(nil, nil)
	if empty.ErrCode != kerr.UnknownServerError.Code {
		t.Fatalf("no results: %v, want UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(empty.ErrCode))
	}

	dis.results = func(int) []disclient.PutRecordsResult { return nil }
	op := dataOp("a", "b")
	if _, code := w.enqueue(context.Background(), op); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	waitDone(t, op)
	if op.ErrCode != kerr.UnknownServerError.Code {
		t.Fatalf("DIS answered no results: %v, want UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(op.ErrCode))
	}
}

// An op its producer gave up on while it was queued is never written; one
// already in a PutRecords call cannot be taken back.
func TestCancelledOpNotWritten(t *testing.T) {
	dis := &putDIS{hold: make(chan struct{}), started: make(chan struct{}, 4)}
	w := testWriter(t, testSettings{}, dis)
	first, second, third := dataOp("first"), dataOp("second"), dataOp("third")
	for _, op := range []*Append{first} {
		if _, code := w.enqueue(context.Background(), op); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	<-dis.started // first is in its PutRecords call
	for _, op := range []*Append{second, third} {
		if _, code := w.enqueue(context.Background(), op); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	if first.Cancel() {
		t.Fatal("cancelled an op already being written")
	}
	if !second.Cancel() {
		t.Fatal("could not cancel a queued op")
	}
	close(dis.hold)
	for _, op := range []*Append{first, second, third} {
		waitDone(t, op)
	}
	if second.ErrCode != kerr.RequestTimedOut.Code {
		t.Fatalf("cancelled op: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(second.ErrCode))
	}
	if got := dis.writtenData(); len(got) != 2 || got[0] != "first" || got[1] != "third" {
		t.Fatalf("DIS got %v, want [first third]", got)
	}
	if q := w.d.Queues.queued; q != 0 {
		t.Fatalf("%d bytes still counted as queued", q)
	}
}

// A full partition queue, or full queues overall, make a produce wait
// until its deadline; room released lets the next one in.
func TestWriteQueueBounds(t *testing.T) {
	big := string(make([]byte, 1000))
	for _, tc := range []struct {
		name string
		cfg  testSettings
		next func(w *partitionWriter) *partitionWriter
	}{
		{"per partition", testSettings{MaxPartitionQueueBytes: 1500}, func(w *partitionWriter) *partitionWriter { return w }},
		{"overall", testSettings{MaxQueueBytes: 1500}, func(w *partitionWriter) *partitionWriter {
			return w.state.t.Partition(testKey("t", 1)).writer
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dis := &putDIS{hold: make(chan struct{})}
			w := testWriter(t, tc.cfg, dis)
			first := dataOp(big)
			if _, code := w.enqueue(context.Background(), first); code != 0 {
				t.Fatal(kerr.ErrorForCode(code))
			}
			other := tc.next(w)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, code := other.enqueue(ctx, dataOp(big)); code != kerr.RequestTimedOut.Code {
				t.Fatalf("over the bound: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
			}
			// A waiting produce gets in once the first write finishes.
			waiting := make(chan int16, 1)
			late := dataOp(big)
			go func() {
				_, code := other.enqueue(context.Background(), late)
				waiting <- code
			}()
			select {
			case code := <-waiting:
				t.Fatalf("admitted (%v) while the queue was full", kerr.ErrorForCode(code))
			case <-time.After(50 * time.Millisecond):
			}
			close(dis.hold)
			if code := <-waiting; code != 0 {
				t.Fatal(kerr.ErrorForCode(code))
			}
			waitDone(t, late)
			if got := dis.writtenData(); len(got) != 2 {
				t.Fatalf("DIS got %d records, want 2: the timed-out produce must not be written", len(got))
			}
		})
	}
}

// Idempotent producer state expires after ProducerIDExpiration, and a
// partition keeps at most MaxProducersPerPartition producers.
func TestProducerStatePruned(t *testing.T) {
	w := testWriter(t, testSettings{Config: Config{MaxProducersPerPartition: 3, ProducerIDExpiration: time.Hour}}, nil)
	for id := int64(1); id <= 4; id++ {
		if _, code := w.checkSequence(idemOp(id, 0, 0, 0)); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	if len(w.producers) != 3 || w.producers[1] != nil {
		t.Fatalf("producers %v, want the 3 newest", len(w.producers))
	}

	w = testWriter(t, testSettings{Config: Config{MaxProducersPerPartition: 2, ProducerIDExpiration: 20 * time.Millisecond}}, nil)
	if _, code := w.checkSequence(idemOp(1, 0, 0, 0)); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	time.Sleep(40 * time.Millisecond)
	if _, code := w.checkSequence(idemOp(2, 0, 0, 0)); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	// A new producer finds the partition full: the expired one goes, the
	// live one stays.
	if _, code := w.checkSequence(idemOp(3, 0, 0, 0)); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if w.producers[1] != nil || w.producers[2] == nil || w.producers[3] == nil {
		t.Fatal("the expired producer was kept or a live one evicted")
	}
	// An expired producer's next batch is accepted at any sequence, as a
	// producer the gateway never saw.
	time.Sleep(40 * time.Millisecond)
	if _, code := w.checkSequence(idemOp(2, 0, 57, 57)); code != 0 {
		t.Fatalf("expired producer resuming at a gap: %v", kerr.ErrorForCode(code))
	}
}

// idemDataOp is an idempotent op of one record per value (raw format).
func idemDataOp(pid int64, first int32, values ...string) *Append {
	op := dataOp(values...)
	op.ProducerID, op.FirstSeq, op.LastSeq = pid, first, first+int32(len(values))-1
	return op
}

// After a failed write of an idempotent producer's batch, its batches
// queued behind it fail with OUT_OF_ORDER_SEQUENCE_NUMBER without being
// written, and its retry of the failed batch is in sequence again.
func TestFailedBatchFailsTheProducersQueuedBatches(t *testing.T) {
	dis := &putDIS{hold: make(chan struct{}), started: make(chan struct{}, 10)}
	failNext := true
	dis.results = func(n int) []disclient.PutRecordsResult {
		out := make([]disclient.PutRecordsResult, n)
		for i := range out {
			if failNext {
				// Not throttling, which the writer resends until the deadline.
				out[i] = disclient.PutRecordsResult{ErrorCode: disclient.CodeSystemError, ErrorMessage: "system error"}
			} else {
				out[i] = disclient.PutRecordsResult{SequenceNumber: strconv.Itoa(dis.next)}
				dis.written = append(dis.written, "ok")
				dis.next++
			}
		}
		failNext = false
		return out
	}
	w := testWriter(t, testSettings{}, dis)
	ctx := context.Background()
	first := idemDataOp(7, 0, "a")
	if _, code := w.enqueue(ctx, first); code != 0 {
		t.Fatal(code)
	}
	<-dis.started // the first call holds first; the rest queue
	second, other := idemDataOp(7, 1, "b"), dataOp("c")
	for _, op := range []*Append{second, other} {
		if _, code := w.enqueue(ctx, op); code != 0 {
			t.Fatal(code)
		}
	}
	close(dis.hold)
	for _, op := range []*Append{first, second, other} {
		waitDone(t, op)
	}
	if first.ErrCode == 0 {
		t.Fatal("the failed batch succeeded")
	}
	if second.ErrCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("the producer's queued batch: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", second.ErrCode)
	}
	if other.ErrCode != 0 {
		t.Fatalf("another producer's batch failed too: %d", other.ErrCode)
	}
	retry := idemDataOp(7, 0, "a")
	if dup, code := w.enqueue(ctx, retry); dup != nil || code != 0 {
		t.Fatalf("the retry of the failed batch: dup %v code %d, want it queued", dup, code)
	}
	waitDone(t, retry)
	if retry.ErrCode != 0 {
		t.Fatalf("the retry failed: %d", retry.ErrCode)
	}
}

// An op DIS stored part of when its deadline passed, DIS throttling the
// rest, is written to its end rather than failed: its producer's retry of
// the same sequence numbers is answered with the op's outcome, so no record
// is stored twice, and the producer's batch queued behind it is written
// after it.
func TestPartlyWrittenOpOutlivesItsDeadline(t *testing.T) {
	dis := &putDIS{}
	deadline := time.Now().Add(200 * time.Millisecond)
	calls := 0
	dis.results = func(n int) []disclient.PutRecordsResult {
		calls++
		out := make([]disclient.PutRecordsResult, n)
		stored := 0
		switch {
		case calls == 1:
			stored = 2 // the first call stores two records of four
		case time.Now().After(deadline.Add(200 * time.Millisecond)):
			stored = n // DIS takes the rest well after the deadline
		}
		for i := range out {
			if i >= stored {
				out[i] = disclient.PutRecordsResult{ErrorCode: disclient.CodeTrafficControl, ErrorMessage: "Exceeded traffic control limit."}
				continue
			}
			out[i] = disclient.PutRecordsResult{SequenceNumber: strconv.Itoa(dis.next)}
			dis.written = append(dis.written, "r")
			dis.next++
		}
		return out
	}
	w := testWriter(t, testSettings{}, dis)
	ctx := context.Background()
	first := idemDataOp(7, 0, "a", "b", "c", "d")
	first.Deadline = deadline
	if _, code := w.enqueue(ctx, first); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	second := idemDataOp(7, 4, "e")
	second.Deadline = time.Now().Add(10 * time.Second)
	if _, code := w.enqueue(ctx, second); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	time.Sleep(time.Until(deadline.Add(50 * time.Millisecond)))
	// The producer was answered REQUEST_TIMED_OUT and retries.
	if dup, code := w.enqueue(ctx, idemDataOp(7, 0, "a", "b", "c", "d")); dup != first || code != 0 {
		t.Fatalf("the retry: dup %p code %v, want the original op", dup, kerr.ErrorForCode(code))
	}
	waitDone(t, first)
	waitDone(t, second)
	if first.ErrCode != 0 || first.BaseOffset != 0 {
		t.Fatalf("the partly written op: %v, base offset %d; want written at 0", kerr.ErrorForCode(first.ErrCode), first.BaseOffset)
	}
	if second.ErrCode != 0 || second.BaseOffset != 4 {
		t.Fatalf("the batch behind it: %v, base offset %d; want written at 4", kerr.ErrorForCode(second.ErrCode), second.BaseOffset)
	}
	if got := len(dis.writtenData()); got != 5 {
		t.Fatalf("DIS holds %d records, want 5, each once", got)
	}
}

// A queued idempotent batch whose producer timed out is not written, and
// neither is the producer's later batch queued behind it: that one fails
// OUT_OF_ORDER_SEQUENCE_NUMBER, and the retry of the first is in sequence.
func TestCancelledBatchHoldsBackItsProducer(t *testing.T) {
	dis := &putDIS{hold: make(chan struct{}), started: make(chan struct{}, 10)}
	w := testWriter(t, testSettings{Config: Config{PutRecordsKeepsOrder: true}}, dis)
	ctx := context.Background()
	blocker := dataOp("x")
	if _, code := w.enqueue(ctx, blocker); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	<-dis.started
	first, second := idemDataOp(7, 0, "a"), idemDataOp(7, 1, "b")
	for _, op := range []*Append{first, second} {
		if _, code := w.enqueue(ctx, op); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	if !first.Cancel() {
		t.Fatal("could not cancel the queued batch")
	}
	close(dis.hold)
	for _, op := range []*Append{blocker, first, second} {
		waitDone(t, op)
	}
	if first.ErrCode != kerr.RequestTimedOut.Code || second.ErrCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("cancelled batch %v, the one behind it %v; want REQUEST_TIMED_OUT and OUT_OF_ORDER_SEQUENCE_NUMBER",
			kerr.ErrorForCode(first.ErrCode), kerr.ErrorForCode(second.ErrCode))
	}
	if got := dis.writtenData(); len(got) != 1 {
		t.Fatalf("DIS got %v, want only the other producer's record", got)
	}
	retry := idemDataOp(7, 0, "a")
	if dup, code := w.enqueue(ctx, retry); dup != nil || code != 0 {
		t.Fatalf("the retry: dup %v code %v, want it queued", dup, kerr.ErrorForCode(code))
	}
	waitDone(t, retry)
	if retry.ErrCode != 0 {
		t.Fatal(kerr.ErrorForCode(retry.ErrCode))
	}
}
