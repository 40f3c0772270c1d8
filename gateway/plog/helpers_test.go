package plog

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/protocol"
)

// testSettings are what a test sets of the partition log's settings and
// the write-queue bounds; zero takes the gateway's default.
type testSettings struct {
	Config
	MaxPartitionQueueBytes, MaxQueueBytes int64
}

// testTenant is a tenant's partition log over dis with the gateway's
// defaults for what s leaves zero, stopped when the test ends.
func testTenant(t testing.TB, s testSettings, dis disclient.API) *Tenant {
	t.Helper()
	c := s.Config
	orDefault := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	orDefault(&c.ReadCacheBytes, 64<<20)
	orDefault(&c.MaxProducersPerPartition, 1000)
	orDefault(&c.PutRecordsMaxRecords, 500)
	orDefault(&c.PutRecordsMaxBytes, 1<<20)
	orDefault(&c.MaxRecordBytes, 1<<20)
	orDefault(&c.ReadBytes, max(c.MaxRecordBytes+64<<10, 2<<20))
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = 24 * time.Hour
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 200 * time.Millisecond
	}
	if c.WatermarkInterval <= 0 {
		c.WatermarkInterval = 30 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 20 * time.Second
	}
	if c.MaxDecompressedBytes <= 0 {
		c.MaxDecompressedBytes = 200 << 20
	}
	if s.MaxPartitionQueueBytes <= 0 {
		s.MaxPartitionQueueBytes = 8 << 20
	}
	if s.MaxQueueBytes <= 0 {
		s.MaxQueueBytes = 128 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return NewTenant(Deps{
		Config:      c,
		Ctx:         ctx,
		Log:         zerolog.Nop(),
		DIS:         dis,
		Refresh:     describeRange(dis),
		RetentionMs: func(context.Context, string) (int64, error) { return 0, nil },
		Kept:        func(context.Context, string) (keep.Policy, string, bool, error) { return keep.Policy{}, "", false, nil },
		EnsureApp:   func(ctx context.Context, app string) error { return ensureApp(ctx, dis, app) },
		ForgetApp:   func(string) {},
		KafkaCode:   func(error) int16 { return kerr.KafkaStorageError.Code },
		Queues:      NewQueues(s.MaxPartitionQueueBytes, s.MaxQueueBytes, prometheus.NewGauge(prometheus.GaugeOpts{Name: "queued"}), prometheus.NewCounter(prometheus.CounterOpts{Name: "waits"})),
		Cache:       NewCache(c.ReadCacheBytes, prometheus.NewGauge(prometheus.GaugeOpts{Name: "cached"})),
		Go:          func(_ string, fn func()) { go fn() },
		Recover:     func(string, func()) {},
		Produced:    func(Key, int, int) {},
		TxnsOpen:    func() {},

		ProduceCancelled: func(int) {},
		OffsetProbe:      func() {},
		FencedBatches:    func(int) {},
		ShareWritten:     func(bool) {},
		ShareBudget:      NewShareBudget(1000),
	})
}

// describeRange is Deps.Refresh over dis, with the topic as the stream.
func describeRange(dis disclient.API) func(ctx context.Context, topic string, partition int32) (int64, int64, bool, error) {
	return func(ctx context.Context, topic string, partition int32) (int64, int64, bool, error) {
		d, err := dis.DescribeStream(ctx, topic, "", 1000)
		if err != nil {
			return 0, 0, false, err
		}
		for _, p := range d.Partitions {
			if p.PartitionID != disclient.PartitionID(partition) {
				continue
			}
			earliest, next, err := disclient.ParseSequenceNumberRange(p.SequenceNumberRange)
			return earliest, next, err == nil, err
		}
		return 0, 0, false, nil
	}
}

// ensureApp creates a DIS app unless it is there.
func ensureApp(ctx context.Context, dis disclient.API, app string) error {
	if err := dis.CreateApp(ctx, app); err != nil && !disclient.IsCode(err, disclient.CodeAppExists) {
		return err
	}
	return nil
}

// testKey is partition p of topic t, whose stream is named t.
func testKey(topic string, p int32) Key {
	return Key{Topic: topic, Stream: topic, StreamID: "s", Partition: p}
}

// localDIS is an embedded DIS for one test, without fsync, closed when the
// test ends.
func localDIS(t testing.TB) *disclient.Client {
	t.Helper()
	return dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
}

// batchesOf builds n batches of per records each, valueBytes a value, back
// to back: what one produce partition may carry.
func batchesOf(t testing.TB, n, per, valueBytes int) []byte {
	t.Helper()
	var out []byte
	for range n {
		recs := make([]protocol.Record, per)
		for i := range recs {
			recs[i] = protocol.Record{Offset: int64(i), Timestamp: time.Now().UnixMilli(), Value: make([]byte, valueBytes)}
		}
		var err error
		if out, err = protocol.AppendBatch(out, recs, protocol.CodecNone, 0); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
