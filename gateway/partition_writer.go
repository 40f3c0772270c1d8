package gateway

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// partitionKey names one partition of one stream as one tenant sees it. The
// stream id is part of it so that a topic deleted and created again never
// meets the writers, producer state and cached records of its predecessor;
// the tenant, so that records are written with the client's own credentials
// and cached records never reach a client whose keys may not read them.
type partitionKey struct {
	tenant    *tenant
	topic     string
	stream    string
	partition int32
}

// appendOp is one produce batch on its way to DIS.
type appendOp struct {
	entries []disclient.PutRecordsEntry
	records []protocol.Record // the same records, for the raw read cache
	bytes   int
	// kafka ops hold one entry per record batch, stored as sent
	// (docs/record-formats.md); logAppendTime has the writer stamp them
	// with the time it writes them.
	kafka         bool
	logAppendTime bool
	// appendTime is the time a LogAppendTime batch was stamped with, for
	// the produce answer's log_append_time.
	appendTime int64

	producerID        int64 // -1 for non-idempotent producers
	epoch             int16
	firstSeq, lastSeq int32

	// state moves from opQueued to opTaken when the writer puts the op
	// into a PutRecords call, or to opCancelled when its producer was
	// answered first; whichever comes first wins.
	state atomic.Int32

	// deadline is when its producer is answered REQUEST_TIMED_OUT if DIS
	// has not taken the op by then; zero for acks=0, which waits for no
	// answer.
	deadline time.Time

	done       chan struct{}
	baseOffset int64
	scattered  bool // DIS did not store the records at consecutive offsets
	errCode    int16
	throttled  bool // DIS refused for traffic control: the client should back off
	errMsg     string
}

const (
	opQueued int32 = iota
	opTaken
	opCancelled
)

// cancel withdraws a queued op whose producer has been answered
// REQUEST_TIMED_OUT, so that it is never written after that answer. It
// returns false when the op is already in a PutRecords call: a call cannot be
// taken back, so such an op may still be written, the same ambiguity a Kafka
// producer has for a request that timed out during replication.
func (op *appendOp) cancel() bool {
	return op.state.CompareAndSwap(opQueued, opCancelled)
}

// entryOverhead is what a queued entry costs besides its data; it keeps
// empty records from queueing for free.
const entryOverhead = 64

// queueCost is what op counts against the write-queue bounds.
func (op *appendOp) queueCost() int64 {
	return int64(op.bytes) + int64(len(op.entries))*entryOverhead
}

func (op *appendOp) fail(code int16, msg string) {
	op.errCode, op.errMsg = code, msg
}

// finish releases op's records, which its producer's retries never need,
// and wakes everyone waiting for it; producer state keeps only the outcome.
func (op *appendOp) finish() {
	op.entries, op.records = nil, nil
	close(op.done)
}

// producerState is what an idempotent producer last wrote to one partition:
// enough to answer a retried batch with its original offsets.
type producerState struct {
	epoch   int16
	lastSeq int32
	recent  []*appendOp // the last idempotentWindow batches, oldest first
	// lastSeen is when its last batch was accepted, for expiry;
	// lastTimestamp that batch's max timestamp, for DescribeProducers.
	lastSeen      time.Time
	lastTimestamp int64
}

// producerSnapshot is one producer's state as DescribeProducers reports it.
type producerSnapshot struct {
	id            int64
	epoch         int16
	lastSeq       int32
	lastTimestamp int64
}

// activeProducers lists the idempotent producers the writer tracks and has
// not expired, by producer id: what the partition's leader knows of them.
func (w *partitionWriter) activeProducers(now time.Time) []producerSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]producerSnapshot, 0, len(w.producers))
	for id, st := range w.producers {
		if now.Sub(st.lastSeen) <= w.gw.cfg.ProducerIDExpiration {
			out = append(out, producerSnapshot{id: id, epoch: st.epoch, lastSeq: st.lastSeq, lastTimestamp: st.lastTimestamp})
		}
	}
	slices.SortFunc(out, func(a, b producerSnapshot) int { return cmp.Compare(a.id, b.id) })
	return out
}

