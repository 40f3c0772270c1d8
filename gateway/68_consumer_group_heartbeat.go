package gateway

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/groupcoord"
)

// ConsumerGroupHeartbeat v0–v1 (KIP-848).
//
// The consumer group protocol: the coordinator assigns partitions with its
// uniform or range assignor and members reconcile towards their target
// through heartbeats (docs/groups.md). v1 has the client choose its member
// id and adds regex subscriptions. The topics the group subscribes to are
// looked up in the tenant's catalog before each heartbeat is stepped, so a
// new partition or a new topic a regex matches reassigns the group.

func init() {
	regKey(68, 0, 1, api[*kmsg.ConsumerGroupHeartbeatRequest]{Concurrent: handleConsumerGroupHeartbeat, Errors: consumerGroupHeartbeatError})
}

func consumerGroupHeartbeatError(req *kmsg.ConsumerGroupHeartbeatRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = code
	return resp
}

func handleConsumerGroupHeartbeat(ctx context.Context, gw *Gateway, r *request, req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	if !gw.authorize(r, authz.OpRead, authz.ResourceGroup, req.Group) {
		return consumerGroupHeartbeatError(req, groupDenied), nil
	}
	for _, topic := range req.SubscribedTopicNames {
		if !gw.authorize(r, authz.OpDescribe, authz.ResourceTopic, topic) {
			return consumerGroupHeartbeatError(req, topicDenied), nil
		}
	}
	if req.Group != "" && !gw.coordinates(req.Group) {
		return consumerGroupHeartbeatError(req, kerr.NotCoordinator.Code), nil
	}
	var sub groupcoord.Subscription
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) { sub = c.ConsumerSubscription(req) })
	topics, err := gw.consumerTopics(ctx, r, sub)
	if err != nil {
		gw.log.Warn().Err(err).Str("group", req.Group).Msg("consumer group heartbeat: listing topics failed")
		return consumerGroupHeartbeatError(req, kafkaCodeForDIS(err)), nil
	}
	return gw.groups.StepConsumer(groupConn(r), req, topics), nil
}

// consumerTopics looks up what a consumer heartbeat needs: the topics
// subscribed by name and, when a subscription is a regex, every topic
// listed that the member may describe and those it matches, so that a regex
// never reveals a topic the ACLs hide, as Kafka filters them. A topic whose
// lookup failed is left out, so the coordinator keeps what it knew of it.
func (gw *Gateway) consumerTopics(ctx context.Context, r *request, sub groupcoord.Subscription) (groupcoord.Topics, error) {
	var out groupcoord.Topics
	tn := r.Tenant()
	names := sub.Names
	if len(sub.Regexes) > 0 {
		all, err := tn.catalog.List(ctx)
		if err != nil {
			return out, err
		}
		out.All = gw.describable(r, all)
		if hidden := len(all) - len(out.All); hidden > 0 {
			r.Log().Info().Str("principal", r.Principal()).Str("api", r.API()).Int("topics", hidden).
				Msg("denied by ACLs: topics the member may not describe are left out of its regex subscription's matches")
		}
		names = append(slices.Clone(names), sub.Matches(all)...)
	}
	found := tn.catalog.GetMany(ctx, names, topics.NewCallBudget(gw.cfg.MaxDescribesPerRequest))
	out.Info = make(map[string]groupcoord.TopicInfo, len(found))
	for name, lk := range found {
		switch {
		case lk.Err == nil:
			out.Info[name] = groupcoord.TopicInfo{ID: lk.Meta.ID, Partitions: int32(len(lk.Meta.Partitions))}
		case errors.Is(lk.Err, topics.ErrUnknownTopic):
			out.Info[name] = groupcoord.TopicInfo{}
		}
	}
	return out, nil
}
