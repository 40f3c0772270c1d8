package gateway

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareAcknowledge v0–v2 (KIP-932).
//
// Acknowledgements sent on their own, within the member's share session:
// accept, release, reject, and from v2 renew (KIP-1222). Each partition's
// answer comes once its effect is durable. Epoch -1 acknowledges and then
// closes the session, releasing what the member still holds; epoch 0
// cannot open one (only a ShareFetch does).

func init() {
	regKey(79, 0, 2, api[*kmsg.ShareAcknowledgeRequest]{Concurrent: handleShareAcknowledge, Errors: shareAcknowledgeError})
}

func shareAcknowledgeError(req *kmsg.ShareAcknowledgeRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.ErrorCode = code
	return resp
}

func handleShareAcknowledge(ctx context.Context, gw *Gateway, r *request, req *kmsg.ShareAcknowledgeRequest) (kmsg.Response, error) {
	epoch := req.ShareSessionEpoch
	if epoch == shareEpochOpen {
		return shareAcknowledgeError(req, kerr.InvalidShareSessionEpoch.Code), nil // only a ShareFetch opens a session
	}
	c, code := gw.beginShare(ctx, r, req.GroupID, req.MemberID, epoch, "ShareAcknowledge")
	if code != 0 {
		return shareAcknowledgeError(req, code), nil
	}
	defer gw.endShare(c)
	tn := r.Tenant()
	group, member, s, lock := c.group, c.member, c.session, c.lock
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.AcquisitionLockTimeoutMillis = int32(lock.Milliseconds())

	var named []sharePart
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			named = append(named, sharePart{t.TopicID, p.Partition})
		}
	}
	targets := gw.shareTargets(ctx, r, named)
	var wg sync.WaitGroup
	for ti, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.ShareAcknowledgeResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
		for pi, p := range t.Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			*sp = kmsg.NewShareAcknowledgeResponseTopicPartition()
			sp.Partition = p.Partition
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
			tg := targets[sharePart{t.TopicID, p.Partition}]
			if tg.code == kerr.NotLeaderForPartition.Code {
				gw.shareAckNotLeader(r, resp, sp, tg)
				continue
			}
			batches := make([]shareAckBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				batches[i] = shareAckBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
			}
			wg.Add(1)
			gw.panics.Go("share acknowledgements", func() {
				defer wg.Done()
				sp.ErrorCode = gw.shareAcknowledge(ctx, tn, tg, group, member, batches, req.IsRenewAck, lock)
			})
		}
	}
	wg.Wait()
	if epoch == shareEpochClose {
		gw.releaseShareSession(ctx, r, group, member, s)
	}
	return resp, nil
}

// shareAckNotLeader answers a partition another gateway leads, naming it
// with its endpoint (KIP-951).
func (gw *Gateway) shareAckNotLeader(r *request, resp *kmsg.ShareAcknowledgeResponse, sp *kmsg.ShareAcknowledgeResponseTopicPartition, tg *shareTarget) {
	sp.ErrorCode = tg.code
	owner := gw.partitionOwner(tg.topic.Name, tg.ref.partition)
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = owner.ID, 0
	eps := resp.NodeEndpoints
	if host, port, add := gw.leaderEndpoint(r, owner, len(eps), func(i int) int32 { return eps[i].NodeID }); add {
		e := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port = owner.ID, host, port
		resp.NodeEndpoints = append(resp.NodeEndpoints, e)
	}
}
