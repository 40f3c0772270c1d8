package plog

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Append is one produce batch on its way to DIS: the handler fills in the
// batch and its producer, the writer the outcome, which may be read once
// Done is closed.
type Append struct {
	// Entries are the DIS records to write, Records the same records for
	// the raw read cache, and Bytes their data's length.
	Entries []disclient.PutRecordsEntry
	Records []protocol.Record
	Bytes   int
	// Kafka appends hold one entry per record batch, stored as sent
	// (docs/record-formats.md); LogAppendTime has the writer stamp them
	// with the time it writes them.
	Kafka         bool
	LogAppendTime bool
	// AppendTime is the time a LogAppendTime batch was stamped with, for
	// the produce answer's log_append_time.
	AppendTime int64

	ProducerID        int64 // -1 for non-idempotent producers
	Epoch             int16
	FirstSeq, LastSeq int32
	// Transactional is set for a batch of a transaction (attribute bit
	// 4), always of an idempotent producer: it opens the producer's
	// transaction on the partition, and a batch without it is refused
	// while one is open (docs/design.md §13).
	Transactional bool

	// marker is set for a transaction marker (markers.go); prevTxn is
	// its producer's transaction view before it, restored when it fails.
	marker  *Marker
	prevTxn writerTxn

	// state moves from opQueued to opTaken when the writer puts the op
	// into a PutRecords call, or to opCancelled when its producer was
	// answered first; whichever comes first wins.
	state atomic.Int32

	// Deadline is when its producer is answered REQUEST_TIMED_OUT if DIS
	// has not taken the op by then; zero for acks=0, which waits for no
	// answer.
	Deadline time.Time

	// The outcome: written by the writer before done is closed, read by
	// the handler after.
	done       chan struct{}
	BaseOffset int64
	scattered  bool // DIS did not store the records at consecutive offsets
	ErrCode    int16
	Throttled  bool // DIS refused for traffic control: the client should back off
	ErrMsg     string
}

// NewAppend makes an empty append of a non-idempotent producer, of
// record batches stored as sent when kafka, else of raw records.
func NewAppend(kafka bool) *Append {
	return &Append{ProducerID: -1, Kafka: kafka, done: make(chan struct{})}
}

// Done is closed once the append is written or has failed.
func (op *Append) Done() <-chan struct{} { return op.done }

const (
	opQueued int32 = iota
	opTaken
	opCancelled
)

// Cancel withdraws a queued op whose producer has been answered
// REQUEST_TIMED_OUT, so that it is never written after that answer. It
// returns false when the op is already in a PutRecords call: a call cannot be
// taken back, so such an op may still be written, the same ambiguity a Kafka
// producer has for a request that timed out during replication.
func (op *Append) Cancel() bool {
	return op.state.CompareAndSwap(opQueued, opCancelled)
}

// entryOverhead is what a queued entry costs besides its data; it keeps
// empty records from queueing for free.
const entryOverhead = 64

// queueCost is what op counts against the write-queue bounds.
func (op *Append) queueCost() int64 {
	return int64(op.Bytes) + int64(len(op.Entries))*entryOverhead
}

func (op *Append) fail(code int16, msg string) {
	op.ErrCode, op.ErrMsg = code, msg
}

// finish releases op's records, which its producer's retries never need,
// and wakes everyone waiting for it; producer state keeps only the outcome.
func (op *Append) finish() {
	op.Entries, op.Records = nil, nil
	close(op.done)
}

