package topics

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// testConfigDefaults is the settings a gateway has by default.
func testConfigDefaults() *Config {
	return &Config{DefaultRecordFormat: FormatKafka, DefaultRetentionHours: 24, MaxRecordBytes: 1 << 20}
}

func TestTopicConfigTableIsSortedAndComplete(t *testing.T) {
	if !slices.IsSortedFunc(topicConfigs, func(a, b topicConfig) int { return strings.Compare(a.name, b.name) }) {
		t.Fatal("topicConfigs must be sorted by name: topicConfigNamed searches it")
	}
	var alterable []string
	for i := range topicConfigs {
		c := &topicConfigs[i]
		if topicConfigNamed(c.name) != c {
			t.Errorf("%s: lookup finds another entry", c.name)
		}
		if c.doc == "" || c.typ == kmsg.ConfigTypeUnknown || c.def == nil {
			t.Errorf("%s: needs doc, type and default", c.name)
		}
		if !c.readOnly {
			alterable = append(alterable, c.name)
		}
	}
	if want := []string{"cleanup.policy", "delete.retention.ms", "dis.raw.headers", "dis.raw.keys", "max.compaction.lag.ms", "max.message.bytes", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "retention.bytes", "retention.ms"}; !slices.Equal(alterable, want) {
		t.Errorf("alterable configs = %v, want %v", alterable, want)
	}
	if topicConfigNamed("no.such.config") != nil {
		t.Error("unknown name found")
	}
}

// TestCreateTopicConfigs checks the checks CreateTopics shares with the
// alter APIs, and that configs DIS decides are accepted and ignored.
func TestCreateTopicConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
		want        Spec
	}{
		{"retention.ms", "86400000", true, Spec{RetentionHours: 24}},
		{"retention.ms", "86400001", true, Spec{RetentionHours: 25}},
		{"retention.ms", "259200000", true, Spec{RetentionHours: 72}},
		{"retention.ms", "259200001", true, Spec{RetentionHours: 72, Keep: KeepSpec{retentionMs: "259200001"}}},
		{"retention.ms", "3600000", true, Spec{RetentionHours: 24, RetentionMs: 3600000}},
		{"retention.ms", "1", true, Spec{RetentionHours: 24, RetentionMs: 1}},
		{"retention.ms", "86399999", true, Spec{RetentionHours: 24, RetentionMs: 86399999}},
		{"retention.ms", "0", false, Spec{}},
		{"retention.ms", "-1", true, Spec{RetentionHours: 72, Keep: KeepSpec{retentionMs: "-1"}}},
		{"retention.ms", "-2", false, Spec{}},
		{"retention.ms", "a day", false, Spec{}},
		{"cleanup.policy", "delete", true, Spec{}},
		{"cleanup.policy", "compact", true, Spec{RetentionHours: 72, Keep: KeepSpec{cleanup: "compact", retentionMs: "0"}}},
		{"cleanup.policy", "delete,compact", true, Spec{RetentionHours: 72, Keep: KeepSpec{cleanup: "compact,delete", retentionMs: "0"}}},
		{"cleanup.policy", "", false, Spec{}},
		{"cleanup.policy", "none", false, Spec{}},
		{"retention.bytes", "1000", true, Spec{Keep: KeepSpec{retentionBytes: "1000"}}},
		{"retention.bytes", "-1", true, Spec{}},
		{"retention.bytes", "0", false, Spec{}},
		{"delete.retention.ms", "0", true, Spec{Keep: KeepSpec{deleteRetention: "0"}}},
		{"delete.retention.ms", "-1", false, Spec{}},
		{"min.compaction.lag.ms", "60000", true, Spec{Keep: KeepSpec{minLag: "60000"}}},
		{"min.compaction.lag.ms", "-1", false, Spec{}},
		{"max.compaction.lag.ms", "1", true, Spec{Keep: KeepSpec{maxLag: "1"}}},
		{"max.compaction.lag.ms", "0", false, Spec{}},
		{"min.cleanable.dirty.ratio", "0.10", true, Spec{Keep: KeepSpec{dirtyRatio: "0.1"}}},
		{"min.cleanable.dirty.ratio", "0.5", true, Spec{}},
		{"min.cleanable.dirty.ratio", "1.5", false, Spec{}},
		{"min.cleanable.dirty.ratio", "NaN", false, Spec{}},
		{"dis.record.format", "raw", true, Spec{Format: FormatRaw}},
		{"dis.record.format", "json", false, Spec{}},
		{"dis.stream.type", "ADVANCED", true, Spec{StreamType: disclient.StreamTypeAdvanced}},
		{"dis.stream.type", "FAST", false, Spec{}},
		{"segment.bytes", "1024", true, Spec{}},
		{"some.unknown.config", "x", true, Spec{}},
		{"message.timestamp.type", "LogAppendTime", true, Spec{Timestamps: TimestampSpec{typ: "LogAppendTime"}}},
		{"message.timestamp.type", "CreateTime", true, Spec{Timestamps: TimestampSpec{typ: "CreateTime"}}},
		{"message.timestamp.type", "logappendtime", false, Spec{}},
		{"message.timestamp.before.max.ms", "60000", true, Spec{Timestamps: TimestampSpec{beforeMax: "60000"}}},
		{"message.timestamp.before.max.ms", " 060000", true, Spec{Timestamps: TimestampSpec{beforeMax: "60000"}}},
		{"message.timestamp.before.max.ms", "0", true, Spec{Timestamps: TimestampSpec{beforeMax: "0"}}},
		{"message.timestamp.before.max.ms", "-1", false, Spec{}},
		{"message.timestamp.after.max.ms", "3600000", true, Spec{Timestamps: TimestampSpec{afterMax: "3600000"}}},
		{"message.timestamp.after.max.ms", "an hour", false, Spec{}},
		{"message.timestamp.after.max.ms", "9223372036854775808", false, Spec{}},
	} {
		var s Spec
		v := tc.value
		err := s.Apply(tc.name, &v)
		if (err == nil) != tc.ok {
			t.Errorf("%s=%s: err %v, want ok=%v", tc.name, tc.value, err, tc.ok)
			continue
		}
		if tc.ok && s != tc.want {
			t.Errorf("%s=%s: spec %+v, want %+v", tc.name, tc.value, s, tc.want)
		}
	}
}

