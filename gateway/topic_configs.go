package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// Topic and broker configs, as DescribeConfigs reports them and as
// CreateTopics, AlterConfigs and IncrementalAlterConfigs may set them.
//
// A topic is a DIS stream, so DIS decides most of what Kafka tunes per topic.
// topicConfigs is the one list of the topic configs disgw knows: each says
// how its value follows from the stream and whether a client may set it.
// retention.ms (DIS data_duration) and the message.timestamp.* configs (kept
// in the stream's tags, which DIS lets change) can change after creation;
// dis.raw.headers and dis.raw.keys (stream tags too) can change as well;
// dis.record.format and dis.stream.type are chosen at creation; the rest
// report, in Kafka's terms, what DIS does, and are read-only. A topic config
// reads as DYNAMIC_TOPIC_CONFIG when the topic's value differs from the one a
// topic created through this gateway gets by default, and as DEFAULT_CONFIG
// otherwise. Broker configs mirror the gateway's own settings and are all
// read-only: they come from its flags, not from Kafka admin requests.

const (
	hourMs            = 3_600_000
	minRetentionHours = 24
	maxRetentionHours = 72
)

// topicConfig is one topic config disgw reports.
type topicConfig struct {
	name string
	typ  kmsg.ConfigType
	doc  string
	// value is the config's value for a stream shaped like s.
	value func(cfg *Config, s *streamSpec) string
	// def is the value a topic created through this gateway gets unless
	// its creator says otherwise.
	def func(cfg *Config) string
	// set checks v and records it in s; nil means DIS fixes the value and
	// CreateTopics ignores it.
	set func(s *streamSpec, v string) error
	// readOnly marks configs an alter may not change (set may still take
	// them at creation, or accept the one value DIS has).
	readOnly bool
}

// list reports whether the config is a comma-separated list, the only kind
// IncrementalAlterConfigs may APPEND to or SUBTRACT from.
func (c *topicConfig) list() bool { return c.typ == kmsg.ConfigTypeList }

// fixedValue is a config value that is the same for every stream.
func fixedValue(v string) func(*Config) string { return func(*Config) string { return v } }

