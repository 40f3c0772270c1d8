package topics

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/gateway/keep"
)

// applyAll applies configs to a spec with the gateway's defaults, as
// CreateTopics does.
func applyAll(t *testing.T, format RecordFormat, configs map[string]string) (Spec, error) {
	t.Helper()
	s := Spec{RetentionHours: 24, Format: format}
	// Kafka applies a request's configs in any order; sorted, compact
	// comes before retention.ms and after it in the cases below.
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := configs[n]
		if err := s.Apply(n, &v); err != nil {
			return s, err
		}
	}
	return s, testConfigDefaults().CheckSpec("t", &s)
}

// TestKeptConfigs checks which configs make a topic kept, where its
// retention goes, and what the keep stream's tags say.
func TestKeptConfigs(t *testing.T) {
	for _, tc := range []struct {
		what    string
		configs map[string]string
		kept    bool
		hours   int32
		policy  keep.Policy
	}{
		{"compact", map[string]string{"cleanup.policy": "compact"}, true, 72,
			keep.Policy{Compact: true, RetentionMs: 86400000, RetentionBytes: -1, DeleteRetentionMs: 86400000, MaxCompactionLagMs: 1<<63 - 1}},
		{"for ever", map[string]string{"cleanup.policy": "delete", "retention.ms": "-1"}, true, 72,
			keep.Policy{Delete: true, RetentionMs: -1, RetentionBytes: -1, DeleteRetentionMs: 86400000, MaxCompactionLagMs: 1<<63 - 1}},
		{"a week", map[string]string{"retention.ms": "604800000", "retention.bytes": "1073741824"}, true, 72,
			keep.Policy{Delete: true, RetentionMs: 604800000, RetentionBytes: 1 << 30, DeleteRetentionMs: 86400000, MaxCompactionLagMs: 1<<63 - 1}},
		{"compact,delete", map[string]string{"cleanup.policy": "delete,compact", "retention.ms": "3600000", "delete.retention.ms": "1000", "min.compaction.lag.ms": "5", "max.compaction.lag.ms": "600000"}, true, 72,
			keep.Policy{Compact: true, Delete: true, RetentionMs: 3600000, RetentionBytes: -1, DeleteRetentionMs: 1000, MinCompactionLagMs: 5, MaxCompactionLagMs: 600000}},
		{"two days", map[string]string{"retention.ms": "172800000"}, false, 48, keep.Policy{}},
		{"an hour", map[string]string{"retention.ms": "3600000", "cleanup.policy": "delete"}, false, 24, keep.Policy{}},
	} {
		s, err := applyAll(t, FormatKafka, tc.configs)
		if err != nil {
			t.Errorf("%s: %v", tc.what, err)
			continue
		}
		if s.Kept() != tc.kept || s.RetentionHours != tc.hours {
			t.Errorf("%s: kept %v, %d h; want %v, %d h", tc.what, s.Kept(), s.RetentionHours, tc.kept, tc.hours)
		}
		if !tc.kept {
			continue
		}
		// The keep stream's tags hold the policy, within DIS's rules.
		tags := s.Keep.tags()
		for _, tg := range tags {
			if len(tg.Key) > 36 || len(tg.Value) > maxTagValueLen || strings.ContainsAny(tg.Value, ", ") {
				t.Errorf("%s: tag %+v breaks DIS's tag rules", tc.what, tg)
			}
		}
		got := keepSpecFromTags(tags).policy("k")
		if got.Policy != tc.policy || got.Stream != "k" || got.MinCleanableDirtyRatio != 0.5 {
			t.Errorf("%s: tags %+v read back as %+v, want %+v", tc.what, tags, got, tc.policy)
		}
		for _, tg := range s.configTags() {
			if tg.Key == cleanupPolicyTagKey || tg.Key == retentionBytesTagKey || tg.Key == retentionMsTagKey {
				t.Errorf("%s: the topic's own stream got the keeping tag %+v", tc.what, tg)
			}
		}
	}
	for _, tc := range []struct {
		what    string
		configs map[string]string
	}{
		{"raw compact", map[string]string{"cleanup.policy": "compact", "dis.record.format": "raw"}},
		{"raw for ever", map[string]string{"retention.ms": "-1", "dis.record.format": "raw"}},
		{"lags crossed", map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}},
	} {
		if _, err := applyAll(t, FormatKafka, tc.configs); err == nil {
			t.Errorf("%s: accepted", tc.what)
		}
	}
}

