package gateway

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
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
// With isolation level 1 (read_committed) latest is the last stable offset,
// and a timestamp's answer at or past it is none, as Kafka answers.

func init() {
	regKey(2, 1, 11, api[*kmsg.ListOffsetsRequest]{Concurrent: handleListOffsets, Errors: listOffsetsError})
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
		topic := gw.serveTopic(ctx, r, authz.OpDescribe, rt.Topic, true)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, 0
			switch code := gw.partitionCode(topic, rp.Partition); {
			case topic.internal && !topic.denied:
				listOffsetsPartition(&sp, rp.Timestamp)
			case code != 0:
				sp.ErrorCode = code
			default:
				gw.listOffset(ctx, r.Tenant(), topic.t, rp.Partition, rp.Timestamp, req.IsolationLevel == 1, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (gw *Gateway) listOffset(ctx context.Context, tn *tenant, t *topics.Meta, p int32, ts int64, committed bool, sp *kmsg.ListOffsetsResponseTopicPartition) {
	if ts == listLatestTier || ts == listPendingTier {
		sp.LeaderEpoch = -1
		return
	}
	if t.Format == FormatKafka {
		gw.listBatchOffset(ctx, tn, t, p, ts, committed, sp)
		return
	}
	pm := t.Partitions[p]
	pr := gw.partitionFor(tn.key(t, p))
	pr.ObserveHWM(pm.Next)
	hwm := pr.KnownHWM()
	switch ts {
	case listEarliest, listEarliestLoc:
		sp.Offset = pm.Earliest
		return
	case listLatest:
		sp.Offset = hwm
		return
	case listMaxTime:
		// The newest record stands in for the one with the largest
		// timestamp: exact for producers whose timestamps only grow.
		if hwm <= pm.Earliest {
			return
		}
		c, err := tn.dis.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: t.Stream, PartitionID: disclient.PartitionID(p),
			CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: strconv.FormatInt(hwm-1, 10)})
		if err != nil {
			gw.listOffsetFailed(t, p, sp, err)
			return
		}
		gw.firstRecordAt(ctx, tn, t, p, c, sp)
		return
	}
	if ts < 0 {
		sp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	c, _, err := pr.TimestampCursor(ctx, ts)
	if err != nil {
		gw.listOffsetFailed(t, p, sp, err)
		return
	}
	gw.firstRecordAt(ctx, tn, t, p, c, sp)
}

// listOffsetFailed answers sp with the Kafka code for a failed DIS call.
func (gw *Gateway) listOffsetFailed(t *topics.Meta, p int32, sp *kmsg.ListOffsetsResponseTopicPartition, err error) {
	gw.log.Warn().Err(err).Str("topic", t.Name).Int32("partition", p).Msg("list offsets: reading DIS failed")
	sp.ErrorCode = kafkaCodeForDIS(err)
}

// firstRecordAt reads the first record at cursor c and reports its offset
// and timestamp; none leaves -1, as Kafka answers a timestamp past the end.
func (gw *Gateway) firstRecordAt(ctx context.Context, tn *tenant, t *topics.Meta, p int32, c *disclient.GetCursorResponse, sp *kmsg.ListOffsetsResponseTopicPartition) {
	recs, err := tn.dis.GetRecords(ctx, c.PartitionCursor, gw.disReadBytes())
	if err == nil {
		if len(recs.Records) == 0 {
			return
		}
		rec, ferr := plog.FromRawDIS(&recs.Records[0])
		if ferr == nil {
			sp.Offset, sp.Timestamp = rec.Offset, rec.Timestamp
			return
		}
		err = ferr
	}
	gw.listOffsetFailed(t, p, sp, err)
}

// listBatchOffset answers ListOffsets for partition p of a kafka-format
// topic, exactly; committed (read_committed) caps the answers at the last
// stable offset.
func (gw *Gateway) listBatchOffset(ctx context.Context, tn *tenant, t *topics.Meta, p int32, ts int64, committed bool, sp *kmsg.ListOffsetsResponseTopicPartition) {
	ps := gw.partitionFor(tn.key(t, p))
	fail := func(err error) { gw.listOffsetFailed(t, p, sp, err) }
	var err error
	switch ts {
	case listEarliest, listEarliestLoc:
		if sp.Offset, err = ps.Earliest(ctx, t.Partitions[p].Earliest); err != nil {
			fail(err)
		}
		return
	case listLatest:
		if committed {
			sp.Offset, err = ps.LastStableOffset(ctx)
		} else {
			sp.Offset, err = ps.Next(ctx)
		}
		if err != nil {
			fail(err)
		}
		return
	case listMaxTime:
		if sp.Offset, sp.Timestamp, err = ps.MaxTimestamp(ctx, t.Partitions[p].Earliest); err != nil {
			fail(err)
		}
		return
	}
	if ts < 0 {
		sp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	if sp.Offset, sp.Timestamp, err = ps.ByTimestamp(ctx, ts); err != nil {
		fail(err)
		return
	}
	if committed && sp.Offset >= 0 {
		lso, err := ps.LastStableOffset(ctx)
		if err != nil {
			fail(err)
			return
		}
		if sp.Offset >= lso {
			sp.Offset, sp.Timestamp = -1, -1
		}
	}
}
