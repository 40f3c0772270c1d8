package topics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
// dis.raw.headers and dis.raw.keys (stream tags too) can change as well, and
// so can cleanup.policy and the other keeping configs (keep.go), held by a
// kept topic's keep stream; dis.record.format and dis.stream.type are chosen at creation; the rest
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
	value func(cfg *Config, s *Spec) string
	// def is the value a topic created through this gateway gets unless
	// its creator says otherwise.
	def func(cfg *Config) string
	// set checks v and records it in s; nil means DIS fixes the value and
	// CreateTopics ignores it.
	set func(s *Spec, v string) error
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
		name: configCleanupPolicy, typ: kmsg.ConfigTypeList,
		doc:   "delete, compact or compact,delete. A compact topic keeps the latest record of every key, and is kept: the gateway writes its live records again before DIS expires them (kafka topics only). It cannot go back to delete alone.",
		value: func(_ *Config, s *Spec) string { return or(s.Keep.cleanup, policyDelete) },
		def:   fixedValue(policyDelete),
		set: func(s *Spec, v string) (err error) {
			if s.Keep.cleanup, err = parseCleanupPolicy(v); err != nil {
				return err
			}
			if s.Kept() {
				// compact moves retention.ms to the keep stream, and
				// leaving compact may move it back.
				s.placeRetention(s.retention())
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
		name: configDeleteRetention, typ: kmsg.ConfigTypeLong,
		doc:   "How long a tombstone of a compacted topic stays after it was first compacted, in ms.",
		value: func(_ *Config, s *Spec) string { return or(s.Keep.deleteRetention, defDeleteRetention) },
		def:   fixedValue(defDeleteRetention),
		set: func(s *Spec, v string) (err error) {
			s.Keep.deleteRetention, err = parseKeepLong(configDeleteRetention, v, 0, defDeleteRetention)
			return err
		},
	},
	{
		name: configRawHeaders, typ: kmsg.ConfigTypeString,
		doc:   "raw topics: what happens to a record's headers, which a DIS record cannot hold. drop (the default) writes the record without them, logged once per producer and partition and counted in disgw_raw_headers_dropped_total; refuse fails the batch with INVALID_RECORD. kafka topics keep headers.",
		value: func(_ *Config, s *Spec) string { return s.Raw.withDefaults().headers },
		def:   fixedValue(policyDrop),
		set: func(s *Spec, v string) (err error) {
			s.Raw.headers, err = parseRawPolicy(configRawHeaders, v)
			return err
		},
	},
	{
		name: configRawKeys, typ: kmsg.ConfigTypeString,
		doc:   "raw topics: what happens to a key a DIS partition_key cannot hold (empty, not UTF-8, or over 256 bytes). drop (the default) writes the record with a null key, logged once per producer and partition and counted in disgw_raw_keys_dropped_total; refuse fails the batch with INVALID_RECORD. kafka topics keep keys.",
		value: func(_ *Config, s *Spec) string { return s.Raw.withDefaults().keys },
		def:   fixedValue(policyDrop),
		set: func(s *Spec, v string) (err error) {
			s.Raw.keys, err = parseRawPolicy(configRawKeys, v)
			return err
		},
	},
	{
		name: ConfigRecordFormat, typ: kmsg.ConfigTypeString, readOnly: true,
		doc:   "How Kafka records map onto DIS records: kafka (one DIS record per Kafka record batch, as the producer sent it) or raw (one DIS record per Kafka record, value only). Chosen at creation.",
		value: func(_ *Config, s *Spec) string { return string(s.Format) },
		def:   func(cfg *Config) string { return string(cfg.DefaultRecordFormat) },
		set: func(s *Spec, v string) error {
			if f := RecordFormat(v); f != FormatKafka && f != FormatRaw {
				return fmt.Errorf("dis.record.format must be %q or %q", FormatKafka, FormatRaw)
			}
			s.Format = RecordFormat(v)
			return nil
		},
	},
	{
		name: configStreamType, typ: kmsg.ConfigTypeString, readOnly: true,
		doc: "The DIS stream type, COMMON or ADVANCED. Chosen at creation.",
		value: func(_ *Config, s *Spec) string {
			if s.StreamType == "" {
				return disclient.StreamTypeCommon
			}
			return s.StreamType
		},
		def: fixedValue(disclient.StreamTypeCommon),
		set: func(s *Spec, v string) error {
			if v != disclient.StreamTypeCommon && v != disclient.StreamTypeAdvanced {
				return fmt.Errorf("dis.stream.type must be %s or %s", disclient.StreamTypeCommon, disclient.StreamTypeAdvanced)
			}
			s.StreamType = v
			return nil
		},
	},
	{
		name: configMaxCompactionLag, typ: kmsg.ConfigTypeLong,
		doc:   "The longest a record of a compacted topic stays uncompacted, in ms.",
		value: func(_ *Config, s *Spec) string { return or(s.Keep.maxLag, defMaxCompactionLag) },
		def:   fixedValue(defMaxCompactionLag),
		set: func(s *Spec, v string) (err error) {
			s.Keep.maxLag, err = parseKeepLong(configMaxCompactionLag, v, 1, defMaxCompactionLag)
			return err
		},
	},
	{
		name: configMaxMessageBytes, typ: kmsg.ConfigTypeInt,
		doc: "The largest record batch a kafka-format topic takes, 0 to 1073741824 (a batch larger than one DIS record is stored in several); a raw topic takes records of one DIS record at most (1 MiB unless the gateway is configured otherwise) and keeps this default.",
		value: func(cfg *Config, s *Spec) string {
			if s.MaxMessageBytes == "" {
				return strconv.Itoa(cfg.MaxRecordBytes)
			}
			return s.MaxMessageBytes
		},
		def: func(cfg *Config) string { return strconv.Itoa(cfg.MaxRecordBytes) },
		set: func(s *Spec, v string) (err error) {
			s.MaxMessageBytes, err = parseMaxMessageBytes(v)
			return err
		},
	},
	{
		name: configTimestampAfter, typ: kmsg.ConfigTypeLong,
		doc:   "How far in the future a CreateTime record's timestamp may be, in ms (Kafka 3's default: any distance); Produce answers INVALID_TIMESTAMP beyond it.",
		value: func(_ *Config, s *Spec) string { return s.Timestamps.withDefaults().afterMax },
		def:   fixedValue(maxTimestampWindow),
		set: func(s *Spec, v string) (err error) {
			s.Timestamps.afterMax, err = parseTimestampWindow(configTimestampAfter, v)
			return err
		},
	},
	{
		name: configTimestampBefore, typ: kmsg.ConfigTypeLong,
		doc:   "How old a CreateTime record's timestamp may be, in ms (Kafka's default: any age); Produce answers INVALID_TIMESTAMP beyond it.",
		value: func(_ *Config, s *Spec) string { return s.Timestamps.withDefaults().beforeMax },
		def:   fixedValue(maxTimestampWindow),
		set: func(s *Spec, v string) (err error) {
			s.Timestamps.beforeMax, err = parseTimestampWindow(configTimestampBefore, v)
			return err
		},
	},
	{
		name: configTimestampType, typ: kmsg.ConfigTypeString,
		doc:   "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the time the gateway appends it.",
		value: func(_ *Config, s *Spec) string { return s.Timestamps.withDefaults().typ },
		def:   fixedValue(timestampCreateTime),
		set: func(s *Spec, v string) error {
			if v != timestampCreateTime && v != timestampLogAppendTime {
				return fmt.Errorf("%s must be %s or %s", configTimestampType, timestampCreateTime, timestampLogAppendTime)
			}
			s.Timestamps.typ = v
			return nil
		},
	},
	{
		name: configMinCleanableRatio, typ: kmsg.ConfigTypeDouble,
		doc:   "Kafka's cleaner threshold, 0 to 1; kept for clients that set it.",
		value: func(_ *Config, s *Spec) string { return or(s.Keep.dirtyRatio, defMinCleanableRatio) },
		def:   fixedValue(defMinCleanableRatio),
		set: func(s *Spec, v string) (err error) {
			s.Keep.dirtyRatio, err = parseDirtyRatio(v)
			return err
		},
	},
	{
		name: configMinCompactionLag, typ: kmsg.ConfigTypeLong,
		doc:   "The least time a record of a compacted topic stays uncompacted, in ms.",
		value: func(_ *Config, s *Spec) string { return or(s.Keep.minLag, defMinCompactionLag) },
		def:   fixedValue(defMinCompactionLag),
		set: func(s *Spec, v string) (err error) {
			s.Keep.minLag, err = parseKeepLong(configMinCompactionLag, v, 0, defMinCompactionLag)
			return err
		},
	},
	{
		name: "min.insync.replicas", typ: kmsg.ConfigTypeInt, readOnly: true,
		doc: "DIS replicates every write itself; Kafka sees one replica.",
		def: fixedValue("1"),
	},
	{
		name: configRetentionBytes, typ: kmsg.ConfigTypeLong,
		doc:   "-1 or the most bytes a partition of a kept cleanup.policy delete topic keeps, dropped oldest first when the gateway rewrites it; DIS itself retains by age only.",
		value: func(_ *Config, s *Spec) string { return or(s.Keep.retentionBytes, defRetentionBytes) },
		def:   fixedValue(defRetentionBytes),
		set: func(s *Spec, v string) (err error) {
			s.Keep.retentionBytes, err = parseRetentionBytes(v)
			return err
		},
	},
	{
		name: configRetentionMs, typ: kmsg.ConfigTypeLong,
		doc: "DIS data_duration in whole hours (rounded up), 24 to 72 hours; below 24 hours the gateway moves " +
			"the log start past older batches itself (kafka topics), with the stream kept 24 hours; -1 (for ever) or over 72 hours, " +
			"and on a compacted topic, the topic is kept: the gateway writes its live records again before DIS expires them (kafka topics).",
		value: func(_ *Config, s *Spec) string { return strconv.FormatInt(s.retention(), 10) },
		def:   func(cfg *Config) string { return strconv.FormatInt(int64(cfg.DefaultRetentionHours)*hourMs, 10) },
		set: func(s *Spec, v string) error {
			ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("retention.ms %q is not a number", v)
			}
			if ms != -1 && ms < 1 {
				return fmt.Errorf("retention.ms %s must be -1 (for ever) or at least 1 ms", v)
			}
			s.placeRetention(ms)
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

// Topic configs understood at creation.
const (
	configRetentionMs   = "retention.ms"
	configCleanupPolicy = "cleanup.policy"
	// ConfigRecordFormat is also the broker config that holds the
	// format of topics created through this gateway.
	ConfigRecordFormat = "dis.record.format"
	configStreamType   = "dis.stream.type"
)

// Spec is what a topic's configs ask of its stream: CreateTopics fills one
// from the request (Apply) and creates the stream from it, the alter APIs
// change the one an existing topic's stream has.
type Spec struct {
	RetentionHours int32
	// RetentionMs is a retention.ms below DIS's shortest retention, which
	// the gateway honours itself (docs/design.md §12); 0 when DIS's
	// data_duration is the retention.
	RetentionMs int64
	Format      RecordFormat
	StreamType  string
	Timestamps  TimestampSpec
	// MaxMessageBytes is max.message.bytes in canonical text, "" when
	// not set (the DIS record limit).
	MaxMessageBytes string
	Raw             RawSpec
	// Keep is the keeping configs: in the keep stream's tags for a kept
	// topic (Kept), the ones its own stream has room for otherwise.
	Keep KeepSpec
}

// configTags are the stream tags that record the configs set in s.
func (s *Spec) configTags() []disclient.Tag {
	tags := s.Timestamps.tags()
	if s.RetentionMs > 0 {
		tags = append(tags, disclient.Tag{Key: retentionMsTagKey, Value: strconv.FormatInt(s.RetentionMs, 10)})
	}
	if s.MaxMessageBytes != "" {
		tags = append(tags, disclient.Tag{Key: maxMessageBytesTagKey, Value: s.MaxMessageBytes})
	}
	tags = append(tags, s.Raw.tags()...)
	return append(tags, s.topicKeep().tags()...)
}

// Apply takes one topic config at creation, checked by the same table
// (topicConfigs) the alter APIs use. Configs DIS decides and names disgw does
// not know are accepted and ignored, so creation scripts written for Kafka
// keep working; DescribeConfigs then shows what DIS really does.
func (s *Spec) Apply(name string, value *string) error {
	if value == nil {
		return nil
	}
	c := topicConfigNamed(name)
	if c == nil || c.set == nil {
		return nil
	}
	return c.set(s, *value)
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

// MaxMessageBytes is the largest batch t takes, which Produce checks each
// batch against.
func (cfg *Config) MaxMessageBytes(t *Meta) int {
	spec := specOf(t)
	n, err := strconv.Atoi(topicConfigNamed(configMaxMessageBytes).current(cfg, &spec))
	if err != nil {
		return cfg.MaxRecordBytes
	}
	return n
}

// maxStreamTags is how many tags DIS lets a stream have.
const maxStreamTags = 10

// CheckSpec refuses configs the topic's record format cannot keep, and
// config tags the stream has no room for: its Kafka name may take six.
// CreateTopics and the alter APIs check with it before DIS is called.
func (cfg *Config) CheckSpec(name string, s *Spec) error {
	if s.Format == FormatKafka && s.Raw.withDefaults() != (RawSpec{}).withDefaults() {
		return fmt.Errorf("%s and %s need dis.record.format raw: a kafka topic keeps headers and keys as sent", configRawHeaders, configRawKeys)
	}
	if s.Format != FormatKafka {
		if s.RetentionMs > 0 {
			return fmt.Errorf("retention.ms below 24 hours needs dis.record.format kafka: the gateway keeps it by moving the log start, and a raw topic's offsets are DIS's sequence numbers")
		}
		if s.Timestamps.withDefaults() != (TimestampSpec{}).withDefaults() {
			return errors.New("the message.timestamp.* configs need dis.record.format kafka: a raw topic keeps no Kafka timestamps to check")
		}
		if s.MaxMessageBytes != "" && s.MaxMessageBytes != strconv.Itoa(cfg.MaxRecordBytes) {
			return fmt.Errorf("%s needs dis.record.format kafka: a raw topic stores each record in one DIS record, at most %d bytes", configMaxMessageBytes, cfg.MaxRecordBytes)
		}
	}
	if err := s.checkKeep(); err != nil {
		return err
	}
	if n := 1 + len(topicNameTags(name)) + len(s.configTags()); n > maxStreamTags {
		return fmt.Errorf("the topic's configs and its %d-character name need %d stream tags, more than the %d DIS allows: leave a config at its default or use a shorter name", len(name), n, maxStreamTags)
	}
	return nil
}

// TimestampSpec is a topic's message.timestamp.* configs, each in its
// canonical text; the zero value is Kafka's defaults, which is what a topic
// whose stream carries no timestamp tags has. Produce reads it through
// Config.TimestampPolicy.
type TimestampSpec struct {
	typ, beforeMax, afterMax string
}

// withDefaults fills the configs left unset with Kafka's defaults.
func (ts TimestampSpec) withDefaults() TimestampSpec {
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

// TimestampPolicy is what a topic's message.timestamp.* configs allow,
// read once per produced batch rather than per record.
type TimestampPolicy struct {
	// LogAppendTime stamps each batch with the time it is appended.
	LogAppendTime       bool
	beforeMax, afterMax int64
}

// TimestampPolicy reads t's timestamp configs from the config table.
func (cfg *Config) TimestampPolicy(t *Meta) TimestampPolicy {
	spec := specOf(t)
	num := func(name string) int64 {
		n, err := strconv.ParseInt(topicConfigNamed(name).current(cfg, &spec), 10, 64)
		if err != nil {
			return math.MaxInt64
		}
		return n
	}
	return TimestampPolicy{
		LogAppendTime: topicConfigNamed(configTimestampType).current(cfg, &spec) == timestampLogAppendTime,
		beforeMax:     num(configTimestampBefore),
		afterMax:      num(configTimestampAfter),
	}
}

// Allows reports whether a CreateTime record timestamp ts is within the
// policy at now, as Kafka checks each record.
func (p TimestampPolicy) Allows(ts, now int64) bool {
	if p.LogAppendTime {
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
func (c *topicConfig) current(cfg *Config, s *Spec) string {
	if c.value == nil {
		return c.def(cfg)
	}
	return c.value(cfg, s)
}

// specOf is the shape of an existing topic's stream.
func specOf(t *Meta) Spec {
	return Spec{RetentionHours: t.RetentionHours, RetentionMs: t.RetentionMs, Format: t.Format, StreamType: t.StreamType, Timestamps: t.Timestamps, MaxMessageBytes: t.MaxMessageBytes, Raw: t.Raw, Keep: t.keep}
}

// ConfigError is a refusal of one resource in a config request: Kafka
// answers each resource on its own, with an error code and a message.
type ConfigError struct {
	Code int16
	Msg  string
}

// Error is the message the resource is answered with.
func (e *ConfigError) Error() string { return e.Msg }

// InvalidConfig refuses a resource whose config values are wrong.
func InvalidConfig(format string, args ...any) *ConfigError {
	return &ConfigError{Code: kerr.InvalidConfig.Code, Msg: fmt.Sprintf(format, args...)}
}

// InvalidRequest refuses a resource the request states wrongly (a config
// named twice, a change that cannot apply).
func InvalidRequest(format string, args ...any) *ConfigError {
	return &ConfigError{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf(format, args...)}
}

// LookupError turns a failed catalog lookup of topic name into the error
// a config request's resource is answered with.
func (c *Catalog) LookupError(name string, err error) *ConfigError {
	if errors.Is(err, ErrUnknownTopic) {
		return &ConfigError{Code: kerr.UnknownTopicOrPartition.Code, Msg: "topic '" + name + "' does not exist"}
	}
	return &ConfigError{Code: c.d.KafkaCode(err), Msg: err.Error()}
}

// ConfigEntry is one config as DescribeConfigs (and CreateTopics v5+)
// reports it: topic configs come from here, broker and group configs from
// the gateway, in the one shape the handlers put on the wire.
type ConfigEntry struct {
	Name, Value, Def string
	Source           kmsg.ConfigSource
	ReadOnly         bool
	Type             kmsg.ConfigType
	Doc              string
}

// Entries reports every topic config of t.
func (cfg *Config) Entries(t *Meta) []ConfigEntry {
	s := specOf(t)
	return cfg.SpecEntries(&s)
}

// SpecEntries reports every topic config of a topic of configs s, such as
// CreateTopics answers for a topic it validates only.
func (cfg *Config) SpecEntries(s *Spec) []ConfigEntry {
	entries := make([]ConfigEntry, 0, len(topicConfigs))
	for i := range topicConfigs {
		c := &topicConfigs[i]
		e := ConfigEntry{Name: c.name, Value: c.current(cfg, s), Def: c.def(cfg), Source: kmsg.ConfigSourceDefaultConfig, ReadOnly: c.readOnly, Type: c.typ, Doc: c.doc}
		if e.Value != e.Def {
			e.Source = kmsg.ConfigSourceDynamicTopicConfig
		}
		entries = append(entries, e)
	}
	return entries
}