func testTopic() *Meta {
	return &Meta{Name: "t", RetentionHours: 48, Format: FormatRaw, StreamType: disclient.StreamTypeCommon}
}

func TestTopicConfigEntries(t *testing.T) {
	cfg := testConfigDefaults()
	entries := cfg.Entries(testTopic())
	byName := map[string]ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	for _, tc := range []struct {
		name, value string
		source      kmsg.ConfigSource
		readOnly    bool
	}{
		{"retention.ms", "172800000", kmsg.ConfigSourceDynamicTopicConfig, false},
		{"dis.record.format", "raw", kmsg.ConfigSourceDynamicTopicConfig, true},
		{"dis.stream.type", "COMMON", kmsg.ConfigSourceDefaultConfig, true},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, false},
		{"max.message.bytes", "1048576", kmsg.ConfigSourceDefaultConfig, false},
		{"retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig, false},
		{"min.cleanable.dirty.ratio", "0.5", kmsg.ConfigSourceDefaultConfig, false},
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig, true},
	} {
		e, ok := byName[tc.name]
		if !ok {
			t.Errorf("%s missing", tc.name)
			continue
		}
		if e.Value != tc.value || e.Source != tc.source || e.ReadOnly != tc.readOnly {
			t.Errorf("%s = %q source %v read-only %v, want %q %v %v", tc.name, e.Value, e.Source, e.ReadOnly, tc.value, tc.source, tc.readOnly)
		}
	}
}

func TestTopicAlterSet(t *testing.T) {
	cfg := testConfigDefaults()
	for _, tc := range []struct {
		name, value string
		code        int16
		hours       int32
	}{
		{"retention.ms", "259200000", 0, 72},
		{"retention.ms", "90000001", 0, 26},
		{"retention.ms", "3600000", 0, 24},
		{"retention.ms", "0", kerr.InvalidConfig.Code, 48},
		{"cleanup.policy", "delete", 0, 48},
		{"cleanup.policy", "compact", 0, 72},
		{"retention.ms", "-1", 0, 72},
		{"dis.record.format", "raw", 0, 48},
		{"dis.record.format", "kafka", kerr.InvalidConfig.Code, 48},
		{"dis.stream.type", "COMMON", 0, 48},
		{"dis.stream.type", "ADVANCED", kerr.InvalidConfig.Code, 48},
		{"segment.bytes", "1073741824", 0, 48},
		{"segment.bytes", "1024", kerr.InvalidConfig.Code, 48},
		{"no.such.config", "1", kerr.InvalidConfig.Code, 48},
		{"message.timestamp.type", "CreateTime", 0, 48},
		{"message.timestamp.type", "LogAppendTime", 0, 48},
		{"message.timestamp.type", "logappendtime", kerr.InvalidConfig.Code, 48},
		{"message.timestamp.before.max.ms", "9223372036854775807", 0, 48},
		{"message.timestamp.before.max.ms", "60000", 0, 48},
		{"message.timestamp.after.max.ms", "-1", kerr.InvalidConfig.Code, 48},
	} {
		a := newAlter(cfg, testTopic())
		var code int16
		c, cerr := a.config(tc.name)
		if cerr == nil {
			cerr = a.set(c, tc.value)
		}
		if cerr != nil {
			code = cerr.Code
			if cerr.Msg == "" {
				t.Errorf("%s=%s: refusal without a message", tc.name, tc.value)
			}
		}
		if code != tc.code || a.next.RetentionHours != tc.hours {
			t.Errorf("%s=%s: code %d hours %d, want %d %d", tc.name, tc.value, code, a.next.RetentionHours, tc.code, tc.hours)
		}
		if a.next.Format != FormatRaw || a.next.StreamType != disclient.StreamTypeCommon {
			t.Errorf("%s=%s changed a creation-time config: %+v", tc.name, tc.value, a.next)
		}
		if c != nil && tc.code == 0 && strings.HasPrefix(tc.name, "message.timestamp.") && c.current(cfg, &a.next) != tc.value {
			t.Errorf("%s=%s: the alter holds %s", tc.name, tc.value, c.current(cfg, &a.next))
		}
	}
}

