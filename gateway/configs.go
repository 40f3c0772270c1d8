package gateway

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/topics"
)

// Broker configs, as DescribeConfigs reports them: they mirror the
// gateway's own settings and are all read-only, set by its flags, not by
// Kafka admin requests. Group configs are in group_configs.go, topic
// configs in gateway/topics.

// fixedValue is a config value that is the same for every gateway.
func fixedValue(v string) func(*Config) string { return func(*Config) string { return v } }

// brokerConfig is one broker config disgw reports; all are read-only.
type brokerConfig struct {
	name string
	typ  kmsg.ConfigType
	doc  string
	// value is the config's value for a gateway configured with cfg.
	value func(cfg *Config) string
	// fromFlags marks values set by the gateway's configuration
	// (STATIC_BROKER_CONFIG) rather than fixed by disgw (DEFAULT_CONFIG).
	fromFlags bool
}

// brokerConfigs holds the broker configs clients read, sorted by name.
var brokerConfigs = []brokerConfig{
	{name: "auto.create.topics.enable", typ: kmsg.ConfigTypeBoolean, fromFlags: true,
		doc:   "Metadata requests create missing topics.",
		value: func(cfg *Config) string { return strconv.FormatBool(cfg.AutoCreateTopics) }},
	{name: "broker.id", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "This gateway's node id.",
		value: func(cfg *Config) string { return strconv.Itoa(int(cfg.NodeID)) }},
	{name: "compression.type", typ: kmsg.ConfigTypeString,
		doc:   "Batches are decompressed into DIS records.",
		value: fixedValue("producer")},
	{name: "default.replication.factor", typ: kmsg.ConfigTypeInt,
		doc:   "DIS replicates by itself; Kafka sees one replica.",
		value: fixedValue("1")},
	{name: topics.ConfigRecordFormat, typ: kmsg.ConfigTypeString, fromFlags: true,
		doc:   "Record format of topics created through this gateway.",
		value: func(cfg *Config) string { return string(cfg.DefaultRecordFormat) }},
	{name: "group.initial.rebalance.delay.ms", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "How long the first rebalance of a new group waits for more members.",
		value: func(cfg *Config) string { return strconv.FormatInt(cfg.InitialRebalanceDelay.Milliseconds(), 10) }},
	{name: "group.share.delivery.count.limit", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "Deliveries after which a share group's record is archived.",
		value: func(cfg *Config) string { return strconv.Itoa(cfg.ShareLimits.DeliveryCountLimit) }},
	{name: "group.share.heartbeat.interval.ms", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "Heartbeat interval told to share group members.",
		value: func(cfg *Config) string { return strconv.FormatInt(cfg.ShareGroupHeartbeatInterval.Milliseconds(), 10) }},
	{name: "group.share.max.record.lock.duration.ms", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "Longest record lock a share group may set.",
		value: func(cfg *Config) string { return strconv.FormatInt(cfg.ShareLimits.MaxLockDuration.Milliseconds(), 10) }},
	{name: "group.share.max.size", typ: kmsg.ConfigTypeShort, fromFlags: true,
		doc:   "Most members of one share group.",
		value: func(cfg *Config) string { return strconv.Itoa(cfg.ShareGroupMaxSize) }},
	{name: "group.share.partition.max.record.locks", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "Most records of a share-partition taken in and not yet done.",
		value: func(cfg *Config) string { return strconv.Itoa(cfg.ShareLimits.MaxInFlight) }},
	{name: "group.share.record.lock.duration.ms", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "How long a share group member holds a record it took, unless its group sets share.record.lock.duration.ms.",
		value: func(cfg *Config) string { return strconv.FormatInt(cfg.ShareLimits.LockDuration.Milliseconds(), 10) }},
	{name: "group.share.session.timeout.ms", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "Share group members silent this long are removed and their records released.",
		value: func(cfg *Config) string { return strconv.FormatInt(cfg.ShareGroupSessionTimeout.Milliseconds(), 10) }},
	{name: "log.cleanup.policy", typ: kmsg.ConfigTypeList,
		doc:   "DIS deletes records by age only.",
		value: fixedValue("delete")},
	{name: "log.retention.hours", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "DIS data_duration of new topics.",
		value: func(cfg *Config) string { return strconv.Itoa(int(cfg.DefaultRetentionHours)) }},
	{name: "message.max.bytes", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "The largest record DIS takes.",
		value: func(cfg *Config) string { return strconv.Itoa(cfg.MaxRecordBytes) }},
	{name: "min.insync.replicas", typ: kmsg.ConfigTypeInt,
		doc:   "DIS replicates every write itself.",
		value: fixedValue("1")},
	{name: "num.partitions", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "Partitions of auto-created topics and of CreateTopics with -1.",
		value: func(cfg *Config) string { return strconv.Itoa(int(cfg.DefaultPartitions)) }},
	{name: "offsets.topic.replication.factor", typ: kmsg.ConfigTypeShort,
		doc:   "Committed offsets are DIS checkpoints.",
		value: fixedValue("1")},
	{name: "socket.request.max.bytes", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "Larger requests close the connection.",
		value: func(cfg *Config) string { return strconv.Itoa(int(cfg.MaxFrameBytes)) }},
}

// brokerConfigEntries reports every broker config of this gateway.
func brokerConfigEntries(cfg *Config) []topics.ConfigEntry {
	entries := make([]topics.ConfigEntry, 0, len(brokerConfigs))
	for _, c := range brokerConfigs {
		e := topics.ConfigEntry{Name: c.name, Value: c.value(cfg), Source: kmsg.ConfigSourceDefaultConfig, ReadOnly: true, Type: c.typ, Doc: c.doc}
		e.Def = e.Value
		if c.fromFlags {
			e.Source = kmsg.ConfigSourceStaticBrokerConfig
		}
		entries = append(entries, e)
	}
	return entries
}

// errBrokerConfigsStatic refuses every broker config change. Kafka answers
// INVALID_REQUEST for broker configs that cannot be updated dynamically,
// which is what every disgw broker config is.
var errBrokerConfigsStatic = topics.InvalidRequest("disgw broker configs are static: set them with the gateway's flags and restart it")

// resourceTypeError refuses resource types other than topics, brokers and
// groups.
func resourceTypeError(rt kmsg.ConfigResourceType) *topics.ConfigError {
	if rt == kmsg.ConfigResourceTypeBrokerLogger {
		return topics.InvalidRequest("disgw has no broker loggers: its log level is set when it starts")
	}
	return topics.InvalidRequest("disgw has no configs for resource type %d", int8(rt))
}
