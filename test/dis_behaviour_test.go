package test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
)

// A record as large as the gateway takes, on a raw topic with a key and on
// a kafka topic, reads back through the gateway: DIS returns nothing for a
// record larger than max_fetch_bytes, so the gateway must ask for more
// than the largest record even when the client asks for less. The gateway
// restarts in between so that it reads from DIS, not from its cache.
func TestRecordNearDISLimitRoundTrips(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	for _, format := range []string{"raw", "kafka"} {
		t.Run(format, func(t *testing.T) {
			topic := "big-" + format
			createTopic(t, c, topic, 1, map[string]*string{"dis.record.format": kadm.StringPtr(format)})
			value := bytes.Repeat([]byte{'v'}, 1<<20)
			if format == "kafka" {
				// The whole batch, framing included, is one DIS record.
				value = value[:1<<20-512]
			}
			key := []byte(strings.Repeat("k", 200))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pr := newClient(t, c, kgo.ProducerBatchMaxBytes(2<<20), kgo.DefaultProduceTopic(topic))
			if err := pr.ProduceSync(ctx, &kgo.Record{Key: key, Value: value}, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if err := c.RestartGateway(); err != nil {
				t.Fatal(err)
			}
			cl := newClient(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchMaxPartitionBytes(1<<20), kgo.FetchMaxBytes(1<<20))
			var got []*kgo.Record
			for len(got) < 2 && ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				for _, e := range fs.Errors() {
					if ctx.Err() == nil {
						t.Fatalf("fetch: %v", e.Err)
					}
				}
				got = append(got, fs.Records()...)
			}
			if len(got) != 2 || !bytes.Equal(got[0].Value, value) || !bytes.Equal(got[0].Key, key) || string(got[1].Value) != "after" {
				t.Fatalf("read %d records back, want the large one and the next", len(got))
			}
		})
	}
}

