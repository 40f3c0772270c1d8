package test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// keepStream is the keep stream of a topic whose stream name is the
// topic's own name, as docs/design.md §12 names it.
func keepStream(topic string) string {
	sum := sha256.Sum256([]byte(topic))
	return "disgw-keep-" + hex.EncodeToString(sum[:8])
}

// streamPartitions is how many partitions DIS lists for stream, or -1
// when DIS has no such stream.
func streamPartitions(t *testing.T, c *Cluster, stream string) int {
	t.Helper()
	d, err := c.Client.DescribeStream(testContext(t, 10*time.Second), stream, "", 100)
	if disclient.IsCode(err, disclient.CodeStreamNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(d.Partitions)
}

// checkConfig fails unless topic's config name has the value and source.
func checkConfig(t *testing.T, got map[string]kmsg.DescribeConfigsResponseResourceConfig, topic, name, value string, source kmsg.ConfigSource) {
	t.Helper()
	cfg, ok := got[name]
	switch {
	case !ok:
		t.Errorf("%s: %s missing", topic, name)
	case cfg.Value == nil || *cfg.Value != value || cfg.Source != source || cfg.ReadOnly:
		t.Errorf("%s: %s = %v source %v read-only %v, want %s %v alterable", topic, name, cfg.Value, cfg.Source, cfg.ReadOnly, value, source)
	}
}

// TestKeptTopics creates topics with the configs Kafka Streams and Connect
// give their internal topics, and checks what DescribeConfigs, the alter
// APIs, Metadata, CreatePartitions and DeleteTopics make of them and of
// their keep streams in DIS.
func TestKeptTopics(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 60*time.Second)
	createTopic(t, c, "changelog", 2, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	createTopic(t, c, "repartition", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete"), "retention.ms": kadm.StringPtr("-1")})
	createTopic(t, c, "windowed", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete,compact"), "retention.ms": kadm.StringPtr("604800000")})
	createTopic(t, c, "plain", 1, nil)
	if resp, err := adm.ValidateCreateTopics(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "validated"); err != nil || resp["validated"].Err != nil {
		t.Fatalf("validate-only creation: %v %+v", err, resp)
	}

	for topic, want := range map[string]int{"changelog": 2, "repartition": 1, "windowed": 1, "plain": -1, "validated": -1} {
		if got := streamPartitions(t, c, keepStream(topic)); got != want {
			t.Errorf("%s: keep stream has %d partitions, want %d (-1: none)", topic, got, want)
		}
	}
	if got := streamRetention(t, c, "changelog"); got != 72 {
		t.Errorf("changelog's own stream keeps records %d h, want DIS's longest, 72", got)
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Names(); !slices.Equal(got, []string{"changelog", "plain", "repartition", "windowed"}) {
		t.Errorf("ListTopics = %v: keep streams are no topics", got)
	}

	got := describeTopicConfigs(t, c, "changelog")
	checkConfig(t, got, "changelog", "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, got, "changelog", "retention.ms", "86400000", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, got, "changelog", "delete.retention.ms", "86400000", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, got, "changelog", "min.compaction.lag.ms", "0", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, got, "changelog", "max.compaction.lag.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, got, "changelog", "min.cleanable.dirty.ratio", "0.5", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, got, "changelog", "retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig)
	got = describeTopicConfigs(t, c, "repartition")
	checkConfig(t, got, "repartition", "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, got, "repartition", "retention.ms", "-1", kmsg.ConfigSourceDynamicTopicConfig)
	got = describeTopicConfigs(t, c, "windowed")
	checkConfig(t, got, "windowed", "cleanup.policy", "compact,delete", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, got, "windowed", "retention.ms", "604800000", kmsg.ConfigSourceDynamicTopicConfig)

	alter := func(topic string, want error, cfgs ...kadm.AlterConfig) {
		t.Helper()
		resps, err := adm.AlterTopicConfigs(ctx, cfgs, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(resps) != 1 || !errors.Is(resps[0].Err, want) || want != nil && resps[0].ErrMessage == "" {
			t.Errorf("%s %+v: %+v, want %v with a message", topic, cfgs, resps, want)
		}
	}
	set := func(name, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: &v}
	}
	alter("changelog", nil, set("min.compaction.lag.ms", "1000"), set("delete.retention.ms", "0"),
		kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")}, set("retention.bytes", "1048576"))
	got = describeTopicConfigs(t, c, "changelog")
	checkConfig(t, got, "changelog", "cleanup.policy", "compact,delete", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, got, "changelog", "min.compaction.lag.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, got, "changelog", "delete.retention.ms", "0", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, got, "changelog", "retention.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
	alter("changelog", nil, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "min.compaction.lag.ms"})
	checkConfig(t, describeTopicConfigs(t, c, "changelog"), "changelog", "min.compaction.lag.ms", "0", kmsg.ConfigSourceDefaultConfig)
	alter("changelog", kerr.InvalidConfig, kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")})
	alter("changelog", kerr.InvalidConfig, set("max.compaction.lag.ms", "0"))
	alter("changelog", kerr.InvalidConfig, set("min.cleanable.dirty.ratio", "2"))
	alter("changelog", kerr.InvalidConfig, set("cleanup.policy", "compact,forever"))
	alter("repartition", kerr.InvalidConfig, set("retention.ms", "86400000"))

	// A topic made kept gets its keep stream.
	alter("plain", nil, set("retention.ms", "-1"))
	if n := streamPartitions(t, c, keepStream("plain")); n != 1 {
		t.Errorf("plain after retention.ms -1: keep stream of %d partitions", n)
	}
	checkConfig(t, describeTopicConfigs(t, c, "plain"), "plain", "retention.ms", "-1", kmsg.ConfigSourceDynamicTopicConfig)

	if _, err := adm.UpdatePartitions(ctx, 3, "windowed"); err != nil {
		t.Fatal(err)
	}
	if n := streamPartitions(t, c, keepStream("windowed")); n != 3 {
		t.Errorf("windowed after CreatePartitions: keep stream of %d partitions, want 3", n)
	}

	resps, err := adm.DeleteTopics(ctx, "changelog", "plain")
	if err != nil || resps.Error() != nil {
		t.Fatalf("DeleteTopics: %v %v", err, resps.Error())
	}
	for _, s := range []string{"changelog", keepStream("changelog"), "plain", keepStream("plain")} {
		if n := streamPartitions(t, c, s); n != -1 {
			t.Errorf("stream %s is still in DIS after DeleteTopics", s)
		}
	}
}

// keyedBatch is a batch of records with the given keys, nil for none.
func keyedBatch(keys ...[]byte) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(keys) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(keys))}
	for i, k := range keys {
		b.Records = appendRecord(b.Records, kmsg.Record{OffsetDelta: int32(i), Key: k, Value: []byte("v")})
	}
	return rawBatch(b)
}

// A compacted topic refuses a record without a key as Kafka does, with
// the record named in record_errors from Produce v8, and takes keyed ones.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "compacted", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	createTopic(t, c, "deleting", 1, map[string]*string{"retention.ms": kadm.StringPtr("-1")})
	rc := dialRaw(t, c.Addr)
	want := "Compacted topic cannot accept message without key in topic partition compacted-0."
	for _, v := range []int16{7, 8, 11} {
		p := rc.roundTrip(produceReq(v, "compacted", 0, keyedBatch([]byte("k"), nil, []byte{}))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("v%d: error %v, want INVALID_RECORD", v, kerr.ErrorForCode(p.ErrorCode))
		}
		if v < 8 {
			continue
		}
		if p.ErrorMessage == nil || *p.ErrorMessage != want || len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 ||
			p.ErrorRecords[0].ErrorMessage == nil || *p.ErrorRecords[0].ErrorMessage != want {
			t.Errorf("v%d: %+v, want record 1 named with %q", v, p, want)
		}
	}
	p := rc.roundTrip(produceReq(11, "compacted", 0, keyedBatch([]byte("k"), []byte{}))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Errorf("keyed batch: %+v", p)
	}
	p = rc.roundTrip(produceReq(11, "deleting", 0, keyedBatch(nil))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Errorf("keyless record on a kept delete topic: %v", kerr.ErrorForCode(p.ErrorCode))
	}

	// franz-go, compressing, sees the same.
	cl := newClient(t, c, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	ctx := testContext(t, 20*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "compacted", Key: []byte("k2"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Errorf("keyed record: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "compacted", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("keyless record: %v, want INVALID_RECORD", err)
	}
}

// raw topics, whose offsets are DIS sequence numbers, cannot be kept.
func TestRawTopicsRefuseKeptConfigs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 20*time.Second)
	raw := kadm.StringPtr("raw")
	for name, cfgs := range map[string]map[string]*string{
		"raw-compact": {"dis.record.format": raw, "cleanup.policy": kadm.StringPtr("compact")},
		"raw-forever": {"dis.record.format": raw, "retention.ms": kadm.StringPtr("-1")},
		"raw-week":    {"dis.record.format": raw, "retention.ms": kadm.StringPtr("604800000")},
	} {
		resps, err := adm.CreateTopics(ctx, 1, 1, cfgs, name)
		if err != nil {
			t.Fatal(err)
		}
		resp := resps[name]
		if !errors.Is(resp.Err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, "dis.record.format kafka") {
			t.Errorf("%s: %v %q, want INVALID_CONFIG naming the format", name, resp.Err, resp.ErrMessage)
		}
		if n := streamPartitions(t, c, keepStream(name)); n != -1 {
			t.Errorf("%s: a keep stream was made", name)
		}
	}
}