// topicConfigs holds every topic config disgw knows, sorted by name.
var topicConfigs = []topicConfig{
	{
		name: configCleanupPolicy, typ: kmsg.ConfigTypeList, readOnly: true,
		doc: "DIS deletes records by age only; \"delete\" is the one policy.",
		def: fixedValue("delete"),
		set: func(_ *streamSpec, v string) error {
			if v != "delete" {
				return fmt.Errorf("cleanup.policy %q is not possible: DIS only deletes by age", v)
			}
			return nil
		},
	},
	{
		name: "compression.type", typ: kmsg.ConfigTypeString, readOnly: true,
		doc: "Batches are decompressed into DIS records; fetches return them uncompressed.",
		def: fixedValue("producer"),
	},
	{
		name: "delete.retention.ms", typ: kmsg.ConfigTypeLong, readOnly: true,
		doc: "Kafka's default; DIS has no compaction tombstones.",
		def: fixedValue("86400000"),
	},
	{
		name: configRawHeaders, typ: kmsg.ConfigTypeString,
		doc:   "raw topics: what happens to a record's headers, which a DIS record cannot hold. drop (the default) writes the record without them, logged once per producer and partition and counted in disgw_raw_headers_dropped_total; refuse fails the batch with INVALID_RECORD. kafka topics keep headers.",
		value: func(_ *Config, s *streamSpec) string { return s.raw.withDefaults().headers },
		def:   fixedValue(policyDrop),
		set: func(s *streamSpec, v string) (err error) {
			s.raw.headers, err = parseRawPolicy(configRawHeaders, v)
			return err
		},
	},
	{
		name: configRawKeys, typ: kmsg.ConfigTypeString,
		doc:   "raw topics: what happens to a key a DIS partition_key cannot hold (empty, not UTF-8, or over 256 bytes). drop (the default) writes the record with a null key, logged once per producer and partition and counted in disgw_raw_keys_dropped_total; refuse fails the batch with INVALID_RECORD. kafka topics keep keys.",
		value: func(_ *Config, s *streamSpec) string { return s.raw.withDefaults().keys },
		def:   fixedValue(policyDrop),
		set: func(s *streamSpec, v string) (err error) {
			s.raw.keys, err = parseRawPolicy(configRawKeys, v)
			return err
		},
	},
	{
		name: configRecordFormat, typ: kmsg.ConfigTypeString, readOnly: true,
		doc:   "How Kafka records map onto DIS records: kafka (one DIS record per Kafka record batch, as the producer sent it) or raw (one DIS record per Kafka record, value only). Chosen at creation.",
		value: func(_ *Config, s *streamSpec) string { return string(s.format) },
		def:   func(cfg *Config) string { return string(cfg.DefaultRecordFormat) },
		set: func(s *streamSpec, v string) error {
			if f := RecordFormat(v); f != FormatKafka && f != FormatRaw {
				return fmt.Errorf("dis.record.format must be %q or %q", FormatKafka, FormatRaw)
			}
			s.format = RecordFormat(v)
			return nil
		},
	},
	{
		name: configStreamType, typ: kmsg.ConfigTypeString, readOnly: true,
		doc: "The DIS stream type, COMMON or ADVANCED. Chosen at creation.",
		value: func(_ *Config, s *streamSpec) string {
			if s.streamType == "" {
				return disclient.StreamTypeCommon
			}
			return s.streamType
		},
		def: fixedValue(disclient.StreamTypeCommon),
		set: func(s *streamSpec, v string) error {
			if v != disclient.StreamTypeCommon && v != disclient.StreamTypeAdvanced {
				return fmt.Errorf("dis.stream.type must be %s or %s", disclient.StreamTypeCommon, disclient.StreamTypeAdvanced)
			}
			s.streamType = v
			return nil
		},
	},
	{
		name: "max.compaction.lag.ms", typ: kmsg.ConfigTypeLong, readOnly: true,
		doc: "Kafka's default; DIS does not compact.",
		def: fixedValue("9223372036854775807"),
	},
	{
		name: configMaxMessageBytes, typ: kmsg.ConfigTypeInt,
		doc: "The largest record batch a kafka-format topic takes, 0 to 1073741824 (a batch larger than one DIS record is stored in several); a raw topic takes records of one DIS record at most (1 MiB unless the gateway is configured otherwise) and keeps this default.",
		value: func(cfg *Config, s *streamSpec) string {
			if s.maxMessageBytes == "" {
				return strconv.Itoa(cfg.MaxRecordBytes)
			}
			return s.maxMessageBytes
		},
		def: func(cfg *Config) string { return strconv.Itoa(cfg.MaxRecordBytes) },
		set: func(s *streamSpec, v string) (err error) {
			s.maxMessageBytes, err = parseMaxMessageBytes(v)
			return err
		},
	},
	{
		name: configTimestampAfter, typ: kmsg.ConfigTypeLong,
		doc:   "How far in the future a CreateTime record's timestamp may be, in ms (Kafka 3's default: any distance); Produce answers INVALID_TIMESTAMP beyond it.",
		value: func(_ *Config, s *streamSpec) string { return s.timestamps.withDefaults().afterMax },
		def:   fixedValue(maxTimestampWindow),
		set: func(s *streamSpec, v string) (err error) {
			s.timestamps.afterMax, err = parseTimestampWindow(configTimestampAfter, v)
			return err
		},
	},
	{
		name: configTimestampBefore, typ: kmsg.ConfigTypeLong,
		doc:   "How old a CreateTime record's timestamp may be, in ms (Kafka's default: any age); Produce answers INVALID_TIMESTAMP beyond it.",
		value: func(_ *Config, s *streamSpec) string { return s.timestamps.withDefaults().beforeMax },
		def:   fixedValue(maxTimestampWindow),
		set: func(s *streamSpec, v string) (err error) {
			s.timestamps.beforeMax, err = parseTimestampWindow(configTimestampBefore, v)
			return err
		},
	},
	{
		name: configTimestampType, typ: kmsg.ConfigTypeString,
		doc:   "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the time the gateway appends it.",
		value: func(_ *Config, s *streamSpec) string { return s.timestamps.withDefaults().typ },
		def:   fixedValue(timestampCreateTime),
		set: func(s *streamSpec, v string) error {
			if v != timestampCreateTime && v != timestampLogAppendTime {
				return fmt.Errorf("%s must be %s or %s", configTimestampType, timestampCreateTime, timestampLogAppendTime)
			}
			s.timestamps.typ = v
			return nil
		},
	},
	{
		name: "min.compaction.lag.ms", typ: kmsg.ConfigTypeLong, readOnly: true,
		doc: "Kafka's default; DIS does not compact.",
		def: fixedValue("0"),
	},
	{
		name: "min.insync.replicas", typ: kmsg.ConfigTypeInt, readOnly: true,
		doc: "DIS replicates every write itself; Kafka sees one replica.",
		def: fixedValue("1"),
	},
	{
		name: "retention.bytes", typ: kmsg.ConfigTypeLong, readOnly: true,
		doc: "DIS retains by age only.",
		def: fixedValue("-1"),
	},
	{
		name: configRetentionMs, typ: kmsg.ConfigTypeLong,
		doc:   "DIS data_duration in whole hours (rounded up), 24 to 72 hours.",
		value: func(_ *Config, s *streamSpec) string { return strconv.FormatInt(int64(s.retentionHours)*hourMs, 10) },
		def:   func(cfg *Config) string { return strconv.FormatInt(int64(cfg.DefaultRetentionHours)*hourMs, 10) },
		set: func(s *streamSpec, v string) error {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("retention.ms %q is not a number", v)
			}
			hours := (ms + hourMs - 1) / hourMs
			if ms < 0 || hours < minRetentionHours || hours > maxRetentionHours {
				return fmt.Errorf("retention.ms %s is outside what DIS keeps: 24 to 72 hours (86400000 to 259200000 ms)", v)
			}
			s.retentionHours = int32(hours)
			return nil
		},
	},
	{
		name: "segment.bytes", typ: kmsg.ConfigTypeInt, readOnly: true,
		doc: "Kafka's default; DIS manages its own storage.",
		def: fixedValue("1073741824"),
	},
	{
		name: "segment.ms", typ: kmsg.ConfigTypeLong, readOnly: true,
		doc: "Kafka's default; DIS manages its own storage.",
		def: fixedValue("604800000"),
	},
	{
		name: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean, readOnly: true,
		doc: "DIS never loses acknowledged records to a leader change.",
		def: fixedValue("false"),
	},
}