// ListOffsets by a timestamp whose records retention removed answers the
// earliest offset, as Kafka does for a timestamp before the log start,
// although the embedded DIS, as DIS, refuses the AT_TIMESTAMP cursor
// with DIS.4300.
func TestListOffsetsExpiredTimestampIsEarliest(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, DISConfig: func(cfg *dislocal.Config) {
		cfg.Now, cfg.RetentionCheckInterval = clock, 20*time.Millisecond
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, format := range []string{"raw", "kafka"} {
		createTopic(t, c, "ts-"+format, 1, map[string]*string{"dis.record.format": kadm.StringPtr(format)})
	}
	cl := newClient(t, c)
	t0 := clock().UnixMilli()
	produce := func(value string, ts int64) {
		t.Helper()
		for _, format := range []string{"raw", "kafka"} {
			r := &kgo.Record{Topic: "ts-" + format, Value: []byte(value), Timestamp: time.UnixMilli(ts)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", value, err)
			}
		}
	}
	produce("old-0", t0)
	produce("old-1", t0+1)
	skew.Store(int64(25 * time.Hour))
	produce("new-2", t0+100)
	produce("new-3", t0+200)
	for _, stream := range []string{"ts-raw", "ts-kafka"} {
		for {
			d, err := c.Client.DescribeStream(ctx, stream, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if d.Partitions[0].SequenceNumberRange == "[2 : 4]" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("retention left %s of %s", d.Partitions[0].SequenceNumberRange, stream)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := c.Client.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "ts-raw", PartitionID: "0",
		CursorType: disclient.CursorAtTimestamp, Timestamp: t0}); !disclient.IsCode(err, disclient.CodeRequestError) {
		t.Fatalf("AT_TIMESTAMP before retention: %v, want DIS.4300", err)
	}
	for _, format := range []string{"raw", "kafka"} {
		topic := "ts-" + format
		for _, q := range []struct{ ts, offset, at int64 }{{t0, 2, t0 + 100}, {t0 + 1, 2, t0 + 100}, {t0 + 150, 3, t0 + 200}} {
			if off, ts := listOffset(t, cl, topic, q.ts); off != q.offset || ts != q.at {
				t.Errorf("%s: ListOffsets(%d) = offset %d timestamp %d, want %d at %d", topic, q.ts-t0, off, ts, q.offset, q.at)
			}
		}
	}
}

// Kafka takes a commit of any offset; DIS only a checkpoint inside the
// partition's range. Commits beyond the end and before the log start (an
// idle group whose records retention removed) are accepted and read back
// exactly, on raw and kafka topics, and the checkpoint DIS holds is inside
// the range.
func TestCommitOutsideDISRange(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, DISConfig: func(cfg *dislocal.Config) {
		cfg.Now, cfg.RetentionCheckInterval = clock, 20*time.Millisecond
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, c)
	adm := kadm.NewClient(cl)
	formats := []string{"raw", "kafka"}
	for _, format := range formats {
		topic := "commit-" + format
		createTopic(t, c, topic, 1, map[string]*string{"dis.record.format": kadm.StringPtr(format)})
		for _, v := range []string{"a", "b"} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit := func(group, topic string, offset int64) {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d to %s: %v", offset, topic, err)
		}
	}
	check := func(group, topic string, want int64, earliest, next int64) {
		t.Helper()
		got, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := got.Lookup(topic, 0); !ok || o.Err != nil || o.At != want {
			t.Errorf("%s: committed offset %+v, want %d", topic, o, want)
		}
		cp, err := c.Client.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: group, StreamName: topic,
			PartitionID: "0", CheckpointType: disclient.CheckpointLastRead})
		if err != nil {
			t.Fatal(err)
		}
		if seq, err := strconv.ParseInt(cp.SequenceNumber, 10, 64); err != nil || seq < earliest || seq > next {
			t.Errorf("%s: DIS checkpoint at %s, outside [%d : %d]", topic, cp.SequenceNumber, earliest, next)
		}
	}
	for _, format := range formats {
		topic := "commit-" + format
		commit("beyond", topic, 1000)
		check("beyond", topic, 1000, 0, 2)
		commit("inside", topic, 1)
		check("inside", topic, 1, 0, 2)
	}

	// Retention removes both records; an idle group commits its old offset.
	skew.Store(int64(25 * time.Hour))
	for _, format := range formats {
		for {
			d, err := c.Client.DescribeStream(ctx, "commit-"+format, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if d.Partitions[0].SequenceNumberRange == "[2 : 2]" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("retention left %s", d.Partitions[0].SequenceNumberRange)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, format := range formats {
		topic := "commit-" + format
		commit("idle", topic, 1)
		check("idle", topic, 1, 2, 2)
	}
}

// The embedded DIS with DIS's account limits: a topic past the partition
// quota is refused POLICY_VIOLATION, and a group past the app quota gets
// the retriable COORDINATOR_NOT_AVAILABLE on commit, never
// UNKNOWN_SERVER_ERROR.
func TestDISAccountQuotas(t *testing.T) {
	t.Parallel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, DISConfig: func(cfg *dislocal.Config) {
		cfg.Limits = dislocal.DISLimits()
		cfg.Limits.Apps = 1
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, c))
	if resp, _ := adm.CreateTopic(ctx, 51, 1, nil, "too-many"); !errors.Is(resp.Err, kerr.PolicyViolation) {
		t.Fatalf("CreateTopic past the partition quota: %v, want POLICY_VIOLATION", resp.Err)
	}
	createTopic(t, c, "q", 1, nil)
	commit := func(ctx context.Context, group string) error {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "q", Partition: 0, At: 0, LeaderEpoch: -1})
		r, err := adm.CommitOffsets(ctx, group, os)
		if err != nil {
			return err
		}
		return r.Error()
	}
	// The one app the quota allows is taken by the first group.
	if err := commit(ctx, "first"); err != nil {
		t.Fatalf("first group: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	if err := commit(short, "second"); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("second group past the app quota: %v, want COORDINATOR_NOT_AVAILABLE", err)
	}
}