// partitionWriter serialises writes to one DIS partition: at most one
// PutRecords in flight, and everything that arrives meanwhile goes into the
// next call (docs/design.md §4). That keeps Kafka's per-partition order and turns
// DIS round trips into batching rather than queueing. On kafka-format
// streams it also gives each batch its offsets, from the partition state it
// shares with the reader (writeBatches).
type partitionWriter struct {
	d     *Deps
	key   Key
	state *Partition

	// mu guards the fields from queue to completing, evicted, and the
	// producerState of every producer in producers. It is taken before
	// Deps.Queues.mu, after the tenant's mu and the partition's recoverMu.
	mu         sync.Mutex
	queue      []*Append
	running    bool
	producers  map[int64]*producerState
	lastPruned time.Time

	// pipeline holds the calls whose durability the completer awaits,
	// oldest first, and completing is set while it runs
	// (writer_pipeline.go).
	pipeline   []*pipelinedCall
	completing bool

	// queued is the cost of the ops queued and in flight, guarded by
	// Deps.Queues.mu.
	queued int64
	// evicted is set when idle eviction dropped the writer
	// (Tenant.EvictIdle).
	evicted bool
}

// enqueue checks an idempotent batch's sequence numbers and queues op,
// first waiting until the write queues have room for it (see Queues);
// ctx bounds that wait. It returns the original op when op retries a batch
// already accepted (the caller answers with that op's outcome), or an error
// code for a batch that must be refused. An op without entries is refused:
// there is nothing to write and no offset to answer with.
func (w *partitionWriter) enqueue(ctx context.Context, op *Append) (dup *Append, code int16) {
	if len(op.Entries) == 0 {
		return nil, kerr.InvalidRecord.Code
	}
	if op.Kafka && op.ProducerID >= 0 {
		// The producer's state comes from the partition's tail and its
		// transaction state: recover them before judging the batch.
		err := w.state.EnsureProducers(ctx)
		if err == nil {
			err = w.state.ensureTxn(ctx)
		}
		if err != nil {
			w.d.Log.Warn().Err(err).Str("topic", w.key.Topic).Int32("partition", w.key.Partition).
				Msg("recovering the partition's producers from DIS failed")
			return nil, kerr.KafkaStorageError.Code
		}
		if op.Transactional {
			if err := w.state.ensureTxnPointer(ctx); err != nil {
				w.d.Log.Warn().Err(err).Str("topic", w.key.Topic).Int32("partition", w.key.Partition).
					Msg("writing the partition's transaction state pointer failed")
				return nil, kerr.KafkaStorageError.Code
			}
		}
	}
	cost := op.queueCost()
	if !w.d.Queues.reserve(ctx, w, cost) {
		return nil, kerr.RequestTimedOut.Code
	}
	w.mu.Lock()
	if w.evicted {
		w.mu.Unlock()
		w.d.Queues.release(w, cost)
		return w.state.t.Partition(w.key).writer.enqueue(ctx, op)
	}
	defer w.mu.Unlock()
	if op.ProducerID >= 0 {
		check := w.checkSequence
		if op.marker != nil {
			check = w.checkMarker
		}
		if dup, code := check(op); dup != nil || code != 0 {
			w.d.Queues.release(w, cost)
			return dup, code
		}
	}
	w.queue = append(w.queue, op)
	if !w.running {
		w.running = true
		go w.run()
	}
	return nil, 0
}

// Enqueue queues op on the partition's writer, which writes it in order
// with everything else queued there (docs/design.md §4). It returns the
// original append when op retries an idempotent batch already accepted
// (the caller answers with that one's outcome), or the error code of an
// append refused before it was queued; ctx bounds the wait for write-queue
// room.
func (ps *Partition) Enqueue(ctx context.Context, op *Append) (dup *Append, code int16) {
	return ps.writer.enqueue(ctx, op)
}

// run drains the queue, one PutRecords call at a time.
func (w *partitionWriter) run() {
	var ops []*Append
	defer w.d.Recover("partition writer", func() { w.abandon(ops) })
	for {
		var cancelled []*Append
		ops, cancelled = w.take()
		if ops == nil && cancelled == nil {
			return
		}
		w.skip(cancelled)
		if len(ops) > 0 && (w.state.moved.Load() || w.state.borrowed) {
			// NOT_LEADER_OR_FOLLOWER sends their producers, and a
			// coordinator's markers, to the new owner, so that only it
			// writes the partition from then on and its state holds
			// everything written (docs/design.md §6).
			w.unwritten(ops, kerr.NotLeaderForPartition.Code, "the partition moved to another gateway before this batch was written")
			ops = nil
		}
		if len(ops) > 0 {
			w.write(ops)
		}
	}
}