// The timestamp configs Produce checks batches against.
const (
	configTimestampType   = "message.timestamp.type"
	configTimestampBefore = "message.timestamp.before.max.ms"
	configTimestampAfter  = "message.timestamp.after.max.ms"

	timestampCreateTime    = "CreateTime"
	timestampLogAppendTime = "LogAppendTime"
	// maxTimestampWindow is Kafka's default for both windows: no limit.
	maxTimestampWindow = "9223372036854775807"
)

// configMaxMessageBytes is the largest batch Produce takes on a topic.
const configMaxMessageBytes = "max.message.bytes"

// maxMessageBytesLimit is the largest max.message.bytes a topic may have:
// 1 GiB, below Kafka's Int.MaxValue; a batch is also bounded by the
// largest request the gateway reads (--max-request-bytes).
const maxMessageBytesLimit = 1 << 30

// parseMaxMessageBytes checks a max.message.bytes value and returns it in
// canonical form.
func parseMaxMessageBytes(v string) (string, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > maxMessageBytesLimit {
		return "", fmt.Errorf("%s %q must be a number of bytes from 0 to %d", configMaxMessageBytes, v, maxMessageBytesLimit)
	}
	return strconv.FormatInt(n, 10), nil
}

// maxMessageBytesOf is the largest batch t takes.
func maxMessageBytesOf(cfg *Config, t *topicMeta) int {
	spec := specOf(t)
	n, err := strconv.Atoi(topicConfigNamed(configMaxMessageBytes).current(cfg, &spec))
	if err != nil {
		return cfg.MaxRecordBytes
	}
	return n
}

