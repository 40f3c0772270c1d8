package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/topics"
)

// CreateTopics v0–v7.
//
// v1 added validate_only and error messages; v4 allows num_partitions and
// replication_factor -1 (broker defaults); v5 returns the created topic's
// partition count, replication factor and configs; v7 its topic id. A topic
// is a DIS stream: partitions become partition_count, retention.ms becomes
// data_duration in hours, and the record format is kept in a stream tag. A
// kept topic (docs/design.md §12) gets its keep stream first.
// DIS keeps one copy, so a replication factor other than 1 (or -1) is refused.

func init() {
	regKey(19, 0, 7, api[*kmsg.CreateTopicsRequest]{Concurrent: handleCreateTopics, Errors: createTopicsError})
}

// createTopicsError answers every topic of req with code.
func createTopicsError(req *kmsg.CreateTopicsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleCreateTopics(ctx context.Context, gw *Gateway, r *request, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for i := range req.Topics {
		if !gw.mayCreateTopic(r, req.Topics[i].Topic) {
			resp.Topics = append(resp.Topics, createTopicDenied(req.Topics[i].Topic))
			continue
		}
		resp.Topics = append(resp.Topics, gw.createOne(ctx, tn, &req.Topics[i], req.ValidateOnly))
	}
	return resp, nil
}

func (gw *Gateway) createOne(ctx context.Context, tn *tenant, t *kmsg.CreateTopicsRequestTopic, validateOnly bool) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = t.Topic
	// v5+ carries the new topic's configs; the Java AdminClient reads the
	// list even when it is empty, so it is never null.
	rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
	fail := func(code int16, msg string) kmsg.CreateTopicsResponseTopic {
		rt.ErrorCode = code
		rt.ErrorMessage = kmsg.StringPtr(msg)
		return rt
	}
	if t.Topic == offsetsTopic {
		return fail(kerr.TopicAlreadyExists.Code, "topic '"+t.Topic+"' already exists")
	}
	if t.Topic == txnStateTopic {
		return fail(kerr.InvalidRequest.Code, "topic '"+t.Topic+"' is internal: the transaction coordinator creates it")
	}
	if t.Topic == shareStateTopic {
		return fail(kerr.InvalidRequest.Code, "topic '"+t.Topic+"' is internal: the share groups' state store creates it")
	}
	if why := topics.CheckName(t.Topic); why != "" {
		gw.log.Info().Str("topic", t.Topic).Str("reason", why).Msg("CreateTopics: invalid topic name")
		return fail(kerr.InvalidTopicException.Code, why)
	}
	partitions := t.NumPartitions
	if len(t.ReplicaAssignment) > 0 {
		if partitions != -1 {
			return fail(kerr.InvalidRequest.Code, "both num_partitions and a replica assignment were given")
		}
		for _, a := range t.ReplicaAssignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != gw.cfg.NodeID {
				return fail(kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("every partition must be assigned to broker %d alone: DIS keeps the replicas", gw.cfg.NodeID))
			}
		}
		partitions = int32(len(t.ReplicaAssignment))
	}
	if partitions == -1 {
		partitions = gw.cfg.DefaultPartitions
	}
	if partitions < 1 {
		return fail(kerr.InvalidPartitions.Code, "the number of partitions must be at least 1")
	}
	if t.ReplicationFactor != -1 && t.ReplicationFactor != 1 {
		return fail(kerr.InvalidReplicationFactor.Code, "DIS keeps its own replicas; the replication factor must be 1 or -1")
	}
	spec := topics.Spec{RetentionHours: gw.cfg.DefaultRetentionHours, Format: gw.cfg.DefaultRecordFormat}
	for _, c := range t.Configs {
		if err := spec.Apply(c.Name, c.Value); err != nil {
			return fail(kerr.InvalidConfig.Code, err.Error())
		}
	}
	if err := gw.topicCfg.CheckSpec(t.Topic, &spec); err != nil {
		return fail(kerr.InvalidConfig.Code, err.Error())
	}
	if _, err := tn.catalog.Get(ctx, t.Topic); err == nil {
		return fail(kerr.TopicAlreadyExists.Code, "topic '"+t.Topic+"' already exists")
	} else if !errors.Is(err, topics.ErrUnknownTopic) {
		return fail(kafkaCodeForDIS(err), err.Error())
	}
	if msg, err := tn.catalog.Collision(ctx, t.Topic); err != nil {
		return fail(kafkaCodeForDIS(err), err.Error())
	} else if msg != "" {
		gw.log.Info().Str("topic", t.Topic).Str("reason", msg).Msg("CreateTopics: colliding topic name")
		return fail(kerr.InvalidTopicException.Code, msg)
	}
	rt.NumPartitions = partitions
	rt.ReplicationFactor = 1
	if spec.StreamType == "" {
		spec.StreamType = disclient.StreamTypeCommon
	}
	rt.Configs = createdConfigs(gw.topicCfg.SpecEntries(&spec))
	if validateOnly {
		return rt
	}
	if err := tn.catalog.Create(ctx, t.Topic, partitions, &spec, spec.Format); err != nil {
		if disclient.IsCode(err, disclient.CodeStreamExists) {
			return fail(kerr.TopicAlreadyExists.Code, "topic '"+t.Topic+"' already exists")
		}
		gw.log.Warn().Err(err).Str("topic", t.Topic).Msg("CreateStream failed")
		return fail(kafkaCodeForDIS(err), err.Error())
	}
	gw.log.Info().Str("topic", t.Topic).Int32("partitions", partitions).Str("format", string(spec.Format)).Bool("kept", spec.Kept()).Msg("created topic")
	if tm, err := tn.catalog.Refresh(ctx, t.Topic); err == nil {
		rt.TopicID = tm.ID
		rt.Configs = createdConfigs(gw.topicCfg.Entries(tm))
	}
	return rt
}

// createdConfigs lists a new topic's configs as CreateTopics v5+ returns them.
func createdConfigs(entries []topics.ConfigEntry) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, e := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source = e.Name, kmsg.StringPtr(e.Value), e.ReadOnly, int8(e.Source)
		out = append(out, c)
	}
	return out
}