// abandon completes, after a panic in run, the ops of the call that
// panicked (UNKNOWN_SERVER_ERROR) and those still queued (retriable
// KAFKA_STORAGE_ERROR: they were never sent), releases their queue room and
// leaves the writer idle, so that no producer waits for ever and the next
// enqueue starts a new run.
func (w *partitionWriter) abandon(ops []*Append) {
	w.mu.Lock()
	queued := w.queue
	w.queue, w.running = nil, false
	for _, op := range ops {
		if op.ProducerID >= 0 {
			delete(w.producers, op.ProducerID)
		}
	}
	for _, op := range queued {
		if op.ProducerID >= 0 {
			delete(w.producers, op.ProducerID)
		}
	}
	w.mu.Unlock()
	var cost int64
	fail := func(ops []*Append, code int16, msg string) {
		for _, op := range ops {
			select {
			case <-op.done:
			default:
				cost += op.queueCost()
				op.fail(code, msg)
				op.finish()
			}
		}
	}
	fail(ops, kerr.UnknownServerError.Code, "disgw failed writing this batch")
	fail(queued, kerr.KafkaStorageError.Code, "disgw's partition writer failed before sending this batch; retry")
	w.d.Queues.release(w, cost)
}

// take removes the ops for the next call and the cancelled ops before and
// among them, or marks the writer idle.
func (w *partitionWriter) take() (ops, cancelled []*Append) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.running = false
		return nil, nil
	}
	maxRecs, maxBytes := w.d.PutRecordsMaxRecords, w.d.PutRecordsMaxBytes
	i, recs, bytes := 0, 0, 0
	var producers, stopped map[int64]bool
	for ; i < len(w.queue); i++ {
		op := w.queue[i]
		if len(ops) > 0 && (recs+len(op.Entries) > maxRecs || bytes+op.Bytes > maxBytes || op.Kafka != ops[0].Kafka) {
			break
		}
		// DIS may fail one record of a call and store a later one, so
		// unless it keeps order a producer's second batch waits for the
		// next call: its order in the log is then its order of sending.
		if op.ProducerID >= 0 && producers[op.ProducerID] && !w.d.PutRecordsKeepsOrder {
			break
		}
		// A producer's batches after one of its batches that was
		// cancelled wait: skip fails them, as they must not overtake
		// the cancelled batch's retry.
		if op.ProducerID >= 0 && stopped[op.ProducerID] {
			break
		}
		if !op.state.CompareAndSwap(opQueued, opTaken) {
			cancelled = append(cancelled, op)
			if op.ProducerID >= 0 {
				if stopped == nil {
					stopped = make(map[int64]bool)
				}
				stopped[op.ProducerID] = true
			}
			continue
		}
		recs += len(op.Entries)
		bytes += op.Bytes
		ops = append(ops, op)
		if op.ProducerID >= 0 {
			if producers == nil {
				producers = make(map[int64]bool)
			}
			producers[op.ProducerID] = true
		}
	}
	// Clear what moved so the backing array does not keep finished ops.
	n := copy(w.queue, w.queue[i:])
	clear(w.queue[n:])
	w.queue = w.queue[:n]
	return ops, cancelled
}

// skip completes ops whose producers were answered before they were
// written: they are not written.
func (w *partitionWriter) skip(ops []*Append) {
	if w.unwritten(ops, kerr.RequestTimedOut.Code, "the produce request timed out before its records were written") {
		w.d.ProduceCancelled(len(ops))
	}
}