func TestKeepStreamName(t *testing.T) {
	n := KeepStreamName("orders")
	if !strings.HasPrefix(n, "disgw-keep-") || len(n) != len("disgw-keep-")+16 || !isKeepStreamName(n) {
		t.Errorf("KeepStreamName(orders) = %q", n)
	}
	for _, topic := range []string{"keep", "disgw-keep-0123456789abcdef", "keep.x", strings.Repeat("k", 249)} {
		if s := StreamName(topic); isKeepStreamName(s) {
			t.Errorf("topic %q has the stream %q, named as a keep stream", topic, s)
		}
	}
	if isKeepStreamName("disgw-keep-0123456789abcdeg") || isKeepStreamName("disgw-keep-01") {
		t.Error("a name that is no keep stream's taken for one")
	}
}

// TestKeepCatalog creates, lists, alters, grows and deletes kept topics
// through the catalog over the embedded DIS.
func TestKeepCatalog(t *testing.T) {
	dis := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	ctx := context.Background()
	c := testCatalog(dis)
	create := func(name string, configs map[string]string) {
		t.Helper()
		s, err := applyAll(t, FormatKafka, configs)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, name, 2, &s, s.Format); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	create("compacted", map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.2"})
	create("plain", nil)
	create("long", map[string]string{"retention.ms": "259200000"})

	k, err := c.Keep(ctx, "compacted")
	if err != nil || !k.Kept() || !k.Compact || k.Delete || k.MinCleanableDirtyRatio != 0.2 || k.Stream != KeepStreamName("compacted") {
		t.Fatalf("Keep(compacted) = %+v, %v", k, err)
	}
	if d, err := dis.DescribeStream(ctx, k.Stream, "", 10); err != nil || len(d.Partitions) != 2 || d.RetentionPeriod != 72 {
		t.Fatalf("keep stream: %+v, %v", d, err)
	}
	for _, n := range []string{"plain", "long"} {
		if k, err := c.Keep(ctx, n); err != nil || k.Kept() {
			t.Errorf("Keep(%s) = %+v, %v: not kept", n, k, err)
		}
	}
	listed, err := c.List(ctx)
	if err != nil || !slices.Equal(listed, []string{"compacted", "long", "plain"}) {
		t.Errorf("List = %v, %v", listed, err)
	}

	// Making a topic kept creates its keep stream; the keeping configs
	// then change in its tags; going back is refused.
	alter := func(name string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *ConfigError {
		return c.Alter(ctx, name, false, func(a *Alter) *ConfigError { return a.Change(configs) })
	}
	set := func(n, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: n, Op: kmsg.IncrementalAlterConfigOpSet, Value: &v}
	}
	if cerr := alter("long", set("retention.ms", "-1")); cerr != nil {
		t.Fatal(cerr)
	}
	if k, err := c.Keep(ctx, "long"); err != nil || !k.Kept() || k.RetentionMs != -1 || !k.Delete {
		t.Errorf("long after retention.ms -1: %+v, %v", k, err)
	}
	if cerr := alter("compacted", set("delete.retention.ms", "5000"), kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("delete")}); cerr != nil {
		t.Fatal(cerr)
	}
	if k, err := c.Keep(ctx, "compacted"); err != nil || !k.Compact || !k.Delete || k.DeleteRetentionMs != 5000 {
		t.Errorf("compacted after the alter: %+v, %v", k, err)
	}
	if cerr := alter("compacted", set("cleanup.policy", "delete")); cerr == nil || cerr.Code != kerr.InvalidConfig.Code {
		t.Errorf("un-keeping: %v, want INVALID_CONFIG", cerr)
	}
	if cerr := alter("plain", set("retention.bytes", "1000")); cerr != nil {
		t.Fatal(cerr)
	}
	if tm, err := c.Get(ctx, "plain"); err != nil || tm.Keep.Kept() || tm.keep.retentionBytes != "1000" {
		t.Errorf("plain after retention.bytes: %+v, %v", tm, err)
	}

	tm, err := c.Get(ctx, "compacted")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.GrowKeep(ctx, tm, 3); err != nil {
		t.Fatal(err)
	}
	if d, err := dis.DescribeStream(ctx, tm.Keep.Stream, "", 10); err != nil || len(d.Partitions) != 3 {
		t.Fatalf("grown keep stream: %+v, %v", d, err)
	}

	// A keep stream left without its topic is replaced by a new topic of
	// the name, and deleted with the topic.
	if err := dis.DeleteStream(ctx, "compacted"); err != nil {
		t.Fatal(err)
	}
	c.Invalidate("compacted")
	create("compacted", map[string]string{"cleanup.policy": "compact"})
	if k, err := c.Keep(ctx, "compacted"); err != nil || k.Delete || k.DeleteRetentionMs != 86400000 {
		t.Errorf("re-created: %+v, %v", k, err)
	}
	s, _ := applyAll(t, FormatKafka, map[string]string{"cleanup.policy": "compact"})
	if err := c.Create(ctx, "compacted", 1, &s, FormatKafka); !disclient.IsCode(err, disclient.CodeStreamExists) {
		t.Errorf("creating an existing kept topic: %v", err)
	}
	if d, err := dis.DescribeStream(ctx, tm.Keep.Stream, "", 10); err != nil || len(d.Partitions) != 2 {
		t.Errorf("an existing topic's keep stream was replaced: %+v, %v", d, err)
	}
	tm, _ = c.Get(ctx, "compacted")
	if err := dis.DeleteStream(ctx, "compacted"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteKeep(ctx, "compacted", tm); err != nil {
		t.Fatal(err)
	}
	if _, err := dis.DescribeStream(ctx, tm.Keep.Stream, "", 1); !disclient.IsCode(err, disclient.CodeStreamNotFound) {
		t.Errorf("keep stream after DeleteKeep: %v", err)
	}
}

// taglessDIS lists streams without their tags, as DIS may, and counts the
// keep streams described.
type taglessDIS struct {
	disclient.API
	keepDescribes int
}

func (d *taglessDIS) ListStreams(ctx context.Context, limit int, start string) (*disclient.ListStreamsResponse, error) {
	resp, err := d.API.ListStreams(ctx, limit, start)
	if err == nil {
		resp.StreamInfoList = nil
	}
	return resp, err
}

func (d *taglessDIS) DescribeStream(ctx context.Context, name, start string, limit int) (*disclient.DescribeStreamResponse, error) {
	if isKeepStreamName(name) {
		d.keepDescribes++
	}
	return d.API.DescribeStream(ctx, name, start, limit)
}

// A listing without tags skips keep streams by name, without describing
// them.
func TestKeepStreamsNotListed(t *testing.T) {
	backend := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	ctx := context.Background()
	s, err := applyAll(t, FormatKafka, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	if err := testCatalog(backend).Create(ctx, "a.b", 1, &s, FormatKafka); err != nil {
		t.Fatal(err)
	}
	d := &taglessDIS{API: backend}
	listed, err := testCatalog(d).List(ctx)
	if err != nil || !slices.Equal(listed, []string{"a.b"}) || d.keepDescribes != 0 {
		t.Errorf("List = %v, %v, with %d keep streams described", listed, err, d.keepDescribes)
	}
}