// maxStreamTags is how many tags DIS lets a stream have.
const maxStreamTags = 10

// checkSpec refuses configs the topic's record format cannot keep, and
// config tags the stream has no room for: its Kafka name may take six.
func checkSpec(cfg *Config, name string, s *streamSpec) error {
	if s.format == FormatKafka && s.raw.withDefaults() != (rawSpec{}).withDefaults() {
		return fmt.Errorf("%s and %s need dis.record.format raw: a kafka topic keeps headers and keys as sent", configRawHeaders, configRawKeys)
	}
	if s.format != FormatKafka {
		if s.timestamps.withDefaults() != (timestampSpec{}).withDefaults() {
			return errors.New("the message.timestamp.* configs need dis.record.format kafka: a raw topic keeps no Kafka timestamps to check")
		}
		if s.maxMessageBytes != "" && s.maxMessageBytes != strconv.Itoa(cfg.MaxRecordBytes) {
			return fmt.Errorf("%s needs dis.record.format kafka: a raw topic stores each record in one DIS record, at most %d bytes", configMaxMessageBytes, cfg.MaxRecordBytes)
		}
	}
	if n := 1 + len(topicNameTags(name)) + len(s.configTags()); n > maxStreamTags {
		return fmt.Errorf("the topic's configs and its %d-character name need %d stream tags, more than the %d DIS allows: leave a config at its default or use a shorter name", len(name), n, maxStreamTags)
	}
	return nil
}

// timestampSpec is a topic's message.timestamp.* configs, each in its
// canonical text; the zero value is Kafka's defaults, which is what a topic
// whose stream carries no timestamp tags has.
type timestampSpec struct {
	typ, beforeMax, afterMax string
}

// withDefaults fills the configs left unset with Kafka's defaults.
func (ts timestampSpec) withDefaults() timestampSpec {
	if ts.typ == "" {
		ts.typ = timestampCreateTime
	}
	if ts.beforeMax == "" {
		ts.beforeMax = maxTimestampWindow
	}
	if ts.afterMax == "" {
		ts.afterMax = maxTimestampWindow
	}
	return ts
}

// parseTimestampWindow checks v, the value of the window config name, which
// Kafka requires to be a number of ms of at least 0, and returns it in
// canonical form.
func parseTimestampWindow(name, v string) (string, error) {
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ms < 0 {
		return "", fmt.Errorf("%s %q must be a number of milliseconds, at least 0", name, v)
	}
	return strconv.FormatInt(ms, 10), nil
}

// timestampPolicy is what a topic's message.timestamp.* configs allow.
type timestampPolicy struct {
	logAppendTime       bool
	beforeMax, afterMax int64
}

// timestampPolicyOf reads t's timestamp configs from the config table.
func timestampPolicyOf(cfg *Config, t *topicMeta) timestampPolicy {
	spec := specOf(t)
	num := func(name string) int64 {
		n, err := strconv.ParseInt(topicConfigNamed(name).current(cfg, &spec), 10, 64)
		if err != nil {
			return math.MaxInt64
		}
		return n
	}
	return timestampPolicy{
		logAppendTime: topicConfigNamed(configTimestampType).current(cfg, &spec) == timestampLogAppendTime,
		beforeMax:     num(configTimestampBefore),
		afterMax:      num(configTimestampAfter),
	}
}

