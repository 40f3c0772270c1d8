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

// TestShortRetention: a kafka topic with retention.ms below DIS's 24 hours
// starts at its first batch within retention, as Kafka's time retention
// does, by the records' own timestamps (so the test needs no waiting):
// ListOffsets earliest, Fetch and a consumer from the start all see it,
// DescribeConfigs reports the exact value, a restarted gateway keeps the
// log start, and a raw topic cannot have it.
func TestShortRetention(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	ctx := testContext(t, time.Minute)
	const topic = "short-retention"
	createTopic(t, c, topic, 1, map[string]*string{"retention.ms": kmsg.StringPtr("600000")})
	if got := describeTopicConfigs(t, c, topic)["retention.ms"]; got.Value == nil || *got.Value != "600000" {
		t.Fatalf("retention.ms reads %v", got.Value)
	}

	// One batch each, 30, 20 and 12 minutes old, then 5 minutes old and new.
	cl := newClient(t, c, kgo.DefaultProduceTopic(topic))
	now := time.Now()
	for i, age := range []time.Duration{30 * time.Minute, 20 * time.Minute, 12 * time.Minute, 5 * time.Minute, 0} {
		r := &kgo.Record{Value: []byte{byte('a' + i)}, Timestamp: now.Add(-age)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(cl *kgo.Client) {
		t.Helper()
		starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := starts.Lookup(topic, 0); o.Err != nil || o.Offset != 3 {
			t.Fatalf("ListOffsets earliest: %+v, want 3, the first record within 10 minutes", o)
		}
		if p := fetchAt(ctx, t, cl, topic, 1); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 3 {
			t.Fatalf("fetch of an expired offset: error %d, log start %d", p.ErrorCode, p.LogStartOffset)
		}
	}
	check(cl)
	cons := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	fetches := cons.PollFetches(ctx)
	if recs := fetches.Records(); fetches.Err() != nil || len(recs) == 0 || recs[0].Offset != 3 || string(recs[0].Value) != "d" {
		t.Fatalf("consuming from the start: %v, %+v", fetches.Err(), recs)
	}

	// The log start is kept in DIS: a new gateway starts there too.
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	check(newClient(t, c))

	adm := kadm.NewClient(newClient(t, c))
	for _, cfg := range []map[string]*string{
		{"retention.ms": kmsg.StringPtr("600000"), "dis.record.format": kmsg.StringPtr("raw")},
		{"retention.ms": kmsg.StringPtr("0")},
		{"retention.ms": kmsg.StringPtr("-2")},
	} {
		res, err := adm.CreateTopics(ctx, 1, 1, cfg, "short-bad")
		if err != nil {
			t.Fatal(err)
		}
		if r := res["short-bad"]; !errors.Is(r.Err, kerr.InvalidConfig) || r.ErrMessage == "" {
			t.Errorf("configs %v: %v %q, want INVALID_CONFIG with a message", cfg, r.Err, r.ErrMessage)
		}
	}

	// Altered to a day, DIS keeps it again; the log start stays where
	// retention moved it, as Kafka's does.
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("86400000")}}
	if resps, err := adm.AlterTopicConfigs(ctx, set, topic); err != nil || resps[0].Err != nil {
		t.Fatalf("alter retention.ms to a day: %v %v", err, resps)
	}
	if got := describeTopicConfigs(t, c, topic)["retention.ms"]; got.Value == nil || *got.Value != "86400000" {
		t.Fatalf("retention.ms after the alter reads %v", got.Value)
	}
	check(newClient(t, c))
}
