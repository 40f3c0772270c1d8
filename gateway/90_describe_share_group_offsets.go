package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// DescribeShareGroupOffsets v0–v1.
//
// Each share-partition's start offset (KIP-932), as its owner's partition
// log holds it, and from v1 its lag (KIP-1226): -1 for both where the group
// never read the partition. Null topics ask for every share-partition of
// the group with kept state, leaving out topics the client may not
// describe and topics since deleted. GROUP DESCRIBE and TOPIC DESCRIBE, as
// Kafka; GROUP_ID_NOT_FOUND for a classic or consumer group.

func init() {
	regKey(90, 0, 1, api[*kmsg.DescribeShareGroupOffsetsRequest]{Concurrent: handleDescribeShareGroupOffsets, Errors: describeShareGroupOffsetsError})
}

// describeShareGroupOffsetsError answers every group of req with code.
func describeShareGroupOffsetsError(req *kmsg.DescribeShareGroupOffsetsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range req.Groups {
		resp.Groups = append(resp.Groups, describeShareGroupError(g.GroupID, code))
	}
	return resp
}

// describeShareGroupError answers group with code.
func describeShareGroupError(group string, code int16) kmsg.DescribeShareGroupOffsetsResponseGroup {
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	out.GroupID, out.ErrorCode = group, code
	return out
}

func handleDescribeShareGroupOffsets(ctx context.Context, gw *Gateway, r *request, req *kmsg.DescribeShareGroupOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	peer := r.Peer() && hasTag(&req.UnknownTags, peerShareTag)
	for _, g := range req.Groups {
		if peer {
			resp.Groups = append(resp.Groups, gw.describeOwnedShareOffsets(ctx, r, g))
			continue
		}
		resp.Groups = append(resp.Groups, gw.describeShareOffsets(ctx, r, g))
	}
	return resp, nil
}

// describeShareOffsets answers one group at its coordinator.
func (gw *Gateway) describeShareOffsets(ctx context.Context, r *request, g kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	tn := r.Tenant()
	var code int16
	switch {
	case !gw.authorize(r, authz.OpDescribe, authz.ResourceGroup, g.GroupID):
		code = groupDenied
	case !gw.coordinates(g.GroupID):
		code = kerr.NotCoordinator.Code
	default:
		code = gw.shareGroupCode(ctx, tn, g.GroupID, false)
	}
	if code != 0 {
		return describeShareGroupError(g.GroupID, code)
	}
	all := g.Topics == nil
	if all {
		names, held, _, err := gw.shareKeysByTopic(ctx, tn, g.GroupID)
		if err != nil {
			return describeShareGroupError(g.GroupID, kafkaCodeForDIS(err))
		}
		for _, name := range names {
			if gw.permits(r, authz.OpDescribe, authz.ResourceTopic, name) {
				g.Topics = append(g.Topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: held[name]})
			}
		}
	}
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	out.GroupID = g.GroupID
	var parts []shareAdminPart
	var at [][2]int // each part's topic and partition in out
	for _, t := range g.Topics {
		st := gw.serveTopic(ctx, r, authz.OpDescribe, t.Topic, true)
		if all && errors.Is(st.err, topics.ErrUnknownTopic) {
			continue
		}
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = t.Topic
		if st.t != nil {
			rt.TopicID = st.t.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset = p, -1
			if rp.ErrorCode = existingPartitionCode(st, p); rp.ErrorCode == 0 {
				parts = append(parts, shareAdminPart{t: st.t, p: p})
				at = append(at, [2]int{len(out.Topics), len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	for i, res := range gw.shareAtOwners(ctx, tn, g.GroupID, shareDescribe, parts) {
		setShareDescribed(&out.Topics[at[i][0]].Partitions[at[i][1]], res)
	}
	return out
}

// describeOwnedShareOffsets answers a coordinator's forwarded request for
// the partitions this gateway owns.
func (gw *Gateway) describeOwnedShareOffsets(ctx context.Context, r *request, g kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	out.GroupID = g.GroupID
	for _, t := range g.Topics {
		st := gw.serveTopic(ctx, r, authz.OpDescribe, t.Topic, true)
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset = p, -1
			if rp.ErrorCode = gw.partitionCode(st, p); rp.ErrorCode == 0 {
				setShareDescribed(&rp, gw.shareLocal(ctx, r.Tenant(), g.GroupID, shareDescribe, shareAdminPart{t: st.t, p: p}))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// setShareDescribed answers rp with res.
func setShareDescribed(rp *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition, res shareResult) {
	rp.StartOffset, rp.Lag, rp.ErrorCode = res.start, res.lag, res.code
}
