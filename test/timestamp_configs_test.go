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
// reported by DescribeConfigs, enforced by Produce and refused by the alter
// APIs, as for a Kafka topic whose configs cannot change.
func TestTimestampConfigsAtCreation(t *testing.T) {
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

	before := time.Now()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "ts_append"
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
		t.Fatalf("produce to ts_append: error %d", pp.ErrorCode)
	}
	// As Kafka, the answer carries the time the batch was stamped with.
	if pp.LogAppendTime < before.UnixMilli() || pp.LogAppendTime > after.UnixMilli() {
		t.Errorf("log_append_time %d, want the append time (%d to %d)", pp.LogAppendTime, before.UnixMilli(), after.UnixMilli())
	}
	consumer := newClient(t, c, kgo.ConsumeTopics("ts_append"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	for len(got) < 2 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch ts_append: %v", err)
		}
		got = append(got, fs.Records()...)
	}
	for _, r := range got {
		if r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before.Truncate(time.Millisecond)) || r.Timestamp.After(after) {
			t.Errorf("record %d: timestamp %v type %d, want the append time (%v to %v) and LogAppendTime", r.Offset, r.Timestamp, r.Attrs.TimestampType(), before, after)
		}
	}

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
			if cfg := got[name]; cfg.Value == nil || *cfg.Value != value || cfg.Source != source || !cfg.ReadOnly {
				t.Errorf("%s %s = %v source %v read-only %v, want %s source %v read-only", topic, name, cfg.Value, cfg.Source, cfg.ReadOnly, value, source)
			}
		}
	}

	for _, cfg := range []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: kadm.StringPtr("CreateTime")},
		{Op: kadm.DeleteConfig, Name: "message.timestamp.type"},
	} {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{cfg}, "ts_append")
		if err != nil || len(resps) != 1 || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
			t.Errorf("incremental alter %+v: %+v %v, want INVALID_CONFIG", cfg, resps, err)
		}
	}
	resps, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "message.timestamp.before.max.ms", Value: kadm.StringPtr("120000")}}, "ts_window")
	if err != nil || len(resps) != 1 || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
		t.Errorf("alter before.max.ms: %+v %v, want INVALID_CONFIG", resps, err)
	}
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("172800000")}}, "ts_window")
	if err != nil || len(resps) != 1 || resps[0].Err != nil {
		t.Errorf("alter retention.ms alone: %+v %v", resps, err)
	}
	if v := describeTopicConfigs(t, c, "ts_window")["message.timestamp.before.max.ms"].Value; v == nil || *v != "60000" {
		t.Errorf("after the alters before.max.ms = %v, want 60000", v)
	}
}
