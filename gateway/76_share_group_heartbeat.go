package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// ShareGroupHeartbeat v0–v1 (KIP-932).
//
// Share group membership: the coordinator assigns partitions with the
// simple assignor, several members sharing a partition when there are more
// members than partitions, and a member takes its target on its next
// heartbeat (docs/design.md §14). v1 (Kafka 4.1) has the client choose its
// member id; a v0 join without one is given one. As for
// ConsumerGroupHeartbeat, the group's subscribed topics are looked up
// before each heartbeat is stepped, so new partitions reassign the group.
// A member that leaves or whose session expires has its records released
// on every share-partition of the group (groups.Deps.ShareDeparted).

func init() {
	regKey(76, 0, 1, api[*kmsg.ShareGroupHeartbeatRequest]{Concurrent: handleShareGroupHeartbeat, Errors: shareGroupHeartbeatError})
}

func shareGroupHeartbeatError(req *kmsg.ShareGroupHeartbeatRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.ErrorCode = code
	return resp
}

func handleShareGroupHeartbeat(ctx context.Context, gw *Gateway, r *request, req *kmsg.ShareGroupHeartbeatRequest) (kmsg.Response, error) {
	if !gw.authorize(r, authz.OpRead, authz.ResourceGroup, req.GroupID) {
		return shareGroupHeartbeatError(req, groupDenied), nil
	}
	for _, topic := range req.SubscribedTopicNames {
		if !gw.authorize(r, authz.OpDescribe, authz.ResourceTopic, topic) {
			return shareGroupHeartbeatError(req, topicDenied), nil
		}
	}
	if req.GroupID != "" && !gw.coordinates(req.GroupID) {
		return shareGroupHeartbeatError(req, kerr.NotCoordinator.Code), nil
	}
	var sub groupcoord.Subscription
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) { sub = c.ShareSubscription(req) })
	topics, err := gw.consumerTopics(ctx, r, sub)
	if err != nil {
		gw.log.Warn().Err(err).Str("group", req.GroupID).Msg("share group heartbeat: looking up topics failed")
		return shareGroupHeartbeatError(req, kafkaCodeForDIS(err)), nil
	}
	return gw.groups.StepShare(groupConn(r), req, topics), nil
}
