package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// AlterShareGroupOffsets v0.
//
// Moves share-partitions' start offsets (KIP-932, kafka-share-groups.sh
// --reset-offsets) at each partition's owner, making the state of a
// partition the group never read. Only while the share group has no
// members: NON_EMPTY_GROUP otherwise. GROUP READ and TOPIC READ, as Kafka;
// GROUP_ID_NOT_FOUND for a classic or consumer group.

func init() {
	regKey(91, 0, 0, api[*kmsg.AlterShareGroupOffsetsRequest]{Concurrent: handleAlterShareGroupOffsets, Errors: alterShareGroupOffsetsError})
}

// alterShareGroupOffsetsError answers req with code at the top level and in
// every partition.
func alterShareGroupOffsetsError(req *kmsg.AlterShareGroupOffsetsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	resp.ErrorCode = code
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleAlterShareGroupOffsets(ctx context.Context, gw *Gateway, r *request, req *kmsg.AlterShareGroupOffsetsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	peer := r.Peer() && hasTag(&req.UnknownTags, peerShareTag)
	if !peer {
		var code int16
		switch {
		case !gw.authorize(r, authz.OpRead, authz.ResourceGroup, req.GroupID):
			code = groupDenied
		case !gw.coordinates(req.GroupID):
			code = kerr.NotCoordinator.Code
		default:
			code = gw.shareGroupCode(ctx, tn, req.GroupID, true)
		}
		if code != 0 {
			return alterShareGroupOffsetsError(req, code), nil
		}
	}
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	var parts []shareAdminPart
	var at [][2]int // each part's topic and partition in resp
	for _, t := range req.Topics {
		st := gw.serveTopic(ctx, r, authz.OpRead, t.Topic, true)
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if st.t != nil {
			rt.TopicID = st.t.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case peer:
				// A coordinator's forward: the partitions this gateway owns.
				if rp.ErrorCode = gw.partitionCode(st, p.Partition); rp.ErrorCode == 0 {
					rp.ErrorCode = gw.shareLocal(ctx, tn, req.GroupID, shareAlter, shareAdminPart{t: st.t, p: p.Partition, offset: p.StartOffset}).code
				}
			case p.StartOffset < 0:
				rp.ErrorCode = kerr.InvalidRequest.Code
			default:
				if rp.ErrorCode = existingPartitionCode(st, p.Partition); rp.ErrorCode == 0 {
					parts = append(parts, shareAdminPart{t: st.t, p: p.Partition, offset: p.StartOffset})
					at = append(at, [2]int{len(resp.Topics), len(rt.Partitions)})
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for i, res := range gw.shareAtOwners(ctx, tn, req.GroupID, shareAlter, parts) {
		resp.Topics[at[i][0]].Partitions[at[i][1]].ErrorCode = res.code
	}
	return resp, nil
}
