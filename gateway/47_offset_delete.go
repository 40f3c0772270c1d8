package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// OffsetDelete v0.
//
// Deletes a group's committed offsets for some partitions (KIP-496): their
// DIS checkpoints. Offsets of topics that live members are subscribed to
// are refused with GROUP_SUBSCRIBED_TO_TOPIC, as Kafka does.

func init() {
	regKey(47, 0, 0, api[*kmsg.OffsetDeleteRequest]{Concurrent: handleOffsetDelete, Errors: offsetDeleteError})
}

// offsetDeleteError answers req with code at the top level and in every
// partition.
func offsetDeleteError(req *kmsg.OffsetDeleteRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.ErrorCode = code
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleOffsetDelete(ctx context.Context, gw *Gateway, r *request, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	if !gw.authorize(r, authz.OpDelete, authz.ResourceGroup, req.Group) {
		return offsetDeleteError(req, groupDenied), nil
	}
	if !gw.coordinates(req.Group) {
		return offsetDeleteError(req, kerr.NotCoordinator.Code), nil
	}
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	subscribed := map[string]bool{}
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) {
		d, ok := c.Describe(req.Group)
		if !ok {
			return
		}
		for _, m := range d.Members {
			var meta kmsg.ConsumerMemberMetadata
			if err := meta.ReadFrom(m.ProtocolMetadata); err == nil {
				for _, t := range meta.Topics {
					subscribed[t] = true
				}
			}
		}
	})
	stored, err := gw.groups.GroupStored(ctx, tn, req.Group)
	switch {
	case err != nil:
		resp.ErrorCode = kafkaCodeForDIS(err)
	case !stored && len(subscribed) == 0:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		denied := resp.ErrorCode == 0 && !gw.authorize(r, authz.OpRead, authz.ResourceTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case resp.ErrorCode != 0:
			case denied:
				rp.ErrorCode = topicDenied
			case subscribed[t.Topic]:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if err := gw.groups.DeleteOffset(ctx, tn, req.Group, t.Topic, p.Partition); err != nil {
					rp.ErrorCode = kafkaCodeForDIS(err)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
