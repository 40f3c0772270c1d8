package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// OffsetForLeaderEpoch v0–v4.
//
// v1 returns the leader epoch; v2 checks the client's current leader epoch
// (KIP-320); v3 the replica id; v4 flexible. DIS partitions never change
// leader, so Metadata reports leader epoch 0 for every partition and epoch 0
// ends at the high watermark: a consumer that validates its position after a
// metadata change (franz-go, Java) finds it still valid. A current epoch
// above 0 is UNKNOWN_LEADER_EPOCH, as Kafka answers a client that is ahead.

func init() {
	regKey(23, 0, 4, api[*kmsg.OffsetForLeaderEpochRequest]{Concurrent: handleOffsetForLeaderEpoch, Errors: offsetForLeaderEpochError})
}

// offsetForLeaderEpochError answers every partition of req with code.
func offsetForLeaderEpochError(req *kmsg.OffsetForLeaderEpochRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset, sp.ErrorCode = rp.Partition, -1, -1, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func handleOffsetForLeaderEpoch(ctx context.Context, gw *Gateway, r *request, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		topic := gw.serveTopic(ctx, r, authz.OpDescribe, rt.Topic, false)
		t := topic.t
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			switch code := gw.partitionCode(topic, rp.Partition); {
			case code != 0:
				sp.ErrorCode = code
			case req.Version >= 2 && rp.CurrentLeaderEpoch > 0:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.LeaderEpoch == 0 && t.Format == FormatKafka:
				next, err := gw.partitionFor(r.Tenant().key(t, rp.Partition)).Next(ctx)
				if err != nil {
					sp.ErrorCode = kafkaCodeForDIS(err)
					break
				}
				sp.LeaderEpoch, sp.EndOffset = 0, next
			case rp.LeaderEpoch == 0:
				pr := gw.partitionFor(r.Tenant().key(t, rp.Partition))
				pr.ObserveHWM(t.Partitions[rp.Partition].Next)
				sp.LeaderEpoch, sp.EndOffset = 0, pr.KnownHWM()
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
