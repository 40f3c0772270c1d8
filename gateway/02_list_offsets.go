package gateway

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/protocol"
)

// ListOffsets v1–v11.
//
// v1 answers one offset per partition; v2 added the isolation level; v4 the
// current leader epoch; v6 made it flexible; v7 the max-timestamp query
// (-3, KIP-734); v8 earliest-local (-4, KIP-1005), which is the earliest
// offset here since DIS has no tiered storage; v9 latest-tiered (-5,
// KIP-1005) and v11 earliest-pending-upload (-6, KIP-1023), which have no
// offset (-1) without tiered storage, as Kafka answers for a topic that
// has none; v10 a timeout for remote reads (KIP-1075), which DIS reads do
// not need. Earliest and latest come from
// the partition's sequence_number_range; a timestamp opens an AT_TIMESTAMP
// cursor and reads the first record there. For kafka-format topics the
// answers are offsets inside the stored batches (docs/record-formats.md):
// earliest is the base offset of the first batch, latest the next offset,
// and a timestamp finds the first batch whose max timestamp reaches it
// (the DIS record's timestamp) and in it the first record that does.

func init() {
	regKey(2, 1, 11, api[*kmsg.ListOffsetsRequest]{concurrent: handleListOffsets, errors: listOffsetsError})
}

