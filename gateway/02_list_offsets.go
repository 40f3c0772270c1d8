package gateway

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// ListOffsets v1–v8.
//
// v1 answers one offset per partition; v2 added the isolation level; v4 the
// current leader epoch; v6 made it flexible; v7 the max-timestamp query
// (-3, KIP-734); v8 earliest-local (-4, KIP-1005), which is the earliest
// offset here since DIS has no tiered storage. Earliest and latest come from
// the partition's sequence_number_range; a timestamp opens an AT_TIMESTAMP
// cursor and reads the first record there.

func init() {
	regKey(2, 1, 8, api[*kmsg.ListOffsetsRequest]{concurrent: handleListOffsets, errors: listOffsetsError})
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
)

func handleListOffsets(ctx context.Context, gw *Gateway, r *request, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, terr := r.s.tenant.catalog.refresh(ctx, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, 0
			switch {
			case errors.Is(terr, errUnknownTopic):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case terr != nil:
				sp.ErrorCode = kafkaCodeForDIS(terr)
			case !t.readable(rp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
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
		gw.firstRecordAt(ctx, t, p, &disclient.GetCursorRequest{CursorType: disclient.CursorAtSequenceNumber,
			StartingSequenceNumber: strconv.FormatInt(hwm-1, 10)}, sp)
		return
	}
	if ts < 0 {
		sp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	gw.firstRecordAt(ctx, t, p, &disclient.GetCursorRequest{CursorType: disclient.CursorAtTimestamp, Timestamp: ts}, sp)
}

// firstRecordAt reads the first record at a cursor and reports its offset
// and timestamp; none leaves -1, as Kafka answers a timestamp past the end.
func (gw *Gateway) firstRecordAt(ctx context.Context, t *topicMeta, p int32, cr *disclient.GetCursorRequest, sp *kmsg.ListOffsetsResponseTopicPartition) {
	cr.StreamName, cr.PartitionID = t.name, disclient.PartitionID(p)
	c, err := t.tenant.dis.GetCursor(ctx, cr)
	if err == nil {
		var recs *disclient.GetRecordsResponse
		recs, err = t.tenant.dis.GetRecords(ctx, c.PartitionCursor, 0)
		if err == nil {
			if len(recs.Records) == 0 {
				return
			}
			rec, ferr := t.format.fromDIS(&recs.Records[0])
			if ferr != nil {
				err = ferr
			} else {
				sp.Offset, sp.Timestamp = rec.Offset, rec.Timestamp
				return
			}
		}
	}
	gw.log.Warn().Err(err).Str("topic", t.name).Int32("partition", p).Msg("list offsets: reading DIS failed")
	sp.ErrorCode = kafkaCodeForDIS(err)
}