// maxTimestamp is the largest timestamp of op's records, as its producer
// state keeps it; a LogAppendTime batch is stamped when it is written, so
// it gets the time it was accepted, which that stamp follows closely.
func (op *appendOp) maxTimestamp(now time.Time) int64 {
	if op.logAppendTime {
		return now.UnixMilli()
	}
	ts := int64(-1)
	for i := range op.entries {
		if e := &op.entries[i]; e.Timestamp != nil {
			ts = max(ts, *e.Timestamp)
		}
	}
	return ts
}

// idempotentWindow is how many batches per producer and partition are
// remembered for de-duplication; Kafka allows at most 5 in flight.
const idempotentWindow = 5

// producerPruneInterval is how often a writer looks for expired producers
// when new ones arrive (Kafka's producer.id.expiration.check.interval.ms
// is 10 minutes; a cheaper scan can run more often).
const producerPruneInterval = time.Minute

// partitionWriter serialises writes to one DIS partition: at most one
// PutRecords in flight, and everything that arrives meanwhile goes into the
// next call (docs/design.md §4). That keeps Kafka's per-partition order and turns
// DIS round trips into batching rather than queueing. On kafka-format
// streams it also gives each batch its offsets, from the partition state it
// shares with the reader (writeBatches).
type partitionWriter struct {
	gw    *Gateway
	key   partitionKey
	state *partitionState

	mu         sync.Mutex
	queue      []*appendOp
	running    bool
	producers  map[int64]*producerState
	lastPruned time.Time

	// pipeline holds the calls whose durability the completer awaits,
	// oldest first, and completing is set while it runs
	// (partition_writer_pipeline.go).
	pipeline   []*pipelinedCall
	completing bool

	// queued is the cost of the ops queued and in flight, guarded by
	// gw.queues.mu.
	queued int64
	// evicted is set when idle eviction dropped the writer (tenant.evictIdle).
	evicted bool
}