// unwritten completes ops that are not to be written with code, and
// reports whether they held queue room, which it releases. An idempotent
// producer's sequence goes back to before such an op and its later queued
// batches fail, as after a failed write (producerFailed), so that its
// retry is in sequence and nothing of the producer is written before it.
func (w *partitionWriter) unwritten(ops []*Append, code int16, msg string) bool {
	var cost int64
	for _, op := range ops {
		cost += op.queueCost()
		op.fail(code, msg)
		if op.ProducerID >= 0 {
			w.producerFailed(op)
		}
		op.finish()
	}
	if cost > 0 {
		w.d.Queues.release(w, cost)
	}
	return cost > 0
}

// write sends ops in one PutRecords call, or several when one op alone is
// over the per-call limits, and completes every op.
func (w *partitionWriter) write(ops []*Append) {
	if ops[0].Kafka {
		w.writeBatches(ops)
		return
	}
	entries := ops[0].Entries
	if len(ops) > 1 {
		entries = nil
		for _, op := range ops {
			entries = append(entries, op.Entries...)
		}
	}
	ends := make([]int, len(ops))
	for i, op := range ops {
		ends[i] = len(op.Entries)
		if i > 0 {
			ends[i] += ends[i-1]
		}
	}
	var cost int64
	out := w.put(callDeadline(ops), entries, ends, false)
	i := 0
	var written []protocol.Record
	for _, op := range ops {
		cost += op.queueCost()
		n := len(op.Entries)
		switch {
		case i+n <= len(out.results):
			op.complete(out.results[i:i+n], w.d.KafkaCode)
		default:
			// A call failed with an error other than throttling before
			// DIS answered all of op's records. Should DIS have stored
			// some, the retry stores them again: DIS records carry no
			// producer sequence to recognise them by.
			op.fail(out.code, out.msg)
			op.Throttled = out.throttled
		}
		i += n
		if op.ErrCode != 0 {
			if op.ProducerID >= 0 {
				w.producerFailed(op)
			}
			continue
		}
		if op.scattered {
			w.d.Log.Warn().Str("topic", w.key.Topic).Int32("partition", w.key.Partition).Int64("base_offset", op.BaseOffset).
				Msg("DIS stored a batch at non-consecutive offsets after resending throttled records; the offsets reported to the producer are approximate")
			w.state.reader.invalidate()
		} else {
			for j := range op.Records {
				op.Records[j].Offset = op.BaseOffset + int64(j)
			}
			written = append(written, op.Records...)
		}
		w.d.Produced(w.key, n, entriesBytes(op.Entries))
	}
	if len(written) > 0 {
		w.state.reader.appended(written)
	}
	w.d.Queues.release(w, cost)
	for _, op := range ops {
		op.finish()
	}
}

// complete takes op's per-record results: the base offset when every record
// was written, or the first record's error, as kafkaCode maps it.
func (op *Append) complete(results []disclient.PutRecordsResult, kafkaCode func(error) int16) {
	if len(results) == 0 {
		op.fail(kerr.UnknownServerError.Code, "DIS answered PutRecords with no record results")
		return
	}
	for _, r := range results {
		if r.ErrorCode != "" {
			op.fail(kafkaCode(&disclient.Error{Code: r.ErrorCode, Message: r.ErrorMessage}), r.ErrorCode+": "+r.ErrorMessage)
			op.Throttled = disclient.IsThrottle(r.ErrorCode)
			return
		}
	}
	base, err := strconv.ParseInt(results[0].SequenceNumber, 10, 64)
	if err != nil {
		op.fail(kerr.UnknownServerError.Code, "DIS returned sequence number "+strconv.Quote(results[0].SequenceNumber))
		return
	}
	op.BaseOffset = base
	for i := range results {
		if results[i].SequenceNumber != strconv.FormatInt(base+int64(i), 10) {
			// Only a partially failed call whose failed records DIS took on
			// a resend can do this; Kafka has no way to say it.
			op.scattered = true
			return
		}
	}
}

