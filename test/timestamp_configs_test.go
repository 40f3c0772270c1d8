package test

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The message.timestamp.* configs given at creation are kept by the stream,
// reported by DescribeConfigs as alterable, and enforced by Produce.
func TestTimestampConfigsAtCreation(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	cl := newClient(t, c)
	adm := kadm.NewClient(cl)
	ctx := testContext(t, 60*time.Second)

	create := func(name string, configs map[string]*string) kadm.CreateTopicResponse {
		t.Helper()
		resps, err := adm.CreateTopics(ctx, 1, 1, configs, name)
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return resps[name]
	}
	for _, bad := range []map[string]*string{
		{"message.timestamp.type": kadm.StringPtr("WallClock")},
		{"message.timestamp.before.max.ms": kadm.StringPtr("-1")},
		{"message.timestamp.after.max.ms": kadm.StringPtr("soon")},
		{"message.timestamp.type": kadm.StringPtr("LogAppendTime"), "dis.record.format": kadm.StringPtr("raw")},
	} {
		if resp := create("ts_bad", bad); !errors.Is(resp.Err, kerr.InvalidConfig) || resp.ErrMessage == "" {
			t.Errorf("create with %v: %v (%q), want INVALID_CONFIG with a message", bad, resp.Err, resp.ErrMessage)
		}
	}
	if _, err := c.Client.DescribeStream(ctx, "ts_bad", "", 1); err == nil {
		t.Error("a refused creation made the stream")
	}
	if resp := create("ts_window", map[string]*string{"message.timestamp.before.max.ms": kadm.StringPtr("60000")}); resp.Err != nil {
		t.Fatalf("create ts_window: %v (%s)", resp.Err, resp.ErrMessage)
	}
	if resp := create("ts_append", map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")}); resp.Err != nil {
		t.Fatalf("create ts_append: %v (%s)", resp.Err, resp.ErrMessage)
	}

	now := time.Now().UnixMilli()
	if _, code := produceBatch(t, cl, "ts_window", batchWithTimestamps(now-3_600_000)); code != kerr.InvalidTimestamp.Code {
		t.Errorf("an hour-old record on a 60 s window: error %d, want INVALID_TIMESTAMP", code)
	}
	if _, code := produceBatch(t, cl, "ts_window", batchWithTimestamps(now)); code != 0 {
		t.Errorf("a current record on a 60 s window: error %d", code)
	}

	// As Kafka, the answer carries the time the batch was stamped with.
	produceAppendTime(t, c, cl, "ts_append")

	for topic, want := range map[string]map[string]string{
		"ts_window": {"message.timestamp.before.max.ms": "60000", "message.timestamp.type": "CreateTime", "message.timestamp.after.max.ms": "9223372036854775807"},
		"ts_append": {"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "9223372036854775807"},
	} {
		got := describeTopicConfigs(t, c, topic)
		for name, value := range want {
			source := kmsg.ConfigSourceDynamicTopicConfig
			if value == "CreateTime" || value == "9223372036854775807" {
				source = kmsg.ConfigSourceDefaultConfig
			}
			if cfg := got[name]; cfg.Value == nil || *cfg.Value != value || cfg.Source != source || cfg.ReadOnly {
				t.Errorf("%s %s = %v source %v read-only %v, want %s source %v alterable", topic, name, cfg.Value, cfg.Source, cfg.ReadOnly, value, source)
			}
		}
	}

}

// produceAppendTime produces a batch of old CreateTime records to topic and
// checks that the answer and the records read back carry the time the
// gateway stamped them with, as LogAppendTime.
func produceAppendTime(t *testing.T, c *Cluster, cl *kgo.Client, topic string) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	before := time.Now()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batchWithTimestamps(1_000_000, 2_000_000)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	presp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	pp := presp.Topics[0].Partitions[0]
	if pp.ErrorCode != 0 {
		t.Fatalf("produce to %s: error %d", topic, pp.ErrorCode)
	}
	if pp.LogAppendTime < before.UnixMilli() || pp.LogAppendTime > after.UnixMilli() {
		t.Errorf("log_append_time %d, want the append time (%d to %d)", pp.LogAppendTime, before.UnixMilli(), after.UnixMilli())
	}
	consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(pp.BaseOffset)}}))
	var got []*kgo.Record
	for len(got) < 2 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch %s: %v", topic, err)
		}
		got = append(got, fs.Records()...)
	}
	for _, r := range got[:2] {
		if r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before.Truncate(time.Millisecond)) || r.Timestamp.After(after) {
			t.Errorf("record %d: timestamp %v type %d, want the append time (%v to %v) and LogAppendTime", r.Offset, r.Timestamp, r.Attrs.TimestampType(), before, after)
		}
	}
}