// allows reports whether a CreateTime record timestamp ts is within the
// policy at now, as Kafka checks each record.
func (p timestampPolicy) allows(ts, now int64) bool {
	if p.logAppendTime {
		return true
	}
	if ts < now && now-ts > p.beforeMax {
		return false
	}
	return ts <= now || ts-now <= p.afterMax
}

// topicConfigNamed returns the config called name, or nil.
func topicConfigNamed(name string) *topicConfig {
	i, ok := slices.BinarySearchFunc(topicConfigs, name, func(c topicConfig, n string) int { return strings.Compare(c.name, n) })
	if !ok {
		return nil
	}
	return &topicConfigs[i]
}

// current is the config's value for a stream shaped like s.
func (c *topicConfig) current(cfg *Config, s *streamSpec) string {
	if c.value == nil {
		return c.def(cfg)
	}
	return c.value(cfg, s)
}

// specOf is the shape of an existing topic's stream.
func specOf(t *topicMeta) streamSpec {
	return streamSpec{retentionHours: t.retentionHours, format: t.format, streamType: t.streamType, timestamps: t.timestamps, maxMessageBytes: t.maxMessageBytes, raw: t.raw}
}

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
	{name: configRecordFormat, typ: kmsg.ConfigTypeString, fromFlags: true,
		doc:   "Record format of topics created through this gateway.",
		value: func(cfg *Config) string { return string(cfg.DefaultRecordFormat) }},
	{name: "group.initial.rebalance.delay.ms", typ: kmsg.ConfigTypeInt, fromFlags: true,
		doc:   "How long the first rebalance of a new group waits for more members.",
		value: func(cfg *Config) string { return strconv.FormatInt(cfg.InitialRebalanceDelay.Milliseconds(), 10) }},
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

// groupConfigEntries reports the configs of a consumer group (the GROUP
// resource, KIP-848): the gateway's flags set them for every group alike,
// so no group overrides them, and a group need not exist to have them.
func groupConfigEntries(session, heartbeat time.Duration) []configEntry {
	entry := func(name string, d time.Duration, doc string) configEntry {
		v := strconv.FormatInt(d.Milliseconds(), 10)
		return configEntry{name: name, value: v, def: v, source: kmsg.ConfigSourceDefaultConfig, readOnly: true, typ: kmsg.ConfigTypeInt, doc: doc}
	}
	return []configEntry{
		entry("consumer.heartbeat.interval.ms", heartbeat, "Heartbeat interval told to consumer-protocol members."),
		entry("consumer.session.timeout.ms", session, "Consumer-protocol members silent this long are removed."),
	}
}

// configError is a refusal of one resource in a config request.
type configError struct {
	code int16
	msg  string
}

func (e *configError) Error() string { return e.msg }

func invalidConfig(format string, args ...any) *configError {
	return &configError{code: kerr.InvalidConfig.Code, msg: fmt.Sprintf(format, args...)}
}

func invalidRequest(format string, args ...any) *configError {
	return &configError{code: kerr.InvalidRequest.Code, msg: fmt.Sprintf(format, args...)}
}

// errBrokerConfigsStatic refuses every broker config change. Kafka answers
// INVALID_REQUEST for broker configs that cannot be updated dynamically,
// which is what every disgw broker config is.
var errBrokerConfigsStatic = invalidRequest("disgw broker configs are static: set them with the gateway's flags and restart it")

// errGroupConfigsStatic refuses every group config change, as
// errBrokerConfigsStatic does: the gateway's flags set them for all groups.
var errGroupConfigsStatic = invalidRequest("disgw group configs are the same for every group: set them with --consumer-group-session-timeout and --consumer-group-heartbeat-interval")

// resourceTypeError refuses resource types other than topics, brokers and
// groups.
func resourceTypeError(rt kmsg.ConfigResourceType) *configError {
	if rt == kmsg.ConfigResourceTypeBrokerLogger {
		return invalidRequest("disgw has no broker loggers: its log level is set when it starts")
	}
	return invalidRequest("disgw has no configs for resource type %d", int8(rt))
}

