package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/groupcoord"
)

// OffsetFetch v0–v9.
//
// v1 reads offsets committed by the coordinator (v0 read ZooKeeper's; both
// are served from DIS checkpoints here); v2 a null topic list asks for every
// committed partition, and adds a top-level error; v5 leader epochs; v6
// flexible; v7 require_stable: a partition whose offsets are pending in an
// open transaction answers UNSTABLE_OFFSET_COMMIT; v8 several
// groups per request; v9 the KIP-848 member id and epoch, checked against a
// consumer-protocol group's members (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH
// for the group). A partition without a commit answers offset -1 with no
// error, as Kafka does.

func init() {
	regKey(9, 0, 9, api[*kmsg.OffsetFetchRequest]{Concurrent: handleOffsetFetch, Errors: offsetFetchError})
}

// offsetFetchError answers req with code for every group (v8+) or at the
// top level and in every partition asked for.
func offsetFetchError(req *kmsg.OffsetFetchRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, g := range req.Groups {
			resp.Groups = append(resp.Groups, offsetFetchGroupError(offsetFetchGroup{group: g.Group, topics: g.Topics}, code))
		}
		return resp
	}
	resp.ErrorCode = code
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// offsetFetchGroup is one group's request in the v8+ shape.
type offsetFetchGroup struct {
	group  string
	topics []kmsg.OffsetFetchRequestGroupTopic // nil: every committed partition
	// memberID and memberEpoch are v9's KIP-848 member fields; nil and -1
	// before it.
	memberID    *string
	memberEpoch int32
}

func handleOffsetFetch(ctx context.Context, gw *Gateway, r *request, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	if r.Peer() && hasTag(&req.UnknownTags, peerPendingTag) {
		// A group's coordinator asks which partitions a transaction
		// coordinated here holds offsets pending for.
		return gw.answerPendingOffsets(ctx, tn, req), nil
	}
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	var groups []offsetFetchGroup
	if req.Version >= 8 {
		for _, g := range req.Groups {
			groups = append(groups, offsetFetchGroup{g.Group, g.Topics, g.MemberID, g.MemberEpoch})
		}
	} else {
		g := offsetFetchGroup{group: req.Group, memberEpoch: -1}
		if req.Topics != nil || req.Version < 2 {
			g.topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = t.Topic, t.Partitions
				g.topics = append(g.topics, gt)
			}
		}
		groups = append(groups, g)
	}
	describes, reads := topics.NewCallBudget(gw.cfg.MaxDescribesPerRequest), topics.NewCallBudget(gw.cfg.MaxCheckpointReadsPerRequest)
	for _, g := range groups {
		if !gw.authorize(r, authz.OpDescribe, authz.ResourceGroup, g.group) {
			resp.Groups = append(resp.Groups, offsetFetchGroupError(g, groupDenied))
			continue
		}
		var member int16
		if g.memberID != nil || g.memberEpoch >= 0 {
			// Only a v9 fetch naming a member has anything to check;
			// the rest skip the coordinator's lock.
			gw.groups.With(tn, func(c *groupcoord.Coordinator) { member = c.CheckOffsetFetch(g.group, g.memberID, g.memberEpoch) })
		}
		if member != 0 {
			resp.Groups = append(resp.Groups, offsetFetchGroupError(g, member))
			continue
		}
		out := gw.fetchGroupOffsets(ctx, tn, g, describes, reads)
		if req.RequireStable {
			gw.pendingTxnOffsets(ctx, tn, &out)
		}
		gw.hideUndescribableOffsets(r, &out, g.topics == nil)
		resp.Groups = append(resp.Groups, out)
	}
	if req.Version < 8 {
		g := resp.Groups[0]
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				if req.Version < 2 && p.ErrorCode == 0 && g.ErrorCode != 0 {
					rp.ErrorCode = g.ErrorCode
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		resp.Groups = nil
	}
	return resp, nil
}

// offsetFetchGroupError answers every partition g names with code; before
// v2 only the partitions carry an error.
func offsetFetchGroupError(g offsetFetchGroup, code int16) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group, out.ErrorCode = g.group, code
	for _, t := range g.topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// fetchGroupOffsets answers one group within the request's DIS call budgets.
func (gw *Gateway) fetchGroupOffsets(ctx context.Context, tn *tenant, g offsetFetchGroup, describes, reads *topics.CallBudget) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = g.group
	if g.group == "" {
		out.ErrorCode = kerr.InvalidGroupID.Code
		return out
	}
	if !gw.coordinates(g.group) {
		return offsetFetchGroupError(g, kerr.NotCoordinator.Code)
	}
	all := g.topics == nil
	topics := g.topics
	if all {
		names, err := gw.groups.CommittedTopics(ctx, tn, g.group)
		if err != nil {
			out.ErrorCode = kafkaCodeForDIS(err)
			return out
		}
		found := tn.catalog.GetMany(ctx, names, describes)
		for _, name := range names {
			t := found[name].Meta
			if t == nil {
				continue
			}
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic = name
			for p := range t.Partitions {
				gt.Partitions = append(gt.Partitions, int32(p))
			}
			topics = append(topics, gt)
		}
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, kmsg.StringPtr("")
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	gw.groups.ReadCommittedOffsets(ctx, tn, g.group, out.Topics, describes, reads)
	if all {
		// Only partitions with a commit belong in an "all" answer.
		kept := out.Topics[:0]
		for _, t := range out.Topics {
			ps := t.Partitions[:0]
			for _, p := range t.Partitions {
				if p.Offset >= 0 || p.ErrorCode != 0 {
					ps = append(ps, p)
				}
			}
			if len(ps) > 0 {
				t.Partitions = ps
				kept = append(kept, t)
			}
		}
		out.Topics = kept
	}
	return out
}
