package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// DeleteShareGroupOffsets v0.
//
// Forgets the share group's state on every partition of the topics named
// (kafka-share-groups.sh --delete-offsets) at each partition's owner, so
// the group starts again there by share.auto.offset.reset. Only while the
// share group has no members: NON_EMPTY_GROUP otherwise. GROUP DELETE and
// TOPIC READ, as Kafka; GROUP_ID_NOT_FOUND for a classic or consumer group;
// a topic the group holds no state of is answered without error.

func init() {
	regKey(92, 0, 0, api[*kmsg.DeleteShareGroupOffsetsRequest]{Concurrent: handleDeleteShareGroupOffsets, Errors: deleteShareGroupOffsetsError})
}

// deleteShareGroupOffsetsError answers req with code at the top level and
// in every topic.
func deleteShareGroupOffsetsError(req *kmsg.DeleteShareGroupOffsetsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	resp.ErrorCode = code
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleDeleteShareGroupOffsets(ctx context.Context, gw *Gateway, r *request, req *kmsg.DeleteShareGroupOffsetsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	if r.Peer() && hasTag(&req.UnknownTags, peerShareTag) {
		return gw.deleteOwnedShareOffsets(ctx, r, req), nil
	}
	var code int16
	switch {
	case !gw.authorize(r, authz.OpDelete, authz.ResourceGroup, req.GroupID):
		code = groupDenied
	case !gw.coordinates(req.GroupID):
		code = kerr.NotCoordinator.Code
	default:
		code = gw.shareGroupCode(ctx, tn, req.GroupID, true)
	}
	if code != 0 {
		return deleteShareGroupOffsetsError(req, code), nil
	}
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	only := make(map[string]*topics.Meta)
	for _, t := range req.Topics {
		st := gw.serveTopic(ctx, r, authz.OpRead, t.Topic, true)
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		switch {
		case st.denied:
			rt.ErrorCode = topicDenied
		case errors.Is(st.err, topics.ErrUnknownTopic):
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case st.err != nil:
			rt.ErrorCode = kafkaCodeForDIS(st.err)
		default:
			rt.TopicID = st.t.ID
			only[t.Topic] = st.t
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(only) == 0 {
		return resp, nil
	}
	found, code := gw.deleteShareState(ctx, tn, req.GroupID, only)
	if code != 0 {
		return deleteShareGroupOffsetsError(req, code), nil
	}
	for i := range resp.Topics {
		if rt := &resp.Topics[i]; rt.ErrorCode == 0 {
			rt.ErrorCode = found[rt.Topic]
		}
	}
	return resp, nil
}

// deleteOwnedShareOffsets answers a coordinator's forwarded request: it
// deletes the share-partitions each topic's peerShareTag names that this
// gateway owns.
func (gw *Gateway) deleteOwnedShareOffsets(ctx context.Context, r *request, req *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		ps, ok := peerDeletePartitions(&t.UnknownTags)
		if !ok {
			rt.ErrorCode = kerr.InvalidRequest.Code
		}
		st := gw.serveTopic(ctx, r, authz.OpRead, t.Topic, true)
		for _, p := range ps {
			code := gw.partitionCode(st, p)
			if code == 0 {
				code = gw.shareLocal(ctx, r.Tenant(), req.GroupID, shareDelete, shareAdminPart{t: st.t, p: p}).code
			}
			if rt.ErrorCode == 0 {
				rt.ErrorCode = code
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