// topicAlter collects what one alter request asks of one topic, checking
// every change against topicConfigs before anything reaches DIS.
type topicAlter struct {
	cfg       *Config
	name      string
	cur, next streamSpec
	seen      map[string]bool
}

func newTopicAlter(cfg *Config, t *topicMeta) *topicAlter {
	s := specOf(t)
	return &topicAlter{cfg: cfg, name: t.name, cur: s, next: s, seen: make(map[string]bool)}
}

// config returns the named config, refusing unknown and repeated names.
func (a *topicAlter) config(name string) (*topicConfig, *configError) {
	if a.seen[name] {
		return nil, invalidRequest("config %s appears more than once", name)
	}
	a.seen[name] = true
	c := topicConfigNamed(name)
	if c == nil {
		return nil, invalidConfig("unknown topic config %s", name)
	}
	return c, nil
}

// set makes config c hold v. Setting a config to the value it has is
// accepted even when the config cannot change, so that a client may send
// back what DescribeConfigs gave it.
func (a *topicAlter) set(c *topicConfig, v string) *configError {
	before := c.current(a.cfg, &a.next)
	if c.set == nil {
		if v != before {
			return invalidConfig("%s is %s on DIS and cannot be changed", c.name, before)
		}
		return nil
	}
	next := a.next
	if err := c.set(&next, v); err != nil {
		return invalidConfig("%s", err.Error())
	}
	if c.readOnly && c.current(a.cfg, &next) != before {
		return invalidConfig("%s cannot be changed after creation", c.name)
	}
	a.next = next
	return nil
}

// revert makes config c hold its default.
func (a *topicAlter) revert(c *topicConfig) *configError {
	return a.set(c, c.def(a.cfg))
}

// alterResource runs one resource of an AlterConfigs or
// IncrementalAlterConfigs request: fill states the changes on a topicAlter,
// then the new stream shape is written to DIS unless validateOnly.
func (gw *Gateway) alterResource(ctx context.Context, tn *tenant, rt kmsg.ConfigResourceType, name string, validateOnly bool, fill func(a *topicAlter) *configError) *configError {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		return errBrokerConfigsStatic
	case kmsg.ConfigResourceTypeGroupConfig:
		return errGroupConfigsStatic
	default:
		return resourceTypeError(rt)
	}
	if why := checkTopicName(name); why != "" {
		return &configError{code: kerr.InvalidTopicException.Code, msg: why}
	}
	t, err := tn.catalog.refresh(ctx, name)
	if err != nil {
		return topicLookupError(name, err)
	}
	a := newTopicAlter(&gw.cfg, t)
	if cerr := fill(a); cerr != nil {
		return cerr
	}
	changed := a.changedTags()
	if len(changed) > 0 {
		if err := checkSpec(a.cfg, name, &a.next); err != nil {
			return invalidConfig("%s", err.Error())
		}
	}
	if validateOnly {
		return nil
	}
	if len(changed) > 0 {
		err := tn.dis.UpdateStreamTags(ctx, t.streamID, &disclient.StreamTagsRequest{Action: disclient.TagActionCreate, Tags: changed})
		tn.catalog.invalidate(name)
		if err != nil {
			gw.log.Warn().Err(err).Str("topic", name).Msg("changing the stream's config tags failed")
			return &configError{code: kafkaCodeForDIS(err), msg: err.Error()}
		}
		gw.log.Info().Str("topic", name).Str(configTimestampType, a.next.timestamps.withDefaults().typ).
			Str(configTimestampBefore, a.next.timestamps.withDefaults().beforeMax).
			Str(configTimestampAfter, a.next.timestamps.withDefaults().afterMax).
			Str(configMaxMessageBytes, topicConfigNamed(configMaxMessageBytes).current(a.cfg, &a.next)).
			Str(configRawHeaders, a.next.raw.withDefaults().headers).Str(configRawKeys, a.next.raw.withDefaults().keys).Msg("changed topic configs")
	}
	if a.next.retentionHours == a.cur.retentionHours {
		return nil
	}
	hours := a.next.retentionHours
	err = tn.dis.UpdateStream(ctx, &disclient.UpdateStreamRequest{StreamName: t.stream, DataDuration: &hours})
	tn.catalog.invalidate(name)
	if err != nil {
		gw.log.Warn().Err(err).Str("topic", name).Msg("UpdateStream failed")
		return &configError{code: kafkaCodeForDIS(err), msg: err.Error()}
	}
	gw.log.Info().Str("topic", name).Int32("retention_hours", hours).Msg("changed topic retention")
	return nil
}

