package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
)

// DeleteRecords v0–v2.
//
// v1 changed nothing on the wire; v2 made it flexible. A partition's log
// start offset moves to the offset asked (-1: the high watermark) and is
// kept in its watermark checkpoint before the answer, so every gateway and
// restart agrees (docs/design.md §12); the records stay in DIS until it
// expires them, unreadable through the gateway. The partition's owner
// answers, as Kafka's leader does. raw-format topics, whose offsets are
// DIS's sequence numbers, get POLICY_VIOLATION.

func init() {
	regKey(21, 0, 2, api[*kmsg.DeleteRecordsRequest]{Concurrent: handleDeleteRecords, Deadline: deleteRecordsDeadline, Errors: deleteRecordsError})
}

// deleteRecordsDeadline is the request's timeout_ms, within the gateway's
// request timeout.
func deleteRecordsDeadline(gw *Gateway, req *kmsg.DeleteRecordsRequest) time.Duration {
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > gw.cfg.RequestTimeout {
		timeout = gw.cfg.RequestTimeout
	}
	return timeout
}

// deleteRecordsError answers every partition of req with code.
func deleteRecordsError(req *kmsg.DeleteRecordsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark, sp.ErrorCode = rp.Partition, -1, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func handleDeleteRecords(ctx context.Context, gw *Gateway, r *request, req *kmsg.DeleteRecordsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		topic := gw.serveTopic(ctx, r, authz.OpDelete, rt.Topic, true)
		t := topic.t
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			switch code := gw.partitionCode(topic, rp.Partition); {
			case isInternalTopic(rt.Topic) && !topic.denied:
				sp.ErrorCode, _ = gw.internalTopicRefused(r, rt.Topic, "DeleteRecords")
			case code != 0:
				sp.ErrorCode = code
			case t.Format != FormatKafka:
				r.Log().Info().Str("topic", rt.Topic).Msg("DeleteRecords refused: a raw-format topic's offsets are DIS sequence numbers")
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				gw.deleteRecords(ctx, r, t, rp.Partition, rp.Offset, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteRecords moves the log start of partition p of t to offset.
func (gw *Gateway) deleteRecords(ctx context.Context, r *request, t *topics.Meta, p int32, offset int64, sp *kmsg.DeleteRecordsResponseTopicPartition) {
	ps := gw.partitionFor(r.Tenant().key(t, p))
	low, err := ps.DeleteBefore(ctx, t.Partitions[p].Earliest, offset)
	switch {
	case errors.Is(err, plog.ErrBeyondEnd):
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
	case err != nil:
		gw.log.Warn().Err(err).Str("topic", t.Name).Int32("partition", p).Msg("delete records: writing the log start to DIS failed")
		sp.ErrorCode = kafkaCodeForDIS(err)
	default:
		sp.LowWatermark = low
		r.Log().Info().Str("topic", t.Name).Int32("partition", p).Int64("log_start_offset", low).Msg("records deleted: log start moved")
	}
}
