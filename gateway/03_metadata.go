package gateway

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// Metadata v0–v12.
//
// v1 made an empty topic list mean "no topics" (null means all) and added the
// controller and rack; v2 the cluster id; v4 allow_auto_topic_creation; v5
// offline replicas; v7 leader epochs; v8–v10 authorized operations; v10 topic
// ids; v11 dropped cluster authorized operations; v12 allows requesting a
// topic by id alone. The brokers are the live gateways of the Membership,
// each partition's leader is its owner, its only replica and ISR member,
// and the controller is this gateway, since every gateway serves the admin
// APIs (docs/design.md §6). The leader epoch is always 0: DIS partitions
// never change leader, and gateways fence each other without epochs.
// __consumer_offsets is listed as Kafka lists it (internal_topic.go).

func init() {
	regKey(3, 0, 12, api[*kmsg.MetadataRequest]{Concurrent: handleMetadata, Errors: metadataError})
}

// metadataError answers every topic req names with code.
func metadataError(req *kmsg.MetadataRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.ControllerID = -1
	for _, t := range req.Topics {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID, mt.ErrorCode = t.Topic, t.TopicID, code
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

func handleMetadata(ctx context.Context, gw *Gateway, r *request, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, p := range gw.cfg.Membership.Live() {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = p.ID
		b.Host, b.Port = gw.peerAddr(r.Listener(), p)
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.ClusterID = &gw.cfg.ClusterID
	resp.ControllerID = gw.cfg.NodeID

	var names []string
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		list, err := tn.catalog.List(ctx)
		if err != nil {
			gw.log.Warn().Err(err).Msg("metadata: ListStreams failed")
		}
		names = slices.DeleteFunc(gw.describable(r, list), func(n string) bool { return n == offsetsTopic })
		if gw.permits(r, authz.OpDescribe, authz.ResourceTopic, offsetsTopic) {
			resp.Topics = append(resp.Topics, gw.offsetsTopicMetadata())
		}
	}
	budget := topics.NewCallBudget(gw.cfg.MaxDescribesPerRequest)
	var ids [][16]byte
	for _, t := range req.Topics {
		if (t.Topic == nil || *t.Topic == "") && t.TopicID != offsetsTopicID {
			ids = append(ids, t.TopicID)
		}
	}
	byID := tn.catalog.NamesForIDs(ctx, ids, budget)
	askedByID := make(map[string][16]byte, len(byID))
	for _, t := range req.Topics {
		switch {
		case t.Topic != nil && *t.Topic == offsetsTopic,
			(t.Topic == nil || *t.Topic == "") && t.TopicID == offsetsTopicID:
			if gw.authorize(r, authz.OpDescribe, authz.ResourceTopic, offsetsTopic) {
				resp.Topics = append(resp.Topics, gw.offsetsTopicMetadata())
			} else {
				resp.Topics = append(resp.Topics, deniedTopicMetadata(offsetsTopic, t.TopicID, t.Topic == nil || *t.Topic == ""))
			}
		case t.Topic != nil && *t.Topic != "":
			names = append(names, *t.Topic)
		case t.TopicID != [16]byte{}:
			if name, ok := byID[t.TopicID]; ok {
				names = append(names, name)
				askedByID[name] = t.TopicID
			} else {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = t.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
			}
		}
	}
	if !all {
		for _, t := range req.Topics {
			if t.Topic != nil && *t.Topic != "" {
				delete(askedByID, *t.Topic)
			}
		}
		names = gw.describableTopics(r, resp, names, askedByID)
	}
	autoCreate := gw.cfg.AutoCreateTopics && !all && (req.Version < 4 || req.AllowAutoTopicCreation)
	found := tn.catalog.GetMany(ctx, names, budget)
	for _, name := range names {
		mayCreate := autoCreate && errors.Is(found[name].Err, topics.ErrUnknownTopic) && gw.mayCreateTopic(r, name)
		mt := gw.topicMetadata(ctx, tn, name, found[name], mayCreate, budget)
		if autoCreate && !mayCreate && mt.ErrorCode == kerr.UnknownTopicOrPartition.Code {
			mt.ErrorCode = topicDenied
		}
		resp.Topics = append(resp.Topics, mt)
	}
	gw.metadataAuthorizedOps(r, req, resp)
	return resp, nil
}

// topicMetadata answers for one topic as the catalog found it, creating it
// first when allowed and the request's budget has a DIS call left.
func (gw *Gateway) topicMetadata(ctx context.Context, tn *tenant, name string, found topics.Lookup, autoCreate bool, budget *topics.CallBudget) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(name)
	t, err := found.Meta, found.Err
	if errors.Is(err, topics.ErrUnknownTopic) && autoCreate {
		if why := topics.CheckName(name); why != "" {
			gw.log.Info().Str("topic", name).Str("reason", why).Msg("metadata: not auto-creating an invalid topic name")
			mt.ErrorCode = kerr.InvalidTopicException.Code
			return mt
		}
		if !budget.Take() {
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
			return mt
		}
		msg, cerr := tn.catalog.Collision(ctx, name)
		if cerr != nil || msg != "" {
			gw.log.Info().Err(cerr).Str("topic", name).Str("reason", msg).Msg("metadata: not auto-creating a colliding topic")
			mt.ErrorCode = kerr.InvalidTopicException.Code
			if cerr != nil {
				mt.ErrorCode = kafkaCodeForDIS(cerr)
			}
			return mt
		}
		err = tn.catalog.Create(ctx, name, gw.cfg.DefaultPartitions, nil, gw.cfg.DefaultRecordFormat)
		if err == nil || disclient.IsCode(err, disclient.CodeStreamExists) {
			gw.log.Info().Str("topic", name).Int32("partitions", gw.cfg.DefaultPartitions).Msg("auto-created topic")
			t, err = tn.catalog.Refresh(ctx, name)
		}
	}
	switch {
	case errors.Is(err, topics.ErrUnknownTopic):
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return mt
	case errors.Is(err, topics.ErrNotDescribed):
		mt.ErrorCode = kerr.LeaderNotAvailable.Code
		return mt
	case err != nil:
		gw.log.Warn().Err(err).Str("topic", name).Msg("metadata: DescribeStream failed")
		mt.ErrorCode = kafkaCodeForDIS(err)
		return mt
	}
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(name)
	if t.Status != "" && t.Status != disclient.StreamStatusRunning {
		mt.ErrorCode = kerr.LeaderNotAvailable.Code
		return mt
	}
	for i := range t.Partitions {
		p := int32(i)
		if !t.Readable(p) {
			continue
		}
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.Leader = gw.partitionOwner(name, p).ID
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{mp.Leader}
		mp.ISR = []int32{mp.Leader}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