// changedTags are the stream tags that record the timestamp configs,
// max.message.bytes and the dis.raw.* policies the alter changes. Each is written with its value, a
// default one included: the tag then says what a missing tag would.
func (a *topicAlter) changedTags() []disclient.Tag {
	cur, next := a.cur.timestamps.withDefaults(), a.next.timestamps.withDefaults()
	curRaw, nextRaw := a.cur.raw.withDefaults(), a.next.raw.withDefaults()
	mmb := topicConfigNamed(configMaxMessageBytes)
	var out []disclient.Tag
	for _, t := range []struct {
		key       string
		cur, next string
	}{
		{timestampTypeTagKey, cur.typ, next.typ},
		{timestampBeforeTagKey, cur.beforeMax, next.beforeMax},
		{timestampAfterTagKey, cur.afterMax, next.afterMax},
		{maxMessageBytesTagKey, mmb.current(a.cfg, &a.cur), mmb.current(a.cfg, &a.next)},
		{rawHeadersTagKey, curRaw.headers, nextRaw.headers},
		{rawKeysTagKey, curRaw.keys, nextRaw.keys},
	} {
		if t.cur != t.next {
			out = append(out, disclient.Tag{Key: t.key, Value: t.next})
		}
	}
	return out
}

// topicLookupError turns a failed catalog lookup into a resource error.
func topicLookupError(name string, err error) *configError {
	if errors.Is(err, errUnknownTopic) {
		return &configError{code: kerr.UnknownTopicOrPartition.Code, msg: "topic '" + name + "' does not exist"}
	}
	return &configError{code: kafkaCodeForDIS(err), msg: err.Error()}
}

// configEntry is one config as DescribeConfigs reports it.
type configEntry struct {
	name, value, def string
	source           kmsg.ConfigSource
	readOnly         bool
	typ              kmsg.ConfigType
	doc              string
}

// topicConfigEntries reports every topic config of t.
func topicConfigEntries(cfg *Config, t *topicMeta) []configEntry {
	s := specOf(t)
	entries := make([]configEntry, 0, len(topicConfigs))
	for i := range topicConfigs {
		c := &topicConfigs[i]
		e := configEntry{name: c.name, value: c.current(cfg, &s), def: c.def(cfg), source: kmsg.ConfigSourceDefaultConfig, readOnly: c.readOnly, typ: c.typ, doc: c.doc}
		if e.value != e.def {
			e.source = kmsg.ConfigSourceDynamicTopicConfig
		}
		entries = append(entries, e)
	}
	return entries
}

// brokerConfigEntries reports every broker config of this gateway.
func brokerConfigEntries(cfg *Config) []configEntry {
	entries := make([]configEntry, 0, len(brokerConfigs))
	for _, c := range brokerConfigs {
		e := configEntry{name: c.name, value: c.value(cfg), source: kmsg.ConfigSourceDefaultConfig, readOnly: true, typ: c.typ, doc: c.doc}
		e.def = e.value
		if c.fromFlags {
			e.source = kmsg.ConfigSourceStaticBrokerConfig
		}
		entries = append(entries, e)
	}
	return entries
}