// The message.timestamp.* configs change after creation through
// IncrementalAlterConfigs and AlterConfigs, as on Kafka, and the next
// produce follows the new values; DescribeConfigs reports them. A raw
// topic, which keeps no Kafka timestamps, refuses them.
func TestTimestampConfigsAltered(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	cl := newClient(t, c)
	adm := kadm.NewClient(cl)
	ctx := testContext(t, 60*time.Second)
	for _, topic := range []string{"ts_later", "ts_raw"} {
		configs := map[string]*string{}
		if topic == "ts_raw" {
			configs["dis.record.format"] = kadm.StringPtr("raw")
		}
		if _, err := adm.CreateTopic(ctx, 1, 1, configs, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	alter := func(incremental bool, topic string, cfgs ...kadm.AlterConfig) error {
		t.Helper()
		alterFn := adm.AlterTopicConfigs
		if !incremental {
			alterFn = adm.AlterTopicConfigsState
		}
		resps, err := alterFn(ctx, cfgs, topic)
		if err != nil {
			t.Fatalf("alter %s: %v", topic, err)
		}
		if len(resps) != 1 {
			t.Fatalf("alter %s: %d answers", topic, len(resps))
		}
		return resps[0].Err
	}
	hourOld := func() []byte { return batchWithTimestamps(time.Now().UnixMilli() - 3_600_000) }
	if _, code := produceBatch(t, cl, "ts_later", hourOld()); code != 0 {
		t.Fatalf("an hour-old record with the default configs: error %d", code)
	}

	if err := alter(true, "ts_later", kadm.AlterConfig{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: kadm.StringPtr("LogAppendTime")}); err != nil {
		t.Fatalf("incremental alter to LogAppendTime: %v", err)
	}
	produceAppendTime(t, c, cl, "ts_later")

	if err := alter(true, "ts_later",
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "message.timestamp.type"},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "message.timestamp.before.max.ms", Value: kadm.StringPtr("60000")}); err != nil {
		t.Fatalf("incremental alter of before.max.ms: %v", err)
	}
	if _, code := produceBatch(t, cl, "ts_later", hourOld()); code != kerr.InvalidTimestamp.Code {
		t.Errorf("an hour-old record after before.max.ms=60000: error %d, want INVALID_TIMESTAMP", code)
	}
	if _, code := produceBatch(t, cl, "ts_later", batchWithTimestamps(time.Now().UnixMilli())); code != 0 {
		t.Errorf("a current record after before.max.ms=60000: error %d", code)
	}
	got := describeTopicConfigs(t, c, "ts_later")
	for name, want := range map[string]string{"message.timestamp.type": "CreateTime", "message.timestamp.before.max.ms": "60000"} {
		if cfg := got[name]; cfg.Value == nil || *cfg.Value != want || cfg.ReadOnly {
			t.Errorf("after the alters %s = %v read-only %v, want %s alterable", name, cfg.Value, cfg.ReadOnly, want)
		}
	}

	// AlterConfigs replaces the whole configuration: what it leaves out
	// goes back to its default.
	if err := alter(false, "ts_later",
		kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("172800000")},
		kadm.AlterConfig{Name: "message.timestamp.type", Value: kadm.StringPtr("LogAppendTime")}); err != nil {
		t.Fatalf("alter: %v", err)
	}
	produceAppendTime(t, c, cl, "ts_later")
	if err := alter(false, "ts_later", kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("172800000")}); err != nil {
		t.Fatalf("alter: %v", err)
	}
	if _, code := produceBatch(t, cl, "ts_later", hourOld()); code != 0 {
		t.Errorf("an hour-old record once AlterConfigs left the timestamp configs out: error %d", code)
	}
	got = describeTopicConfigs(t, c, "ts_later")
	if v := got["message.timestamp.before.max.ms"].Value; v == nil || *v != "9223372036854775807" {
		t.Errorf("before.max.ms after AlterConfigs left it out: %v, want the default", v)
	}

	for _, incremental := range []bool{true, false} {
		op := kadm.AlterConfig{Name: "message.timestamp.type", Value: kadm.StringPtr("LogAppendTime")}
		if err := alter(incremental, "ts_raw", op); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("LogAppendTime on a raw topic (incremental %v): %v, want INVALID_CONFIG", incremental, err)
		}
	}
	if v := describeTopicConfigs(t, c, "ts_raw")["message.timestamp.type"].Value; v == nil || *v != "CreateTime" {
		t.Errorf("raw topic's message.timestamp.type after refused alters: %v", v)
	}
}
