package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/wire"
	"github.com/disgw/disgw/protocol"
)

// Produce v3–v12.
//
// v3 is the first version with record batches v2 (and the transactional id
// field); v5 added log_start_offset to the response; v8 per-record errors
// and an error message; v9 made it flexible; v10 added the KIP-951 leader
// hints, which a partition another gateway owns is answered with next to
// NOT_LEADER_OR_FOLLOWER; v11 only changed the error codes a client may
// see; v12 is transaction version 2, whose transactional batches add their
// partition to the transaction (verifyTxnBatch). Batches are decoded and checked as a Kafka
// broker checks them; on kafka-format topics each is stored as one DIS
// record, as sent (docs/record-formats.md), on raw topics split into DIS
// records. They are queued on the partition writer in request order and
// answered once DIS has accepted them; acks=0 is answered with nothing, as
// Kafka does.

func init() {
	regKey(0, 3, 12, api[*kmsg.ProduceRequest]{Staged: handleProduce, Deadline: produceDeadline, Errors: produceError})
}

// produceDeadline is the request's timeout_ms, within plog.PutTimeout. Waiting
// for write-queue room counts against it.
func produceDeadline(_ *Gateway, req *kmsg.ProduceRequest) time.Duration {
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > plog.PutTimeout {
		timeout = plog.PutTimeout
	}
	return timeout
}