// callDeadline bounds the PutRecords calls for ops: the latest deadline of
// their producers, within PutTimeout. Past it every producer has been
// answered REQUEST_TIMED_OUT, so a DIS that hangs holds up the partition's
// later writes no longer than the requests that were waiting for it.
func callDeadline(ops []*Append) time.Time {
	limit := time.Now().Add(PutTimeout)
	var latest time.Time
	for _, op := range ops {
		if op.Deadline.IsZero() {
			return limit
		}
		if op.Deadline.After(latest) {
			latest = op.Deadline
		}
	}
	if latest.After(limit) {
		return limit
	}
	return latest
}

// PutTimeout bounds one PutRecords call including the client's retries.
const PutTimeout = 30 * time.Second

// throttleResendPause is how long the writer waits before sending again
// the records DIS still refused for traffic control after the client's own
// resends.
const throttleResendPause = 100 * time.Millisecond

// putOutcome is what put learned of its entries: DIS's result for each of
// entries[:len(results)], and for the entries after them, if any, the
// error that left them without one. A pipelined put's stored records are
// durable only once wait returns nil; nil when there is nothing to wait
// for.
type putOutcome struct {
	results   []disclient.PutRecordsResult
	code      int16
	msg       string
	throttled bool
	wait      func() error
}

// put sends entries in calls within the per-call limits. ends are where
// the ops of entries end, in order; nil makes every entry an op of its own.
// Pipelined, it may answer before the stored records are durable, with
// their wait (putRecords); else it has waited for every call.
//
// When a call ends with a tail of records DIS refused for traffic control
// (or DIS refused the whole call so), the tail is sent again after
// throttleResendPause until DIS takes it: throttling becomes latency. DIS
// refuses a partition's records after the first throttled one of a call
// (the embedded DIS promises it, docs/dis-embedded.md "Quotas"), so
// resending the tail keeps the partition in order.
//
// Past the deadline no op is begun: the entries of ops DIS stored nothing
// of get a throttled result, so their producers retry them whole. But an op
// DIS stored part of is never given up while the gateway runs: its tail is
// sent until DIS takes it, whatever the deadline, and each of those calls
// is bounded by PutTimeout alone. Failing it instead would have its
// producer's retry store the stored part a second time, and an idempotent
// producer's later batches could overtake the retry. Its producer, answered
// REQUEST_TIMED_OUT at its deadline, retries the same sequence numbers,
// which the writer's producer state matches to this op, so the retry is
// answered with this op's base offset once it is written: each record once,
// in the producer's order (docs/record-formats.md, "Raw topics under
// quotas").
func (w *partitionWriter) put(deadline time.Time, entries []disclient.PutRecordsEntry, ends []int, pipelined bool) putOutcome {
	// opEnd returns where the op holding entry i ends when i is inside it
	// (the op's earlier records are stored), or 0 at an op's first record.
	opEnd := func(i int) int {
		for _, e := range ends {
			if i < e {
				if i == 0 || slices.Contains(ends, i) {
					return 0
				}
				return e
			}
		}
		return 0
	}
	results := make([]disclient.PutRecordsResult, 0, len(entries))
	var wait func() error
	// throttled is set once DIS has refused a call for traffic control: a
	// call the deadline then cuts short failed because of the throttling.
	throttled := false
	maxRecs, maxBytes := w.d.PutRecordsMaxRecords, w.d.PutRecordsMaxBytes
	for start := 0; start < len(entries); {
		limit := len(entries)
		ctx, cancel := context.WithDeadline(w.d.Ctx, deadline)
		if e := opEnd(start); e > 0 {
			limit = e
			cancel()
			ctx, cancel = context.WithTimeout(w.d.Ctx, PutTimeout)
		}
		end, bytes := start, 0
		for end < limit && (end == start || (end-start < maxRecs && bytes+len(entries[end].Data) <= maxBytes)) {
			bytes += len(entries[end].Data)
			end++
		}
		resp, callWait, err := w.putRecords(ctx, &disclient.PutRecordsRequest{StreamName: w.key.Stream, Records: entries[start:end]}, pipelined)
		if callWait != nil {
			// A later call's fsync covers the earlier calls' records.
			wait = callWait
		}
		tail := 0
		switch {
		case err != nil && disclient.IsThrottle(disclient.ErrorCode(err)):
			// Refused as a whole: nothing of the call was stored.
			resp = &disclient.PutRecordsResponse{Records: make([]disclient.PutRecordsResult, end-start)}
			for i := range resp.Records {
				resp.Records[i] = disclient.PutRecordsResult{ErrorCode: disclient.ErrorCode(err), ErrorMessage: err.Error()}
			}
		case err != nil:
			cancel()
			w.d.Log.Warn().Err(err).Str("topic", w.key.Topic).Int32("partition", w.key.Partition).Msg("PutRecords failed")
			return putOutcome{results: results, code: w.d.KafkaCode(err), msg: err.Error(), throttled: throttled, wait: wait}
		case len(resp.Records) != end-start:
			cancel()
			return putOutcome{results: results, code: kerr.UnknownServerError.Code, msg: "DIS answered PutRecords with a different number of records", wait: wait}
		default:
			tail = throttledTail(resp.Records)
			results = append(results, resp.Records[:tail]...)
			w.state.meter.wrote(entries[start : start+tail])
			start += tail
		}
		if start == end {
			cancel()
			continue
		}
		throttled = true
		if opEnd(start) > 0 {
			// Inside a partly stored op: wait out the throttling
			// whatever the deadline.
			cancel()
			ctx, cancel = w.d.Ctx, func() {}
		}
		resent := sleepCtx(ctx, throttleResendPause)
		cancel()
		if resent {
			continue
		}
		if w.d.Ctx.Err() != nil {
			return putOutcome{results: results, code: kerr.KafkaStorageError.Code, msg: "disgw is stopping", wait: wait}
		}
		results = append(results, resp.Records[tail:]...)
		for range entries[end:] {
			results = append(results, resp.Records[tail])
		}
		return putOutcome{results: results, throttled: true, wait: wait}
	}
	return putOutcome{results: results, wait: wait}
}