func TestReplaceTopicConfigsRevertsUnlisted(t *testing.T) {
	cfg := testConfigDefaults()
	a := newAlter(cfg, testTopic())
	if cerr := a.Replace([]kmsg.AlterConfigsRequestResourceConfig{{Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}}); cerr != nil {
		t.Fatal(cerr)
	}
	if a.next.RetentionHours != cfg.DefaultRetentionHours || a.next.Format != FormatRaw {
		t.Errorf("after replacement: %+v, want default retention and the creation-time format kept", a.next)
	}
	a = newAlter(cfg, testTopic())
	cerr := a.Replace([]kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("86400000")}, {Name: "retention.ms", Value: kmsg.StringPtr("90000000")}})
	if cerr == nil || cerr.Code != kerr.InvalidRequest.Code {
		t.Errorf("repeated name: %v, want INVALID_REQUEST", cerr)
	}
}

func TestChangeTopicConfigs(t *testing.T) {
	cfg := testConfigDefaults()
	op := func(name string, o kmsg.IncrementalAlterConfigOp, v *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: v}
	}
	for _, tc := range []struct {
		what  string
		op    kmsg.IncrementalAlterConfigsRequestResourceConfig
		code  int16
		hours int32
	}{
		{"set retention", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("86400000")), 0, 24},
		{"delete retention", op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil), 0, 24},
		{"set null", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, nil), kerr.InvalidRequest.Code, 48},
		{"append to a number", op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1")), kerr.InvalidConfig.Code, 48},
		{"append delete", op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("delete")), 0, 48},
		{"append compact", op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("compact")), 0, 72},
		{"subtract compact", op("cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("compact")), 0, 48},
		{"subtract delete", op("cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("delete")), kerr.InvalidConfig.Code, 48},
		{"delete format", op("dis.record.format", kmsg.IncrementalAlterConfigOpDelete, nil), kerr.InvalidConfig.Code, 48},
		{"delete a config disgw does not report", op("flush.messages", kmsg.IncrementalAlterConfigOpDelete, nil), 0, 48},
		{"set a config disgw does not report", op("flush.messages", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")), kerr.InvalidConfig.Code, 48},
		{"unknown op", op("retention.ms", 7, kmsg.StringPtr("86400000")), kerr.InvalidRequest.Code, 48},
	} {
		a := newAlter(cfg, testTopic())
		var code int16
		if cerr := a.Change([]kmsg.IncrementalAlterConfigsRequestResourceConfig{tc.op}); cerr != nil {
			code = cerr.Code
		}
		if code != tc.code || a.next.RetentionHours != tc.hours {
			t.Errorf("%s: code %d hours %d, want %d %d", tc.what, code, a.next.RetentionHours, tc.code, tc.hours)
		}
	}
}

// TestChangeDeletesWhatMirrorMakerSends takes the DELETEs MirrorMaker 2
// sends for a Kafka 4.4 topic at its defaults: configs disgw reports go
// back to their defaults, the others change nothing, and a name twice is
// still refused.
func TestChangeDeletesWhatMirrorMakerSends(t *testing.T) {
	cfg := testConfigDefaults()
	del := func(names ...string) []kmsg.IncrementalAlterConfigsRequestResourceConfig {
		var out []kmsg.IncrementalAlterConfigsRequestResourceConfig
		for _, n := range names {
			out = append(out, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: n, Op: kmsg.IncrementalAlterConfigOpDelete})
		}
		return out
	}
	a := newAlter(cfg, testTopic())
	if cerr := a.Change(del("compression.type", "errors.deadletterqueue.group.enable", "retention.ms", "segment.jitter.ms", "remote.storage.enable")); cerr != nil {
		t.Fatalf("MirrorMaker's DELETEs refused: %v", cerr)
	}
	if a.next.RetentionHours != cfg.DefaultRetentionHours || len(a.changedTags()) != 0 {
		t.Errorf("after the DELETEs: %+v, tags %v; want the defaults", a.next, a.changedTags())
	}
	a = newAlter(cfg, testTopic())
	if cerr := a.Change(del("flush.ms", "flush.ms")); cerr == nil || cerr.Code != kerr.InvalidRequest.Code {
		t.Errorf("an unknown name deleted twice: %v, want INVALID_REQUEST", cerr)
	}
}

func TestChangedList(t *testing.T) {
	for _, tc := range []struct {
		list, values string
		add          bool
		want         string
	}{
		{"delete", "delete", true, "delete"},
		{"delete", "compact", true, "delete,compact"},
		{"delete", "compact", false, "delete"},
		{"delete", "delete", false, ""},
		{"", "delete", true, "delete"},
	} {
		if got := changedList(tc.list, tc.values, tc.add); got != tc.want {
			t.Errorf("changedList(%q, %q, %v) = %q, want %q", tc.list, tc.values, tc.add, got, tc.want)
		}
	}
}

// Produce checks CreateTime record timestamps against the topic's
// message.timestamp.*.max.ms as Kafka does; LogAppendTime takes any.
func TestTimestampPolicy(t *testing.T) {
	p := TimestampPolicy{beforeMax: 1000, afterMax: 500}
	for _, c := range []struct {
		ts   int64
		want bool
	}{{10_000, true}, {9_000, true}, {8_999, false}, {10_500, true}, {10_501, false}} {
		if got := p.Allows(c.ts, 10_000); got != c.want {
			t.Errorf("timestamp %d at 10000: allowed %v, want %v", c.ts, got, c.want)
		}
	}
	if !(TimestampPolicy{LogAppendTime: true}).Allows(0, 10_000) {
		t.Error("LogAppendTime refused a timestamp")
	}
	def := (&Config{}).TimestampPolicy(&Meta{Format: FormatKafka})
	if def.LogAppendTime || !def.Allows(0, 1<<62) || !def.Allows(1<<62, 0) {
		t.Errorf("the default policy %+v refuses timestamps Kafka 3 takes", def)
	}
}

// TestTimestampConfigsFromTags checks that the timestamp configs chosen at
// creation survive the trip through the stream's tags, and that
// DescribeConfigs and Produce then see them.
func TestTimestampConfigsFromTags(t *testing.T) {
	if tags := (TimestampSpec{}).tags(); len(tags) != 0 {
		t.Errorf("default timestamp configs wrote tags %+v", tags)
	}
	var s Spec
	for name, v := range map[string]string{"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "0"} {
		if err := s.Apply(name, &v); err != nil {
			t.Fatalf("%s=%s: %v", name, v, err)
		}
	}
	tags := append([]disclient.Tag{{Key: formatTagKey, Value: "kafka"}}, s.Timestamps.tags()...)
	tm := &Meta{Format: formatFromTags(tags), RetentionHours: 24, Timestamps: timestampsFromTags(tags)}
	if tm.Timestamps != s.Timestamps {
		t.Fatalf("tags %+v read back as %+v, want %+v", tags, tm.Timestamps, s.Timestamps)
	}
	p := testConfigDefaults().TimestampPolicy(tm)
	if !p.LogAppendTime || p.beforeMax != 60000 || p.afterMax != 0 {
		t.Errorf("policy %+v, want LogAppendTime, 60000, 0", p)
	}
	byName := map[string]ConfigEntry{}
	for _, e := range testConfigDefaults().Entries(tm) {
		byName[e.Name] = e
	}
	for name, want := range map[string]string{"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "0"} {
		if e := byName[name]; e.Value != want || e.Source != kmsg.ConfigSourceDynamicTopicConfig || e.ReadOnly {
			t.Errorf("%s = %q source %v read-only %v, want %q DYNAMIC_TOPIC_CONFIG alterable", name, e.Value, e.Source, e.ReadOnly, want)
		}
	}
	bad := timestampsFromTags([]disclient.Tag{{Key: timestampTypeTagKey, Value: "Whenever"}, {Key: timestampBeforeTagKey, Value: "-5"}})
	if bad != (TimestampSpec{}) {
		t.Errorf("tags with values the configs do not take read as %+v, want the defaults", bad)
	}
	def := map[string]ConfigEntry{}
	for _, e := range testConfigDefaults().Entries(testTopic()) {
		def[e.Name] = e
	}
	for name, want := range map[string]string{"message.timestamp.type": "CreateTime", "message.timestamp.before.max.ms": "9223372036854775807", "message.timestamp.after.max.ms": "9223372036854775807"} {
		if e := def[name]; e.Value != want || e.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("untagged topic: %s = %q source %v, want %q DEFAULT_CONFIG", name, e.Value, e.Source, want)
		}
	}
}