// enqueue checks an idempotent batch's sequence numbers and queues op,
// first waiting until the write queues have room for it (see writeQueues);
// ctx bounds that wait. It returns the original op when op retries a batch
// already accepted (the caller answers with that op's outcome), or an error
// code for a batch that must be refused. An op without entries is refused:
// there is nothing to write and no offset to answer with.
func (w *partitionWriter) enqueue(ctx context.Context, op *appendOp) (dup *appendOp, code int16) {
	if len(op.entries) == 0 {
		return nil, kerr.InvalidRecord.Code
	}
	if op.kafka && op.producerID >= 0 {
		// The producer's state comes from the partition's tail: recover
		// it before judging the batch's sequence.
		if err := w.state.ensureProducers(ctx); err != nil {
			w.gw.log.Warn().Err(err).Str("topic", w.key.topic).Int32("partition", w.key.partition).
				Msg("recovering the partition's producers from DIS failed")
			return nil, kerr.KafkaStorageError.Code
		}
	}
	cost := op.queueCost()
	if !w.gw.queues.reserve(ctx, w, cost) {
		return nil, kerr.RequestTimedOut.Code
	}
	w.mu.Lock()
	if w.evicted {
		w.mu.Unlock()
		w.gw.queues.release(w, cost)
		return w.gw.writerFor(w.key).enqueue(ctx, op)
	}
	defer w.mu.Unlock()
	if op.producerID >= 0 {
		if dup, code := w.checkSequence(op); dup != nil || code != 0 {
			w.gw.queues.release(w, cost)
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

// checkSequence applies Kafka's idempotent-producer rules. A producer the
// writer has no state for (new, expired, evicted, or state lost in a gateway
// restart) may start at any sequence.
func (w *partitionWriter) checkSequence(op *appendOp) (*appendOp, int16) {
	now := time.Now()
	st := w.producers[op.producerID]
	if st != nil && now.Sub(st.lastSeen) > w.gw.cfg.ProducerIDExpiration {
		delete(w.producers, op.producerID)
		st = nil
	}
	switch {
	case st == nil:
		w.makeRoomForProducer(now)
		st = &producerState{epoch: op.epoch}
		w.producers[op.producerID] = st
	case op.epoch < st.epoch:
		return nil, kerr.InvalidProducerEpoch.Code
	case op.epoch > st.epoch:
		if op.firstSeq != 0 {
			return nil, kerr.OutOfOrderSequenceNumber.Code
		}
		*st = producerState{epoch: op.epoch}
	default:
		for _, r := range st.recent {
			if r.firstSeq == op.firstSeq && r.lastSeq == op.lastSeq {
				return r, 0
			}
		}
		if op.firstSeq != nextSequence(st.lastSeq) {
			if len(st.recent) > 0 && op.firstSeq < st.recent[0].firstSeq {
				return nil, kerr.DuplicateSequenceNumber.Code
			}
			return nil, kerr.OutOfOrderSequenceNumber.Code
		}
	}
	st.lastSeq = op.lastSeq
	st.lastSeen, st.lastTimestamp = now, op.maxTimestamp(now)
	st.recent = append(st.recent, op)
	if len(st.recent) > idempotentWindow {
		st.recent[0] = nil
		st.recent = st.recent[1:]
	}
	return nil, 0
}

// makeRoomForProducer runs before a new producer's state is added. It drops
// producers idle longer than ProducerIDExpiration, as Kafka's
// producer.id.expiration.ms does, and when the partition still holds
// MaxProducersPerPartition of them evicts the one idle longest, so a client
// minting producer ids cannot grow the map without limit. An evicted
// producer's next batch is accepted at any sequence, as after a restart.
func (w *partitionWriter) makeRoomForProducer(now time.Time) {
	limit := w.gw.cfg.MaxProducersPerPartition
	if len(w.producers) < limit && now.Sub(w.lastPruned) < producerPruneInterval {
		return
	}
	w.lastPruned = now
	for id, st := range w.producers {
		if now.Sub(st.lastSeen) > w.gw.cfg.ProducerIDExpiration {
			delete(w.producers, id)
		}
	}
	for len(w.producers) >= limit {
		oldest, first := int64(0), true
		for id, st := range w.producers {
			if first || st.lastSeen.Before(w.producers[oldest].lastSeen) {
				oldest, first = id, false
			}
		}
		delete(w.producers, oldest)
	}
}

// nextSequence follows s, wrapping at int32 max as Kafka does.
func nextSequence(s int32) int32 {
	if s == 1<<31-1 {
		return 0
	}
	return s + 1
}

// producerFailed handles a failed write of an idempotent producer's op, as
// Kafka does (docs/design.md §4): the producer's sequence goes back to
// before the op, so its retry is in sequence, and its later batches still
// queued fail with OUT_OF_ORDER_SEQUENCE_NUMBER without being written, so
// the log never holds its batches out of order.
func (w *partitionWriter) producerFailed(op *appendOp) {
	w.mu.Lock()
	if st := w.producers[op.producerID]; st != nil && st.epoch == op.epoch {
		// An earlier failed batch of the producer may already have taken
		// the sequence back past this one.
		for i, r := range st.recent {
			if r == op {
				clear(st.recent[i:])
				st.recent = st.recent[:i]
				st.lastSeq = op.firstSeq - 1
				if op.firstSeq == 0 {
					st.lastSeq = -1
				}
				break
			}
		}
	}
	var later []*appendOp
	kept := w.queue[:0]
	for _, q := range w.queue {
		if q.producerID == op.producerID && q.state.CompareAndSwap(opQueued, opTaken) {
			later = append(later, q)
			continue
		}
		kept = append(kept, q)
	}
	clear(w.queue[len(kept):])
	w.queue = kept
	w.mu.Unlock()
	var cost int64
	for _, q := range later {
		cost += q.queueCost()
		q.fail(kerr.OutOfOrderSequenceNumber.Code, "an earlier batch of this producer failed, so this one was not written")
		q.finish()
	}
	if cost > 0 {
		w.gw.queues.release(w, cost)
	}
}

// rebuildProducers takes the idempotent producers' state from the
// partition's tail, read when the writer starts: a retry of a batch written
// before a restart, or by another gateway, is answered with its original
// offsets rather than written twice. Producers the writer already tracks
// keep their state, which follows their queued batches too.
func (w *partitionWriter) rebuildProducers(tail []cachedBatch) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	rebuilt := make(map[int64]bool)
	for i := range tail {
		info, ok := protocol.ParseBatchInfo(tail[i].data)
		if !ok || info.ProducerID < 0 {
			continue
		}
		st := w.producers[info.ProducerID]
		switch {
		case st != nil && !rebuilt[info.ProducerID]:
			continue
		case st == nil && len(w.producers) >= w.gw.cfg.MaxProducersPerPartition:
			continue
		case st == nil || info.ProducerEpoch > st.epoch:
			st = &producerState{epoch: info.ProducerEpoch}
			w.producers[info.ProducerID] = st
			rebuilt[info.ProducerID] = true
		case info.ProducerEpoch < st.epoch:
			continue
		}
		op := &appendOp{producerID: info.ProducerID, epoch: info.ProducerEpoch, firstSeq: info.BaseSequence,
			lastSeq: info.LastSequence(), baseOffset: info.BaseOffset, kafka: true, done: make(chan struct{})}
		op.state.Store(opTaken)
		close(op.done)
		st.lastSeq, st.lastSeen, st.lastTimestamp = op.lastSeq, now, info.MaxTimestamp
		st.recent = append(st.recent, op)
		if len(st.recent) > idempotentWindow {
			st.recent[0] = nil
			st.recent = st.recent[1:]
		}
	}
}

// run drains the queue, one PutRecords call at a time.
func (w *partitionWriter) run() {
	var ops []*appendOp
	defer w.gw.recoverPanic("partition writer", func() { w.abandon(ops) })
	for {
		var cancelled []*appendOp
		ops, cancelled = w.take()
		if ops == nil && cancelled == nil {
			return
		}
		w.skip(cancelled)
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
func (w *partitionWriter) abandon(ops []*appendOp) {
	w.mu.Lock()
	queued := w.queue
	w.queue, w.running = nil, false
	for _, op := range ops {
		if op.producerID >= 0 {
			delete(w.producers, op.producerID)
		}
	}
	for _, op := range queued {
		if op.producerID >= 0 {
			delete(w.producers, op.producerID)
		}
	}
	w.mu.Unlock()
	var cost int64
	fail := func(ops []*appendOp, code int16, msg string) {
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
	w.gw.queues.release(w, cost)
}

// take removes the ops for the next call and the cancelled ops before and
// among them, or marks the writer idle.
func (w *partitionWriter) take() (ops, cancelled []*appendOp) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.running = false
		return nil, nil
	}
	maxRecs, maxBytes := w.gw.cfg.PutRecordsMaxRecords, w.gw.cfg.PutRecordsMaxBytes
	i, recs, bytes := 0, 0, 0
	var producers, stopped map[int64]bool
	for ; i < len(w.queue); i++ {
		op := w.queue[i]
		if len(ops) > 0 && (recs+len(op.entries) > maxRecs || bytes+op.bytes > maxBytes || op.kafka != ops[0].kafka) {
			break
		}
		// DIS may fail one record of a call and store a later one, so
		// unless it keeps order a producer's second batch waits for the
		// next call: its order in the log is then its order of sending.
		if op.producerID >= 0 && producers[op.producerID] && !w.gw.cfg.PutRecordsKeepsOrder {
			break
		}
		// A producer's batches after one of its batches that was
		// cancelled wait: skip fails them, as they must not overtake
		// the cancelled batch's retry.
		if op.producerID >= 0 && stopped[op.producerID] {
			break
		}
		if !op.state.CompareAndSwap(opQueued, opTaken) {
			cancelled = append(cancelled, op)
			if op.producerID >= 0 {
				if stopped == nil {
					stopped = make(map[int64]bool)
				}
				stopped[op.producerID] = true
			}
			continue
		}
		recs += len(op.entries)
		bytes += op.bytes
		ops = append(ops, op)
		if op.producerID >= 0 {
			if producers == nil {
				producers = make(map[int64]bool)
			}
			producers[op.producerID] = true
		}
	}
	// Clear what moved so the backing array does not keep finished ops.
	n := copy(w.queue, w.queue[i:])
	clear(w.queue[n:])
	w.queue = w.queue[:n]
	return ops, cancelled
}

// skip completes ops whose producers were answered before they were
// written: they are not written. An idempotent producer's sequence goes
// back to before such an op and its later queued batches fail, as after a
// failed write (producerFailed), so that its retry is in sequence and
// nothing of the producer is written before it.
func (w *partitionWriter) skip(ops []*appendOp) {
	var cost int64
	for _, op := range ops {
		cost += op.queueCost()
		op.fail(kerr.RequestTimedOut.Code, "the produce request timed out before its records were written")
		if op.producerID >= 0 {
			w.producerFailed(op)
		}
		op.finish()
	}
	if cost > 0 {
		w.gw.metrics.produceCancelled.Add(float64(len(ops)))
		w.gw.queues.release(w, cost)
	}
}

// write sends ops in one PutRecords call, or several when one op alone is
// over the per-call limits, and completes every op.
func (w *partitionWriter) write(ops []*appendOp) {
	if ops[0].kafka {
		w.writeBatches(ops)
		return
	}
	entries := ops[0].entries
	if len(ops) > 1 {
		entries = nil
		for _, op := range ops {
			entries = append(entries, op.entries...)
		}
	}
	ends := make([]int, len(ops))
	for i, op := range ops {
		ends[i] = len(op.entries)
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
		n := len(op.entries)
		switch {
		case i+n <= len(out.results):
			op.complete(out.results[i : i+n])
		default:
			// A call failed with an error other than throttling before
			// DIS answered all of op's records. Should DIS have stored
			// some, the retry stores them again: DIS records carry no
			// producer sequence to recognise them by.
			op.fail(out.code, out.msg)
			op.throttled = out.throttled
		}
		i += n
		if op.errCode != 0 {
			if op.producerID >= 0 {
				w.producerFailed(op)
			}
			continue
		}
		if op.scattered {
			w.gw.log.Warn().Str("topic", w.key.topic).Int32("partition", w.key.partition).Int64("base_offset", op.baseOffset).
				Msg("DIS stored a batch at non-consecutive offsets after resending throttled records; the offsets reported to the producer are approximate")
			w.state.reader.invalidate()
		} else {
			for j := range op.records {
				op.records[j].Offset = op.baseOffset + int64(j)
			}
			written = append(written, op.records...)
		}
		w.gw.metrics.produced(w.key, n, entriesBytes(op.entries))
	}
	if len(written) > 0 {
		w.state.reader.appended(written)
	}
	w.gw.queues.release(w, cost)
	for _, op := range ops {
		op.finish()
	}
}

// complete takes op's per-record results: the base offset when every record
// was written, or the first record's error.
func (op *appendOp) complete(results []disclient.PutRecordsResult) {
	if len(results) == 0 {
		op.fail(kerr.UnknownServerError.Code, "DIS answered PutRecords with no record results")
		return
	}
	for _, r := range results {
		if r.ErrorCode != "" {
			op.fail(kafkaCodeForDIS(&disclient.Error{Code: r.ErrorCode, Message: r.ErrorMessage}), r.ErrorCode+": "+r.ErrorMessage)
			op.throttled = isThrottle(r.ErrorCode)
			return
		}
	}
	base, err := strconv.ParseInt(results[0].SequenceNumber, 10, 64)
	if err != nil {
		op.fail(kerr.UnknownServerError.Code, "DIS returned sequence number "+strconv.Quote(results[0].SequenceNumber))
		return
	}
	op.baseOffset = base
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
// their producers, within putTimeout. Past it every producer has been
// answered REQUEST_TIMED_OUT, so a DIS that hangs holds up the partition's
// later writes no longer than the requests that were waiting for it.
func callDeadline(ops []*appendOp) time.Time {
	limit := time.Now().Add(putTimeout)
	var latest time.Time
	for _, op := range ops {
		if op.deadline.IsZero() {
			return limit
		}
		if op.deadline.After(latest) {
			latest = op.deadline
		}
	}
	if latest.After(limit) {
		return limit
	}
	return latest
}

// putTimeout bounds one PutRecords call including the client's retries.
const putTimeout = 30 * time.Second

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
// is bounded by putTimeout alone. Failing it instead would have its
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
	maxRecs, maxBytes := w.gw.cfg.PutRecordsMaxRecords, w.gw.cfg.PutRecordsMaxBytes
	for start := 0; start < len(entries); {
		limit := len(entries)
		ctx, cancel := context.WithDeadline(w.gw.ctx, deadline)
		if e := opEnd(start); e > 0 {
			limit = e
			cancel()
			ctx, cancel = context.WithTimeout(w.gw.ctx, putTimeout)
		}
		end, bytes := start, 0
		for end < limit && (end == start || (end-start < maxRecs && bytes+len(entries[end].Data) <= maxBytes)) {
			bytes += len(entries[end].Data)
			end++
		}
		resp, callWait, err := w.putRecords(ctx, &disclient.PutRecordsRequest{StreamName: w.key.streamName(), Records: entries[start:end]}, pipelined)
		if callWait != nil {
			// A later call's fsync covers the earlier calls' records.
			wait = callWait
		}
		tail := 0
		switch {
		case err != nil && isThrottle(disclient.ErrorCode(err)):
			// Refused as a whole: nothing of the call was stored.
			resp = &disclient.PutRecordsResponse{Records: make([]disclient.PutRecordsResult, end-start)}
			for i := range resp.Records {
				resp.Records[i] = disclient.PutRecordsResult{ErrorCode: disclient.ErrorCode(err), ErrorMessage: err.Error()}
			}
		case err != nil:
			cancel()
			w.gw.log.Warn().Err(err).Str("topic", w.key.topic).Int32("partition", w.key.partition).Msg("PutRecords failed")
			return putOutcome{results: results, code: kafkaCodeForDIS(err), msg: err.Error(), throttled: isThrottle(disclient.ErrorCode(err)), wait: wait}
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
		if opEnd(start) > 0 {
			// Inside a partly stored op: wait out the throttling
			// whatever the deadline.
			cancel()
			ctx, cancel = w.gw.ctx, func() {}
		}
		resent := sleepCtx(ctx, throttleResendPause)
		cancel()
		if resent {
			continue
		}
		if w.gw.ctx.Err() != nil {
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
	p, ok := w.key.tenant.dis.(disclient.PipelinedPutter)
	if !ok {
		resp, err := w.key.tenant.dis.PutRecords(ctx, req)
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
	for tail > 0 && isThrottle(results[tail-1].ErrorCode) {
		tail--
	}
	for _, r := range results[:tail] {
		if isThrottle(r.ErrorCode) {
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

// isThrottle reports whether a DIS code is traffic control.
func isThrottle(code string) bool {
	return code == disclient.CodeTrafficControl || code == disclient.CodeTooManyRequests
}

// writeQueues bounds the records waiting in partition writers, per
// partition (Config.MaxPartitionQueueBytes) and over all partitions
// (Config.MaxQueueBytes), counting an op from when it is queued until its
// PutRecords call has finished. A produce that finds no room waits in its
// connection's ordered stage, so the connection is not read meanwhile: the
// backpressure a Kafka broker applies by not reading a socket, and the only
// thing that holds back an acks=0 producer, which is never answered. An op
// is admitted alone into an empty queue whatever its size, so one large
// batch cannot wait forever.
type writeQueues struct {
	perPartition, total int64

	mu     sync.Mutex
	queued int64
	space  chan struct{} // closed and replaced whenever room is released
	gauge  prometheus.Gauge
	waits  prometheus.Counter
}

func newWriteQueues(cfg *Config, m *metrics) *writeQueues {
	return &writeQueues{
		perPartition: cfg.MaxPartitionQueueBytes,
		total:        cfg.MaxQueueBytes,
		space:        make(chan struct{}),
		gauge:        m.produceQueued,
		waits:        m.produceQueueWaits,
	}
}

// reserve takes cost bytes of room in w's queue and the overall one,
// waiting for it until ctx is done; it reports whether it got the room.
func (q *writeQueues) reserve(ctx context.Context, w *partitionWriter, cost int64) bool {
	waited := false
	for {
		q.mu.Lock()
		fits := (w.queued == 0 || w.queued+cost <= q.perPartition) && (q.queued == 0 || q.queued+cost <= q.total)
		if fits {
			w.queued += cost
			q.queued += cost
			q.gauge.Set(float64(q.queued))
			q.mu.Unlock()
			return true
		}
		space := q.space
		q.mu.Unlock()
		if !waited {
			waited = true
			q.waits.Inc()
		}
		select {
		case <-space:
		case <-ctx.Done():
			return false
		}
	}
}

// release gives back room reserve took and wakes the produces waiting.
func (q *writeQueues) release(w *partitionWriter, cost int64) {
	q.mu.Lock()
	w.queued -= cost
	q.queued -= cost
	q.gauge.Set(float64(q.queued))
	close(q.space)
	q.space = make(chan struct{})
	q.mu.Unlock()
}
