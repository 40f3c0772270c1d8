package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// CreateTopics v0–v7.
//
// v1 added validate_only and error messages; v4 allows num_partitions and
// replication_factor -1 (broker defaults); v5 returns the created topic's
// partition count, replication factor and configs; v7 its topic id. A topic
// is a DIS stream: partitions become partition_count, retention.ms becomes
// data_duration in hours, and the record format is kept in a stream tag.
// DIS keeps one copy, so a replication factor other than 1 (or -1) is refused.

func init() {
	regKey(19, 0, 7, api[*kmsg.CreateTopicsRequest]{concurrent: handleCreateTopics, errors: createTopicsError})
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

// Topic configs understood at creation.
const (
	configRetentionMs   = "retention.ms"
	configCleanupPolicy = "cleanup.policy"
	configRecordFormat  = "dis.record.format"
	configStreamType    = "dis.stream.type"
)

func handleCreateTopics(ctx context.Context, gw *Gateway, r *request, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	tn := r.tenant
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
	if why := checkTopicName(t.Topic); why != "" {
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
	spec := streamSpec{retentionHours: gw.cfg.DefaultRetentionHours, format: gw.cfg.DefaultRecordFormat}
	for _, c := range t.Configs {
		if err := spec.apply(c.Name, c.Value); err != nil {
			return fail(kerr.InvalidConfig.Code, err.Error())
		}
	}
	if err := checkSpec(&gw.cfg, t.Topic, &spec); err != nil {
		return fail(kerr.InvalidConfig.Code, err.Error())
	}
	if _, err := tn.catalog.get(ctx, t.Topic); err == nil {
		return fail(kerr.TopicAlreadyExists.Code, "topic '"+t.Topic+"' already exists")
	} else if !errors.Is(err, errUnknownTopic) {
		return fail(kafkaCodeForDIS(err), err.Error())
	}
	if msg, err := tn.catalog.collision(ctx, t.Topic); err != nil {
		return fail(kafkaCodeForDIS(err), err.Error())
	} else if msg != "" {
		gw.log.Info().Str("topic", t.Topic).Str("reason", msg).Msg("CreateTopics: colliding topic name")
		return fail(kerr.InvalidTopicException.Code, msg)
	}
	rt.NumPartitions = partitions
	rt.ReplicationFactor = 1
	if spec.streamType == "" {
		spec.streamType = disclient.StreamTypeCommon
	}
	rt.Configs = createdConfigs(&gw.cfg, &topicMeta{retentionHours: spec.retentionHours, format: spec.format, streamType: spec.streamType, timestamps: spec.timestamps, maxMessageBytes: spec.maxMessageBytes, raw: spec.raw})
	if validateOnly {
		return rt
	}
	if err := gw.createTopic(ctx, tn, t.Topic, partitions, &spec, spec.format); err != nil {
		if disclient.IsCode(err, disclient.CodeStreamExists) {
			return fail(kerr.TopicAlreadyExists.Code, "topic '"+t.Topic+"' already exists")
		}
		gw.log.Warn().Err(err).Str("topic", t.Topic).Msg("CreateStream failed")
		return fail(kafkaCodeForDIS(err), err.Error())
	}
	gw.log.Info().Str("topic", t.Topic).Int32("partitions", partitions).Str("format", string(spec.format)).Msg("created topic")
	if tm, err := tn.catalog.refresh(ctx, t.Topic); err == nil {
		rt.TopicID = tm.id
		rt.Configs = createdConfigs(&gw.cfg, tm)
	}
	return rt
}

// createdConfigs lists a new topic's configs as CreateTopics v5+ returns them.
func createdConfigs(cfg *Config, t *topicMeta) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, e := range topicConfigEntries(cfg, t) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source = e.name, kmsg.StringPtr(e.value), e.readOnly, int8(e.source)
		out = append(out, c)
	}
	return out
}

// streamSpec is what a new topic's configs ask of its stream.
type streamSpec struct {
	retentionHours int32
	format         RecordFormat
	streamType     string
	timestamps     timestampSpec
	// maxMessageBytes is max.message.bytes in canonical text, "" when
	// not set (the DIS record limit).
	maxMessageBytes string
	raw             rawSpec
}

// configTags are the stream tags that record the configs set in s.
func (s *streamSpec) configTags() []disclient.Tag {
	tags := s.timestamps.tags()
	if s.maxMessageBytes != "" {
		tags = append(tags, disclient.Tag{Key: maxMessageBytesTagKey, Value: s.maxMessageBytes})
	}
	return append(tags, s.raw.tags()...)
}

// apply takes one topic config at creation, checked by the same table
// (topicConfigs) the alter APIs use. Configs DIS decides and names disgw does
// not know are accepted and ignored, so creation scripts written for Kafka
// keep working; DescribeConfigs then shows what DIS really does.
func (s *streamSpec) apply(name string, value *string) error {
	if value == nil {
		return nil
	}
	c := topicConfigNamed(name)
	if c == nil || c.set == nil {
		return nil
	}
	return c.set(s, *value)
}

// createTopic creates the stream for a topic (streamNameFor, with the Kafka
// name in topicNameTags when the stream name is encoded); spec nil means
// defaults.
func (gw *Gateway) createTopic(ctx context.Context, tn *tenant, name string, partitions int32, spec *streamSpec, format RecordFormat) error {
	hours := gw.cfg.DefaultRetentionHours
	req := &disclient.CreateStreamRequest{
		StreamName:     streamNameFor(name),
		PartitionCount: partitions,
		StreamType:     disclient.StreamTypeCommon,
		DataType:       disclient.DataTypeBlob,
		DataDuration:   &hours,
		Tags:           append([]disclient.Tag{{Key: formatTagKey, Value: string(format)}}, topicNameTags(name)...),
	}
	if spec != nil {
		hours = spec.retentionHours
		if spec.streamType != "" {
			req.StreamType = spec.streamType
		}
		req.Tags = append(req.Tags, spec.configTags()...)
	}
	return tn.catalog.create(ctx, name, req)
}