// putRecords makes one PutRecords call. Pipelined, it answers as soon as
// DIS has sequenced the records when the tenant's client can
// (disclient.PipelinedPutter), with the wait for their durability; else it
// waits for that itself, and a failed wait fails the call.
func (w *partitionWriter) putRecords(ctx context.Context, req *disclient.PutRecordsRequest, pipelined bool) (*disclient.PutRecordsResponse, func() error, error) {
	p, ok := w.d.DIS.(disclient.PipelinedPutter)
	if !ok {
		resp, err := w.d.DIS.PutRecords(ctx, req)
		return resp, nil, err
	}
	resp, wait, err := p.PutRecordsPipelined(ctx, req)
	if err != nil || pipelined {
		return resp, wait, err
	}
	if err := wait(); err != nil {
		return nil, nil, err
	}
	return resp, nil, nil
}

// throttledTail returns where the tail of results refused for traffic
// control begins: len(results) when the last result is not throttled or a
// result after the first throttled one has another outcome, which leaves
// the results as they are.
func throttledTail(results []disclient.PutRecordsResult) int {
	tail := len(results)
	for tail > 0 && disclient.IsThrottle(results[tail-1].ErrorCode) {
		tail--
	}
	for _, r := range results[:tail] {
		if disclient.IsThrottle(r.ErrorCode) {
			return len(results)
		}
	}
	return tail
}

// whole is o as a call that either stored every entry or failed: results
// only when DIS answered each entry. The kafka-format writer, which reads
// back what a failed call stored, takes outcomes so.
func (o putOutcome) whole() ([]disclient.PutRecordsResult, int16, string, bool) {
	if o.code != 0 {
		return nil, o.code, o.msg, o.throttled
	}
	return o.results, 0, "", o.throttled
}

// sleepCtx waits for d, or reports false at once when ctx ends first or
// would end before d has passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
