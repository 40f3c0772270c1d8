package gateway

import (
	"context"
	"strconv"
	"sync"
	"time"

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
	records []protocol.Record // the same records, for the read cache
	bytes   int

	producerID        int64 // -1 for non-idempotent producers
	epoch             int16
	firstSeq, lastSeq int32

	done       chan struct{}
	baseOffset int64
	scattered  bool // DIS did not store the records at consecutive offsets
	errCode    int16
	throttled  bool // DIS refused for traffic control: the client should back off
	errMsg     string
}

func (op *appendOp) fail(code int16, msg string) {
	op.errCode, op.errMsg = code, msg
}

// producerState is what an idempotent producer last wrote to one partition:
// enough to answer a retried batch with its original offsets.
type producerState struct {
	epoch   int16
	lastSeq int32
	recent  []*appendOp // the last idempotentWindow batches, oldest first
}

// idempotentWindow is how many batches per producer and partition are
// remembered for de-duplication; Kafka allows at most 5 in flight.
const idempotentWindow = 5

// partitionWriter serialises writes to one DIS partition: at most one
// PutRecords in flight, and everything that arrives meanwhile goes into the
// next call (docs/design.md §4). That keeps Kafka's per-partition order and turns
// DIS round trips into batching rather than queueing.
type partitionWriter struct {
	gw  *Gateway
	key partitionKey

	mu        sync.Mutex
	queue     []*appendOp
	running   bool
	producers map[int64]*producerState
}

func (gw *Gateway) writerFor(k partitionKey) *partitionWriter {
	gw.partMu.Lock()
	defer gw.partMu.Unlock()
	w := gw.writers[k]
	if w == nil {
		w = &partitionWriter{
			gw:        gw,
			key:       k,
			producers: make(map[int64]*producerState),
		}
		gw.writers[k] = w
	}
	return w
}

// enqueue checks an idempotent batch's sequence numbers and queues op. It
// returns the original op when op retries a batch already accepted (the
// caller answers with that op's outcome), or an error code for a batch that
// must be refused.
func (w *partitionWriter) enqueue(op *appendOp) (dup *appendOp, code int16) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if op.producerID >= 0 {
		if dup, code := w.checkSequence(op); dup != nil || code != 0 {
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
// writer has no state for (new, or state lost in a gateway restart) may start
// at any sequence.
func (w *partitionWriter) checkSequence(op *appendOp) (*appendOp, int16) {
	st := w.producers[op.producerID]
	switch {
	case st == nil:
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
	st.recent = append(st.recent, op)
	if len(st.recent) > idempotentWindow {
		st.recent = st.recent[1:]
	}
	return nil, 0
}

// nextSequence follows s, wrapping at int32 max as Kafka does.
func nextSequence(s int32) int32 {
	if s == 1<<31-1 {
		return 0
	}
	return s + 1
}

// forgetProducer drops a producer's state after a failed write, so that its
// retry is accepted whatever the sequence bookkeeping of the failed call was.
func (w *partitionWriter) forgetProducer(id int64) {
	w.mu.Lock()
	delete(w.producers, id)
	w.mu.Unlock()
}

// run drains the queue, one PutRecords call at a time.
func (w *partitionWriter) run() {
	for {
		ops := w.take()
		if ops == nil {
			return
		}
		w.write(ops)
	}
}

// take removes the ops for the next call, or marks the writer idle.
func (w *partitionWriter) take() []*appendOp {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.running = false
		return nil
	}
	maxRecs, maxBytes := w.gw.cfg.PutRecordsMaxRecords, w.gw.cfg.PutRecordsMaxBytes
	n, recs, bytes := 0, 0, 0
	for n < len(w.queue) {
		op := w.queue[n]
		if n > 0 && (recs+len(op.entries) > maxRecs || bytes+op.bytes > maxBytes) {
			break
		}
		recs += len(op.entries)
		bytes += op.bytes
		n++
	}
	ops := make([]*appendOp, n)
	copy(ops, w.queue[:n])
	w.queue = append(w.queue[:0], w.queue[n:]...)
	return ops
}

// write sends ops in one PutRecords call, or several when one op alone is
// over the per-call limits, and completes every op.
func (w *partitionWriter) write(ops []*appendOp) {
	var entries []disclient.PutRecordsEntry
	if len(ops) == 1 {
		entries = ops[0].entries
	} else {
		for _, op := range ops {
			entries = append(entries, op.entries...)
		}
	}
	results, code, msg, throttled := w.put(entries)
	i := 0
	var written []protocol.Record
	for _, op := range ops {
		n := len(op.entries)
		switch {
		case code != 0:
			op.fail(code, msg)
			op.throttled = throttled
		default:
			op.complete(results[i : i+n])
		}
		i += n
		if op.errCode != 0 {
			if op.producerID >= 0 {
				w.forgetProducer(op.producerID)
			}
			continue
		}
		if op.scattered {
			w.gw.log.Warn().Str("topic", w.key.topic).Int32("partition", w.key.partition).Int64("base_offset", op.baseOffset).
				Msg("DIS stored a batch at non-consecutive offsets after resending throttled records; the offsets reported to the producer are approximate")
			w.gw.readerFor(w.key).invalidate()
		} else {
			for j := range op.records {
				op.records[j].Offset = op.baseOffset + int64(j)
			}
			written = append(written, op.records...)
		}
		w.gw.metrics.producedRecs.Add(float64(n))
	}
	if len(written) > 0 {
		w.gw.readerFor(w.key).appended(written)
	}
	for _, op := range ops {
		close(op.done)
	}
}

// complete takes op's per-record results: the base offset when every record
// was written, or the first record's error.
func (op *appendOp) complete(results []disclient.PutRecordsResult) {
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

// putTimeout bounds one PutRecords call including the client's retries.
const putTimeout = 30 * time.Second

// put sends entries in calls within the per-call limits and returns one
// result per entry, or a Kafka error code for the whole set.
func (w *partitionWriter) put(entries []disclient.PutRecordsEntry) ([]disclient.PutRecordsResult, int16, string, bool) {
	ctx, cancel := context.WithTimeout(w.gw.ctx, putTimeout)
	defer cancel()
	results := make([]disclient.PutRecordsResult, 0, len(entries))
	maxRecs, maxBytes := w.gw.cfg.PutRecordsMaxRecords, w.gw.cfg.PutRecordsMaxBytes
	for start := 0; start < len(entries); {
		end, bytes := start, 0
		for end < len(entries) && (end == start || (end-start < maxRecs && bytes+len(entries[end].Data) <= maxBytes)) {
			bytes += len(entries[end].Data)
			end++
		}
		began := time.Now()
		resp, err := w.key.tenant.dis.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: w.key.topic, Records: entries[start:end]})
		w.gw.metrics.putRecordsCall.Observe(time.Since(began).Seconds())
		if err != nil {
			w.gw.metrics.disErrors.WithLabelValues(disclient.ErrorCode(err)).Inc()
			w.gw.log.Warn().Err(err).Str("topic", w.key.topic).Int32("partition", w.key.partition).Msg("PutRecords failed")
			return nil, kafkaCodeForDIS(err), err.Error(), isThrottle(disclient.ErrorCode(err))
		}
		if len(resp.Records) != end-start {
			return nil, kerr.UnknownServerError.Code, "DIS answered PutRecords with a different number of records", false
		}
		results = append(results, resp.Records...)
		start = end
	}
	return results, 0, "", false
}

// isThrottle reports whether a DIS code is traffic control.
func isThrottle(code string) bool {
	return code == disclient.CodeTrafficControl || code == disclient.CodeTooManyRequests
}
