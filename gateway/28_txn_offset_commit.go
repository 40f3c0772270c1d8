package gateway

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// TxnOffsetCommit v0–v5.
//
// v2 added the leader epoch; v3 the group's generation, member id and
// instance id (KIP-447), checked as OffsetCommit checks them, and made it
// flexible; v5 is transaction version 2, where the group joins the
// transaction implicitly. The offsets stay pending in the transaction's
// state until it commits, when the coordinator writes them to the group's
// DIS checkpoints; an abort drops them (docs/design.md §13). The client
// sends it to the group's coordinator, which forwards it to the
// transaction's when that is another gateway.

func init() {
	regKey(28, 0, 5, api[*kmsg.TxnOffsetCommitRequest]{Concurrent: handleTxnOffsetCommit, Errors: txnOffsetCommitError})
}

func txnOffsetCommitError(req *kmsg.TxnOffsetCommitRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleTxnOffsetCommit(ctx context.Context, gw *Gateway, r *request, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	fail := func(code int16) kmsg.Response { return txnOffsetCommitError(req, code) }
	if v, ok := forwardedVersion(&req.UnknownTags); ok && r.Peer() {
		// The group's coordinator checked it and forwarded it here, to
		// the transaction's; the answer goes at the forward's version.
		req.Version = v
		return gw.stepTxn(ctx, r, req.TransactionalID, req, fail), nil
	}
	switch code := gw.txnRefusal(r, req.TransactionalID); {
	case code != 0:
		return fail(code), nil
	case !gw.authorize(r, authz.OpRead, authz.ResourceGroup, req.Group):
		return fail(groupDenied), nil
	case !gw.coordinates(req.Group):
		return fail(kerr.NotCoordinator.Code), nil
	}
	for _, t := range req.Topics {
		st := gw.serveTopic(ctx, r, authz.OpRead, t.Topic, false)
		for _, p := range t.Partitions {
			if code := existingPartitionCode(st, p.Partition); code != 0 {
				return fail(code), nil
			}
		}
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		// A member's commit (KIP-447): the group's coordinator checks it
		// as it checks OffsetCommit.
		var code int16
		gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) {
			code = c.CheckCommit(time.Now(), req.Group, req.MemberID, req.InstanceID, req.Generation)
		})
		if code != 0 {
			return fail(code), nil
		}
	}
	if owner := gw.txnCoordinator(req.TransactionalID); owner.ID != gw.cfg.NodeID {
		return gw.forwardTxnOffsetCommit(ctx, owner, req), nil
	}
	return gw.stepTxn(ctx, r, req.TransactionalID, req, fail), nil
}
