package gateway

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch v0–v4.
//
// v1 returns the leader epoch; v2 checks the client's current leader epoch
// (KIP-320); v3 the replica id; v4 flexible. DIS partitions never change
// leader, so Metadata reports leader epoch 0 for every partition and epoch 0
// ends at the high watermark: a consumer that validates its position after a
// metadata change (franz-go, Java) finds it still valid. A current epoch
// above 0 is UNKNOWN_LEADER_EPOCH, as Kafka answers a client that is ahead.

func init() { regKey(23, 0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(gw *Gateway, r *request, req *kmsg.OffsetForLeaderEpochRequest) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	go func() {
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			t, terr := r.s.tenant.catalog.get(r.ctx, rt.Topic)
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
				switch {
				case errors.Is(terr, errUnknownTopic):
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case terr != nil:
					sp.ErrorCode = kafkaCodeForDIS(terr)
				case !t.readable(rp.Partition):
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case req.Version >= 2 && rp.CurrentLeaderEpoch > 0:
					sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
				case rp.LeaderEpoch == 0:
					pr := gw.readerFor(t.key(rp.Partition))
					pr.observeHWM(t.partitions[rp.Partition].next)
					sp.LeaderEpoch, sp.EndOffset = 0, pr.knownHWM()
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		r.respond(resp)
	}()
}