// produceError answers every partition of req with code.
func produceError(req *kmsg.ProduceRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := newProducePartition(rp.Partition)
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// newProducePartition is the answer for partition p before anything is
// known: no offset, no append time, no log start.
func newProducePartition(p int32) kmsg.ProduceResponseTopicPartition {
	sp := kmsg.NewProduceResponseTopicPartition()
	sp.Partition = p
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	return sp
}

// throttleHintMillis is the throttle_time_ms a produce answer carries when
// DIS throttled its records: retriable errors plus a pause, never loss.
const throttleHintMillis = 1000

// producePending is one partition of a produce request waiting for DIS.
type producePending struct {
	topic, part int
	op          *plog.Append
	// owned is false when op is the original of a retried idempotent
	// batch: only the request that queued an op may cancel it.
	owned bool
}

// handleProduce queues every partition's batches on its writer, in request
// order, waiting for write-queue room there (so the connection is not read
// meanwhile: backpressure), and returns the wait for DIS as its
// continuation.
func handleProduce(ctx context.Context, gw *Gateway, r *request, req *kmsg.ProduceRequest) (kmsg.Response, wire.Continuation, error) {
	dups := duplicateProducePartitions(r, req)
	qctx := queueWaitContext(ctx, r, req)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var waits []producePending
	budget := protocol.NewDecompressBudget(gw.cfg.MaxDecompressedBytes)
	var held int64 // decompressed bytes the queued ops keep
	// The partitions to append to, in request order: their transactional
	// batches are verified with the coordinator together, then each is
	// queued.
	type appendJob struct {
		ti, pi int
		t      *topics.Meta
		rp     *kmsg.ProduceRequestTopicPartition
	}
	var jobs []appendJob
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		var t *topics.Meta
		var terr error
		internal := isInternalTopic(rt.Topic)
		denied := !gw.authorize(r, authz.OpWrite, authz.ResourceTopic, rt.Topic)
		if !internal && !denied {
			t, terr = r.Tenant().catalog.Get(ctx, rt.Topic)
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := newProducePartition(rp.Partition)
			switch {
			case dups[partitionRef{topic: rt.Topic, part: rp.Partition}]:
				sp.ErrorCode = kerr.InvalidRequest.Code
				sp.ErrorMessage = kmsg.StringPtr(duplicateMessage)
			case denied:
				sp.ErrorCode = topicDenied
			case internal:
				sp.ErrorCode, sp.ErrorMessage = gw.internalTopicRefused(r, rt.Topic, "Produce")
			case errors.Is(terr, topics.ErrUnknownTopic):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case terr != nil:
				sp.ErrorCode = kafkaCodeForDIS(terr)
			case t.Readable(rp.Partition) && !t.Writable(rp.Partition):
				// Scaled in by DIS: still readable, never written again.
				sp.ErrorCode = kerr.PolicyViolation.Code
				sp.ErrorMessage = kmsg.StringPtr("DIS scaled this partition in: it can be read but no longer written")
			case !t.Writable(rp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !gw.ownsPartition(rt.Topic, rp.Partition):
				gw.produceNotLeader(r, resp, &sp, rt.Topic)
			default:
				jobs = append(jobs, appendJob{ti: ti, pi: len(st.Partitions), t: t, rp: rp})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	var txns txnVerdicts
	for _, j := range jobs {
		if j.t.Format == FormatKafka {
			txns.want(j.t.Name, j.rp)
		}
	}
	gw.verifyTxnBatches(ctx, r, req, &txns)
	for _, j := range jobs {
		sp := &resp.Topics[j.ti].Partitions[j.pi]
		before := budget.Charged()
		op, owned := gw.startAppend(qctx, r, j.t, j.rp, sp, budget, &txns)
		if j.t.Format != FormatKafka {
			// Raw records alias what was decompressed until written;
			// kafka batches keep only the bytes as sent.
			held += budget.Charged() - before
		}
		if op != nil {
			waits = append(waits, producePending{topic: j.ti, part: j.pi, op: op, owned: owned})
		} else if req.Acks == 0 && sp.ErrorCode == kerr.RequestTimedOut.Code {
			gw.metrics.ProduceDropped.Inc()
			r.Log().Warn().Str("topic", j.t.Name).Int32("partition", j.rp.Partition).
				Msg("acks=0 produce not written: the connection closed while it waited for write-queue room")
		}
	}
	gw.holdDecompressed(waits, held)
	if req.Acks == 0 {
		return nil, nil, nil
	}
	if len(waits) == 0 {
		return resp, nil, nil
	}
	return nil, func(ctx context.Context) (kmsg.Response, error) {
		for _, w := range waits {
			sp := &resp.Topics[w.topic].Partitions[w.part]
			if !awaitAppend(ctx, w) {
				sp.ErrorCode = kerr.RequestTimedOut.Code
				continue
			}
			if w.op.ErrCode != 0 {
				if w.op.Throttled {
					// Kafka's way to ask a client to slow down.
					resp.ThrottleMillis = throttleHintMillis
				}
				sp.ErrorCode = w.op.ErrCode
				sp.ErrorMessage = kmsg.StringPtr(w.op.ErrMsg)
				continue
			}
			sp.BaseOffset = w.op.BaseOffset
			if w.op.LogAppendTime {
				// Kafka answers a LogAppendTime topic's produce with the
				// time it stamped the batch with.
				sp.LogAppendTime = w.op.AppendTime
			}
			sp.LogStartOffset = 0
			if t, err := r.Tenant().catalog.Get(ctx, resp.Topics[w.topic].Topic); err == nil && int(sp.Partition) < len(t.Partitions) {
				sp.LogStartOffset = t.Partitions[sp.Partition].Earliest
				if t.Format == FormatKafka {
					sp.LogStartOffset = gw.partitionFor(r.Tenant().key(t, sp.Partition)).KnownEarliest()
				}
			}
		}
		return resp, nil
	}, nil
}

// produceNotLeader answers a partition another gateway owns as a Kafka
// follower does: NOT_LEADER_OR_FOLLOWER, and from v10 the owner as current
// leader with its endpoint, so the producer need not refresh its metadata
// first (KIP-951).
func (gw *Gateway) produceNotLeader(r *request, resp *kmsg.ProduceResponse, sp *kmsg.ProduceResponseTopicPartition, topic string) {
	sp.ErrorCode = kerr.NotLeaderForPartition.Code
	owner := gw.partitionOwner(topic, sp.Partition)
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = owner.ID, 0
	if host, port, add := gw.leaderEndpoint(r, owner, len(resp.Brokers), func(i int) int32 { return resp.Brokers[i].NodeID }); add {
		b := kmsg.NewProduceResponseBroker()
		b.NodeID, b.Host, b.Port = owner.ID, host, port
		resp.Brokers = append(resp.Brokers, b)
	}
}

// holdDecompressed counts a produce request's decompressed bytes against
// the gateway's in-flight memory until every append made from them is done
// (acks=0 included), so that backpressure sees them.
func (gw *Gateway) holdDecompressed(waits []producePending, n int64) {
	if n == 0 {
		return
	}
	gw.inflight.Add(n)
	gw.panics.Go("decompressed bytes release", func() {
		defer gw.inflight.Add(-n)
		for _, w := range waits {
			<-w.op.Done()
		}
	})
}

// queueWaitContext bounds how long a produce waits for write-queue room:
// until its deadline, or for acks=0, which is never answered and so cannot
// time out, until its connection closes. Either way the connection is not
// read while it waits.
func queueWaitContext(ctx context.Context, r *request, req *kmsg.ProduceRequest) context.Context {
	if req.Acks == 0 {
		return r.ConnContext()
	}
	return ctx
}

// awaitAppend waits for w's op until ctx is done and reports whether it
// finished. An op not finished by then is cancelled if this request queued
// it, so the REQUEST_TIMED_OUT its producer gets is not followed by a write;
// one already in a PutRecords call may still be written (plog.Append.Cancel).
func awaitAppend(ctx context.Context, w producePending) bool {
	select {
	case <-w.op.Done():
		return true
	case <-ctx.Done():
	}
	if w.owned && w.op.Cancel() {
		return false
	}
	// The op is in a DIS call, which the writer ends at the same deadline:
	// its outcome (DIS throttled, say) tells the producer more than
	// REQUEST_TIMED_OUT does.
	select {
	case <-w.op.Done():
		return true
	case <-time.After(outcomeGrace):
		return false
	}
}

// outcomeGrace is how long past its deadline a producer whose op is in a
// DIS call waits for the writer to report the call's outcome.
const outcomeGrace = 250 * time.Millisecond

// batchOp checks the batches of one partition of a kafka-format topic as a
// Kafka broker checks what it appends, and makes the op that stores each as
// one DIS record, as sent (docs/record-formats.md); the writer sets the
// base offsets. The DIS record's timestamp is the batch's max timestamp, so
// AT_TIMESTAMP cursors find the first batch that may hold a timestamp.
func (gw *Gateway) batchOp(t *topics.Meta, p int32, batches []protocol.Batch) (*plog.Append, int16, string) {
	op := plog.NewAppend(true)
	policy := gw.topicCfg.TimestampPolicy(t)
	maxBytes := gw.topicCfg.MaxMessageBytes(t)
	op.LogAppendTime = policy.LogAppendTime
	now := time.Now().UnixMilli()
	pid := disclient.PartitionID(p)
	for bi := range batches {
		b := &batches[bi]
		if msg := refusedBatch(b, len(batches)); msg != "" {
			return nil, kerr.InvalidRecord.Code, msg
		}
		if len(b.Raw) > maxBytes {
			return nil, kerr.MessageTooLarge.Code, fmt.Sprintf("record batch of %d bytes exceeds the topic's max.message.bytes (%d)", len(b.Raw), maxBytes)
		}
		// The window the policy allows holds every record's timestamp
		// when it holds the least and the greatest.
		tr := b.Timestamps
		for _, r := range [...]struct {
			i  int
			ts int64
		}{{tr.MinRecord, tr.Min}, {tr.MaxRecord, tr.Max}} {
			if !policy.Allows(r.ts, now) {
				return nil, kerr.InvalidTimestamp.Code, fmt.Sprintf("record %d of a batch has timestamp %d, outside what the topic's message.timestamp.* configs allow", r.i, r.ts)
			}
		}
		// Kafka's max timestamp starts at -1 (no timestamp).
		maxTS := max(tr.Max, -1)
		if !b.LogAppendTime() && b.MaxTimestamp != maxTS {
			// Kafka sets the max timestamp to what the records hold.
			protocol.SetMaxTimestamp(b.Raw, maxTS)
		}
		if b.Transactional() && b.ProducerID < 0 {
			return nil, kerr.InvalidRecord.Code, "a transactional batch must carry its producer id"
		}
		op.Transactional = b.Transactional()
		if b.ProducerID >= 0 {
			op.ProducerID, op.Epoch, op.FirstSeq = b.ProducerID, b.ProducerEpoch, b.BaseSequence
			info, _ := protocol.ParseBatchInfo(b.Raw)
			op.LastSeq = info.LastSequence()
		}
		ts := maxTS
		op.Entries = append(op.Entries, disclient.PutRecordsEntry{PartitionID: pid, Data: b.Raw, Timestamp: &ts})
		op.Bytes += len(b.Raw)
	}
	return op, 0, ""
}

// refusedBatch is why a batch of a produce request's partition (one of n)
// is refused whatever the topic's record format, or "": control batches
// are the broker's to write, a transactional batch is an idempotent
// producer's, and an idempotent producer's sequence numbers are checked
// one batch at a time.
func refusedBatch(b *protocol.Batch, n int) string {
	switch {
	case b.Control():
		return "clients may not write control batches"
	case b.ProducerID >= 0 && n > 1:
		return "an idempotent producer must send one batch per partition"
	}
	return ""
}

// refuseKeyless answers a partition of a compacted topic whose batches
// hold a record with a null key as Kafka does, and reports whether it did:
// INVALID_RECORD, with the first such record's index in its batch as a
// record error (v8+), since compaction keeps records by key.
func refuseKeyless(sp *kmsg.ProduceResponseTopicPartition, topic string, p int32, batches []protocol.Batch) bool {
	for bi := range batches {
		if i := batches[bi].FirstNullKey; i >= 0 {
			msg := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d.", topic, p)
			re := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			re.RelativeOffset = int32(i)
			re.ErrorMessage = kmsg.StringPtr(msg)
			sp.ErrorRecords = append(sp.ErrorRecords, re)
			refuseAppend(sp, kerr.InvalidRecord.Code, msg)
			return true
		}
	}
	return false
}

// refuseAppend answers a partition that startAppend or enqueueAppend
// cannot queue with code and, unless it is "", msg, and returns no op.
func refuseAppend(sp *kmsg.ProduceResponseTopicPartition, code int16, msg string) (*plog.Append, bool) {
	sp.ErrorCode = code
	if msg != "" {
		sp.ErrorMessage = kmsg.StringPtr(msg)
	}
	return nil, false
}

// startAppend decodes one partition's batches, decompressing within the
// request's budget, and queues them, waiting for queue room until ctx is
// done; on raw topics it notes what the dis.raw.* policies dropped once the
// op is queued. It returns the op to wait for and
// whether this request queued it (false for the original of a retried
// idempotent batch), or nil with sp's error set.
func (gw *Gateway) startAppend(ctx context.Context, r *request, t *topics.Meta, rp *kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition, budget *protocol.DecompressBudget, txns *txnVerdicts) (*plog.Append, bool) {
	decode := protocol.DecodeBatches
	if t.Format == FormatKafka {
		// Stored as sent: the records are checked, not kept.
		decode = protocol.CheckBatches
	}
	batches, err := decode(rp.Records, budget)
	if err != nil {
		var ie *protocol.InvalidRecordError
		switch {
		case errors.Is(err, protocol.ErrCorruptMessage):
			return refuseAppend(sp, kerr.CorruptMessage.Code, err.Error())
		case errors.Is(err, protocol.ErrDecompressedTooLarge):
			return refuseAppend(sp, kerr.MessageTooLarge.Code, err.Error())
		case errors.As(err, &ie):
			return refuseAppend(sp, kerr.InvalidRecord.Code, err.Error())
		}
		return refuseAppend(sp, kerr.CorruptMessage.Code, err.Error())
	}
	if len(batches) == 0 {
		return refuseAppend(sp, kerr.InvalidRecord.Code, "the produce request holds no record batch")
	}
	if t.Format == FormatKafka {
		if t.Keep.Compact && refuseKeyless(sp, t.Name, rp.Partition, batches) {
			return nil, false
		}
		op, code, msg := gw.batchOp(t, rp.Partition, batches)
		if code != 0 {
			return refuseAppend(sp, code, msg)
		}
		if op.Transactional {
			if code, msg := txns.verdict(t.Name, rp.Partition, op); code != 0 {
				return refuseAppend(sp, code, msg)
			}
		}
		op.Deadline, _ = ctx.Deadline()
		return gw.enqueueAppend(ctx, r.Tenant(), t, rp.Partition, op, sp)
	}
	op := plog.NewAppend(false)
	op.Deadline, _ = ctx.Deadline()
	pid := disclient.PartitionID(rp.Partition)
	var drops topics.RawDrops
	for bi := range batches {
		b := &batches[bi]
		if msg := refusedBatch(b, len(batches)); msg != "" {
			return refuseAppend(sp, kerr.InvalidRecord.Code, msg)
		}
		if b.Transactional() {
			// A raw record has no place for a transaction's markers.
			return refuseAppend(sp, kerr.InvalidRecord.Code, "a raw topic takes no transactional batches (docs/record-formats.md)")
		}
		if b.ProducerID >= 0 {
			op.ProducerID, op.Epoch, op.FirstSeq = b.ProducerID, b.ProducerEpoch, b.BaseSequence
			last := int64(b.BaseSequence) + int64(b.NumRecords) - 1
			if last > 1<<31-1 {
				last -= 1 << 31 // sequences wrap to 0 after int32 max
			}
			op.LastSeq = int32(last)
		}
		for i := range b.Records {
			rec := &b.Records[i]
			e, err := topics.ToRawEntry(rec, pid, gw.cfg.MaxRecordBytes, t.Raw, &drops)
			if err != nil {
				var re *topics.RecordError
				code := kerr.InvalidRecord.Code
				if errors.As(err, &re) && re.TooLarge {
					code = kerr.MessageTooLarge.Code
				}
				re2 := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				re2.RelativeOffset = int32(i)
				re2.ErrorMessage = kmsg.StringPtr(err.Error())
				sp.ErrorRecords = append(sp.ErrorRecords, re2)
				return refuseAppend(sp, code, err.Error())
			}
			op.Entries = append(op.Entries, e)
			op.Bytes += len(e.Data)
		}
		op.Records = append(op.Records, b.Records...)
	}
	if len(op.Entries) == 0 {
		return refuseAppend(sp, kerr.InvalidRecord.Code, "the record batches hold no records")
	}
	queued, owned := gw.enqueueAppend(ctx, r.Tenant(), t, rp.Partition, op, sp)
	if queued == op {
		gw.noteRawDrops(r, t, rp.Partition, op.ProducerID, drops)
	}
	return queued, owned
}

// enqueueAppend queues op on the partition's writer; see startAppend.
func (gw *Gateway) enqueueAppend(ctx context.Context, tn *tenant, t *topics.Meta, p int32, op *plog.Append, sp *kmsg.ProduceResponseTopicPartition) (*plog.Append, bool) {
	dup, code := gw.partitionFor(tn.key(t, p)).Enqueue(ctx, op)
	switch {
	case code == kerr.RequestTimedOut.Code:
		return refuseAppend(sp, code, "the partition's write queue stayed full until the request timed out")
	case code != 0:
		return refuseAppend(sp, code, "")
	case dup != nil:
		return dup, false
	}
	return op, true
}