// listOffsetsError answers every partition of req with code.
func listOffsetsError(req *kmsg.ListOffsetsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// ListOffsets special timestamps.
const (
	listLatest      = -1
	listEarliest    = -2
	listMaxTime     = -3
	listEarliestLoc = -4
	listLatestTier  = -5
	listPendingTier = -6
)

func handleListOffsets(ctx context.Context, gw *Gateway, r *request, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		var t *topicMeta
		var terr error
		internal := rt.Topic == offsetsTopic
		denied := !gw.authorize(r, authz.OpDescribe, authz.ResourceTopic, rt.Topic)
		if !internal && !denied {
			t, terr = r.tenant.catalog.refresh(ctx, rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, 0
			switch {
			case denied:
				sp.ErrorCode = topicDenied
			case internal:
				listOffsetsPartition(&sp, rp.Timestamp)
			case errors.Is(terr, errUnknownTopic):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case terr != nil:
				sp.ErrorCode = kafkaCodeForDIS(terr)
			case !t.readable(rp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !gw.ownsPartition(rt.Topic, rp.Partition):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				gw.listOffset(ctx, t, rp.Partition, rp.Timestamp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (gw *Gateway) listOffset(ctx context.Context, t *topicMeta, p int32, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) {
	if ts == listLatestTier || ts == listPendingTier {
		sp.LeaderEpoch = -1
		return
	}
	if t.format == FormatKafka {
		gw.listBatchOffset(ctx, t, p, ts, sp)
		return
	}
	pm := t.partitions[p]
	pr := gw.readerFor(t.key(p))
	pr.observeHWM(pm.next)
	hwm := pr.knownHWM()
	switch ts {
	case listEarliest, listEarliestLoc:
		sp.Offset = pm.earliest
		return
	case listLatest:
		sp.Offset = hwm
		return
	case listMaxTime:
		// The newest record stands in for the one with the largest
		// timestamp: exact for producers whose timestamps only grow.
		if hwm <= pm.earliest {
			return
		}
		c, err := t.tenant.dis.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: t.stream, PartitionID: disclient.PartitionID(p),
			CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: strconv.FormatInt(hwm-1, 10)})
		if err != nil {
			gw.listOffsetFailed(t, p, sp, err)
			return
		}
		gw.firstRecordAt(ctx, t, p, c, sp)
		return
	}
	if ts < 0 {
		sp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	c, _, err := timestampCursor(ctx, t, p, ts)
	if err != nil {
		gw.listOffsetFailed(t, p, sp, err)
		return
	}
	gw.firstRecordAt(ctx, t, p, c, sp)
}

// timestampCursor opens an AT_TIMESTAMP cursor on partition p. A timestamp
// DIS calls expired (records from it on are past retention) opens the
// partition at its earliest record instead, and ts becomes math.MinInt64:
// Kafka answers a timestamp before the log start with the first retained
// record.
func timestampCursor(ctx context.Context, t *topicMeta, p int32, ts int64) (*disclient.GetCursorResponse, int64, error) {
	cr := &disclient.GetCursorRequest{StreamName: t.stream, PartitionID: disclient.PartitionID(p),
		CursorType: disclient.CursorAtTimestamp, Timestamp: ts}
	c, err := t.tenant.dis.GetCursor(ctx, cr)
	if isTimestampExpired(err) {
		cr.CursorType, cr.Timestamp, ts = disclient.CursorTrimHorizon, 0, math.MinInt64
		c, err = t.tenant.dis.GetCursor(ctx, cr)
	}
	return c, ts, err
}

// listOffsetFailed answers sp with the Kafka code for a failed DIS call.
func (gw *Gateway) listOffsetFailed(t *topicMeta, p int32, sp *kmsg.ListOffsetsResponseTopicPartition, err error) {
	gw.log.Warn().Err(err).Str("topic", t.name).Int32("partition", p).Msg("list offsets: reading DIS failed")
	sp.ErrorCode = kafkaCodeForDIS(err)
}

// firstRecordAt reads the first record at cursor c and reports its offset
// and timestamp; none leaves -1, as Kafka answers a timestamp past the end.
func (gw *Gateway) firstRecordAt(ctx context.Context, t *topicMeta, p int32, c *disclient.GetCursorResponse, sp *kmsg.ListOffsetsResponseTopicPartition) {
	recs, err := t.tenant.dis.GetRecords(ctx, c.PartitionCursor, gw.disReadBytes())
	if err == nil {
		if len(recs.Records) == 0 {
			return
		}
		rec, ferr := fromRawDIS(&recs.Records[0])
		if ferr == nil {
			sp.Offset, sp.Timestamp = rec.Offset, rec.Timestamp
			return
		}
		err = ferr
	}
	gw.listOffsetFailed(t, p, sp, err)
}

// listBatchOffset answers ListOffsets for partition p of a kafka-format
// topic, exactly.
func (gw *Gateway) listBatchOffset(ctx context.Context, t *topicMeta, p int32, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) {
	ps := gw.partitionFor(t.key(p))
	fail := func(err error) { gw.listOffsetFailed(t, p, sp, err) }
	var err error
	switch ts {
	case listEarliest, listEarliestLoc:
		if sp.Offset, err = ps.earliestOffset(ctx, t.partitions[p].earliest); err != nil {
			fail(err)
		}
		return
	case listLatest:
		if sp.Offset, err = ps.nextOffset(ctx); err != nil {
			fail(err)
		}
		return
	case listMaxTime:
		if err := gw.maxTimestampOffset(ctx, ps, t.partitions[p].earliest, sp); err != nil {
			fail(err)
		}
		return
	}
	if ts < 0 {
		sp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	if err := ps.ensure(ctx); err != nil {
		fail(err)
		return
	}
	c, ts, err := timestampCursor(ctx, t, p, ts)
	if err != nil {
		fail(err)
		return
	}
	recs, err := ps.readWhole(ctx, c.PartitionCursor)
	if err != nil {
		fail(err)
		return
	}
	if len(recs) == 0 {
		return
	}
	if err := gw.firstRecordFrom(ps, recs, ts, sp); err != nil {
		fail(err)
	}
}

// firstRecordFrom sets sp to the first record of recs whose timestamp is
// at least ts: inside a batch, the records are decoded to find it.
func (gw *Gateway) firstRecordFrom(ps *partitionState, recs []disclient.Record, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	ps.mu.Lock()
	next, nextSeq := ps.next, ps.nextSeq
	ps.mu.Unlock()
	batches, err := labelRecords(recs, noContext, func(seq int64) int64 { return next - (nextSeq - seq) })
	if err != nil {
		return err
	}
	for i := range batches {
		if batches[i].maxTS < ts {
			continue
		}
		decoded, err := protocol.DecodeBatches(batches[i].data, protocol.NewDecompressBudget(gw.cfg.MaxDecompressedBytes))
		if err != nil {
			return err
		}
		for _, b := range decoded {
			for _, r := range b.Records {
				if r.Timestamp >= ts {
					sp.Offset, sp.Timestamp = r.Offset, r.Timestamp
					return nil
				}
			}
		}
	}
	return nil
}

// maxTimestampOffset answers ListOffsets -3: the offset and timestamp of
// the first record with the partition's largest timestamp. The partition
// state learns it from writes; the first ask scans the partition's batch
// headers.
func (gw *Gateway) maxTimestampOffset(ctx context.Context, ps *partitionState, earliestSeq int64, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	if err := ps.ensure(ctx); err != nil {
		return err
	}
	ps.mu.Lock()
	known, seq, nextSeq, next := ps.maxTSKnown, ps.maxTSSeq, ps.nextSeq, ps.next
	ps.mu.Unlock()
	if !known || seq < earliestSeq {
		maxTS, maxSeq := int64(-1), int64(-1)
		for from := earliestSeq; from < nextSeq; {
			recs, err := ps.readRange(ctx, from, nextSeq)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				break
			}
			batches, err := labelRecords(recs, noContext, func(s int64) int64 { return next - (nextSeq - s) })
			if err != nil {
				return err
			}
			if len(batches) == 0 {
				break
			}
			for i := range batches {
				if batches[i].maxTS > maxTS || maxSeq < 0 {
					maxTS, maxSeq = batches[i].maxTS, batches[i].startSeq()
				}
			}
			from = batches[len(batches)-1].seq + 1
		}
		ps.mu.Lock()
		if ps.nextSeq == nextSeq {
			ps.maxTS, ps.maxTSSeq, ps.maxTSKnown = maxTS, maxSeq, true
		}
		ps.mu.Unlock()
		seq = maxSeq
	}
	if seq < 0 {
		return nil
	}
	ps.mu.Lock()
	maxTS := ps.maxTS
	ps.mu.Unlock()
	recs, err := ps.probe(ctx, seq)
	if err != nil || len(recs) == 0 {
		return err
	}
	return gw.firstRecordFrom(ps, recs, maxTS, sp)
}
