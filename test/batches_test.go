package test

import (
	"context"
	"encoding/binary"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
)

// produceBatch sends one raw record batch to partition 0 and returns the
// base offset and error code of the answer.
func produceBatch(t *testing.T, cl *kgo.Client, topic string, batch []byte) (int64, int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.BaseOffset, p.ErrorCode
}

// produceNumbered produces records "0" to "n-1" on cl in the background,
// pausing 5 ms every 100 records so that the run spans restarts, counts
// every acknowledgement in acked, and delivers the first error or the
// final flush's outcome.
func produceNumbered(ctx context.Context, cl *kgo.Client, n int, acked *atomic.Int64) <-chan error {
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if i%100 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				acked.Add(1)
				if err != nil {
					select {
					case done <- err:
					default:
					}
				}
			})
		}
		select {
		case done <- cl.Flush(ctx):
		default:
		}
	}()
	return done
}

// listOffset asks ListOffsets v7 for one timestamp query on partition 0.
func listOffset(t *testing.T, cl *kgo.Client, topic string, ts int64) (offset, timestamp int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets %d: error %d", ts, p.ErrorCode)
	}
	return p.Offset, p.Timestamp
}

// batchWithTimestamps builds a non-idempotent batch whose records carry
// the given timestamps, in that order.
func batchWithTimestamps(stamps ...int64) []byte {
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(stamps) - 1),
		FirstTimestamp: stamps[0], ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(stamps))}
	for i, ts := range stamps {
		b.MaxTimestamp = max(b.MaxTimestamp, ts)
		b.Records = appendRecord(b.Records, kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: ts - stamps[0], Value: []byte("v")})
	}
	return rawBatch(b)
}

// ListOffsets by timestamp answers as Kafka does when records inside
// batches are out of timestamp order: the first batch whose max timestamp
// reaches the target, and in it the first record that does; -3 names the
// record with the largest timestamp.
func TestKafkaListOffsetsByTimestampOutOfOrder(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	cl := newClient(t, c)
	createTopic(t, c, "stamps", 1, nil)
	if base, code := produceBatch(t, cl, "stamps", batchWithTimestamps(1000, 3000, 2000)); code != 0 || base != 0 {
		t.Fatalf("first batch: base %d code %d", base, code)
	}
	if base, code := produceBatch(t, cl, "stamps", batchWithTimestamps(1500, 4000, 3500)); code != 0 || base != 3 {
		t.Fatalf("second batch: base %d code %d", base, code)
	}
	for _, c := range []struct{ ts, offset, stamp int64 }{
		{0, 0, 1000}, {1000, 0, 1000}, {1200, 1, 3000}, {2500, 1, 3000}, {3000, 1, 3000},
		{3200, 4, 4000}, {4000, 4, 4000}, {4001, -1, -1},
		{-3, 4, 4000}, // max timestamp
		{-2, 0, -1}, {-1, 6, -1},
	} {
		if off, ts := listOffset(t, cl, "stamps", c.ts); off != c.offset || (c.ts >= -3 && c.ts != -2 && c.ts != -1 && ts != c.stamp) {
			t.Errorf("ListOffsets %d: offset %d timestamp %d, want %d and %d", c.ts, off, ts, c.offset, c.stamp)
		}
	}
	// A restarted gateway has not seen the writes: it finds the largest
	// timestamp by reading the partition.
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	cl = newClient(t, c)
	if off, ts := listOffset(t, cl, "stamps", -3); off != 4 || ts != 4000 {
		t.Errorf("max timestamp after a restart: offset %d timestamp %d, want 4 and 4000", off, ts)
	}
}

// A consumer can start at every offset inside a compressed batch: it gets
// the whole stored batch and skips the records before its offset.
func TestKafkaFetchEveryOffsetInCompressedBatch(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := newClient(t, c, kgo.DefaultProduceTopic("zbatch"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(time.Second))
	const n = 20
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: []byte{byte('a' + i)}, Headers: []kgo.RecordHeader{{Key: "i", Value: []byte{byte(i)}}}})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if recs[0].Offset != 0 || recs[n-1].Offset != n-1 {
		t.Fatalf("offsets %d..%d", recs[0].Offset, recs[n-1].Offset)
	}
	for start := int64(0); start < n; start++ {
		cons := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"zbatch": {0: kgo.NewOffset().At(start)}}))
		var got []*kgo.Record
		for len(got) < int(n-start) {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("from %d: got %d records", start, len(got))
			}
			got = append(got, fs.Records()...)
		}
		for i, r := range got {
			want := start + int64(i)
			if r.Offset != want || r.Value[0] != byte('a'+want) || len(r.Headers) != 1 || r.Headers[0].Value[0] != byte(want) {
				t.Fatalf("from %d: record %d is offset %d value %q", start, i, r.Offset, r.Value)
			}
		}
		cons.Close()
	}
}

// Offsets go on where they were after a gateway restart, and after
// retention has emptied the partition and the gateway restarted again:
// they come from DIS alone, never reused, never going back. An idempotent
// producer's retry after a restart is answered with its original offset.
func TestKafkaOffsetsSurviveRestartAndRetention(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, DISConfig: func(cfg *dislocal.Config) {
		cfg.Now, cfg.RetentionCheckInterval = clock, 20*time.Millisecond
	}, Gateway: func(cfg *gateway.Config) { cfg.WatermarkInterval = 200 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cl := newClient(t, c)
	createTopic(t, c, "keep", 1, nil)
	const pid = 77
	first := testBatch(pid, 0, 0, time.Now().UnixMilli(), "a", "b", "c")
	if base, code := produceBatch(t, cl, "keep", first); code != 0 || base != 0 {
		t.Fatalf("first batch: base %d code %d", base, code)
	}
	if base, code := produceBatch(t, cl, "keep", testBatch(pid, 0, 3, time.Now().UnixMilli(), "d", "e")); code != 0 || base != 3 {
		t.Fatalf("second batch: base %d code %d", base, code)
	}

	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	cl = newClient(t, c)
	// The retry of the first batch across the restart: its original
	// offset, not a second copy.
	if base, code := produceBatch(t, cl, "keep", testBatch(pid, 0, 0, time.Now().UnixMilli(), "a", "b", "c")); code != 0 || base != 0 {
		t.Fatalf("retried batch after restart: base %d code %d, want 0 and no error", base, code)
	}
	if base, code := produceBatch(t, cl, "keep", testBatch(pid, 0, 5, time.Now().UnixMilli(), "f")); code != 0 || base != 5 {
		t.Fatalf("batch after restart: base %d code %d, want 5", base, code)
	}
	if off, _ := listOffset(t, cl, "keep", -1); off != 6 {
		t.Fatalf("end offset %d after restart, want 6", off)
	}

	// The watermark checkpoint follows the writes on its own, with no
	// gateway stopping to flush it; then everything expires.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		cp, err := c.Client.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: "disgw-offsets", StreamName: "keep",
			PartitionID: disclient.PartitionID(0), CheckpointType: disclient.CheckpointLastRead})
		if err == nil && cp.Metadata == "6" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the watermark checkpoint never reached 6: %+v, %v", cp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	skew.Store(int64(100 * time.Hour))
	for {
		d, err := c.Client.DescribeStream(ctx, "keep", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		e, n, err := disclient.ParseSequenceNumberRange(d.Partitions[0].SequenceNumberRange)
		if err != nil {
			t.Fatal(err)
		}
		if e == n && n > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("retention left [%d, %d)", e, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	cl = newClient(t, c)
	if start, end := listOffset(t, cl, "keep", -2); start != 6 {
		t.Fatalf("log start offset %d (%d) of the emptied partition, want 6", start, end)
	}
	if off, _ := listOffset(t, cl, "keep", -1); off != 6 {
		t.Fatalf("end offset %d of the emptied partition, want 6", off)
	}
	if base, code := produceBatch(t, cl, "keep", testBatch(-1, 0, 0, clock().UnixMilli(), "g", "h")); code != 0 || base != 6 {
		t.Fatalf("batch after retention: base %d code %d, want 6", base, code)
	}
}

// An idempotent franz-go producer writing through gateway restarts, which
// cut its connections with batches in flight, leaves every record exactly
// once and in order: retries of batches written before a restart are
// answered from the producer state rebuilt from the partition's tail.
func TestKafkaIdempotentProducerAcrossRestarts(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prod := newClient(t, c, kgo.DefaultProduceTopic("idem"), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	const n = 20000
	var acked atomic.Int64
	errs := produceNumbered(ctx, prod, n, &acked)
	for range 4 {
		time.Sleep(200 * time.Millisecond)
		if acked.Load() == n {
			t.Fatal("the producer finished before the gateway restarted")
		}
		if err := c.RestartGateway(); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-errs; err != nil {
		t.Fatalf("producing across restarts: %v", err)
	}
	cons := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"idem": {0: kgo.NewOffset().AtStart()}}))
	next := 0
	for next < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", next, n)
		}
		for _, r := range fs.Records() {
			if string(r.Value) != strconv.Itoa(next) || r.Offset != int64(next) {
				t.Fatalf("offset %d holds %q, want record %d at offset %d: a duplicate or a gap", r.Offset, r.Value, next, next)
			}
			next++
		}
	}
	if off, _ := listOffset(t, cons, "idem", -1); off != n {
		t.Fatalf("end offset %d, want %d", off, n)
	}
}

// A kafka-format topic takes a batch up to one DIS record, whatever its
// records, and says so in max.message.bytes; a batch over it is refused
// with MESSAGE_TOO_LARGE and not written.
func TestKafkaBatchSizeLimit(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	cl := newClient(t, c)
	createTopic(t, c, "sized", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "sized")
	if err != nil {
		t.Fatal(err)
	}
	limit := -1
	for _, cfg := range rcs[0].Configs {
		if cfg.Key == "max.message.bytes" {
			limit, _ = strconv.Atoi(*cfg.Value)
		}
	}
	if limit != 1<<20 {
		t.Fatalf("max.message.bytes %d, want %d", limit, 1<<20)
	}
	values := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = string(make([]byte, size))
		}
		return out
	}
	over := testBatch(-1, 0, 0, time.Now().UnixMilli(), values(1100, 1000)...)
	if _, code := produceBatch(t, cl, "sized", over); code != kerr.MessageTooLarge.Code {
		t.Fatalf("a %d-byte batch of small records: code %d, want MESSAGE_TOO_LARGE", len(over), code)
	}
	under := testBatch(-1, 0, 0, time.Now().UnixMilli(), values(1000, 1000)...)
	if base, code := produceBatch(t, cl, "sized", under); code != 0 || base != 0 {
		t.Fatalf("a %d-byte batch: base %d code %d", len(under), base, code)
	}
}

// Every kind of batch a Kafka broker refuses is refused with Kafka's error
// on a kafka-format topic, and none of them is stored.
func TestKafkaMalformedBatchesRefused(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	cl := newClient(t, c)
	createTopic(t, c, "malformed", 1, nil)
	good := func() kmsg.RecordBatch {
		b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: 1, NumRecords: 2,
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, FirstTimestamp: 1, MaxTimestamp: 1}
		b.Records = appendRecord(appendRecord(nil, kmsg.Record{Value: []byte("a")}), kmsg.Record{OffsetDelta: 1, Value: []byte("b")})
		return b
	}
	with := func(change func(*kmsg.RecordBatch)) []byte {
		b := good()
		change(&b)
		return rawBatch(b)
	}
	badCRC := rawBatch(good())
	badCRC[len(badCRC)-1] ^= 1
	short := rawBatch(good())
	binary.BigEndian.PutUint32(short[8:], 10)
	for _, c := range []struct {
		name  string
		batch []byte
		code  int16
	}{
		{"bad CRC", badCRC, kerr.CorruptMessage.Code},
		{"length below the minimum", short, kerr.CorruptMessage.Code},
		{"truncated", rawBatch(good())[:40], kerr.InvalidRecord.Code},
		{"trailing bytes", append(rawBatch(good()), 0, 0, 0), kerr.InvalidRecord.Code},
		{"magic 1", with(func(b *kmsg.RecordBatch) { b.Magic = 1 }), kerr.InvalidRecord.Code},
		{"count against last offset delta", with(func(b *kmsg.RecordBatch) { b.LastOffsetDelta = 5 }), kerr.InvalidRecord.Code},
		{"fewer records than announced", with(func(b *kmsg.RecordBatch) { b.NumRecords, b.LastOffsetDelta = 3, 2 }), kerr.InvalidRecord.Code},
		{"offset deltas out of order", with(func(b *kmsg.RecordBatch) {
			b.Records = appendRecord(appendRecord(nil, kmsg.Record{Value: []byte("a")}), kmsg.Record{OffsetDelta: 7, Value: []byte("b")})
		}), kerr.InvalidRecord.Code},
		{"producer id without a sequence", with(func(b *kmsg.RecordBatch) { b.ProducerID, b.ProducerEpoch = 5, 0 }), kerr.InvalidRecord.Code},
		{"transactional", with(func(b *kmsg.RecordBatch) {
			b.Attributes, b.ProducerID, b.ProducerEpoch, b.FirstSequence = 0x10, 5, 0, 0
		}), kerr.InvalidRecord.Code},
		{"control", with(func(b *kmsg.RecordBatch) { b.Attributes = 0x20 }), kerr.InvalidRecord.Code},
		{"unknown codec", with(func(b *kmsg.RecordBatch) { b.Attributes = 6 }), kerr.InvalidRecord.Code},
	} {
		if _, code := produceBatch(t, cl, "malformed", c.batch); code != c.code {
			t.Errorf("%s: code %d (%v), want %d (%v)", c.name, code, kerr.ErrorForCode(code), c.code, kerr.ErrorForCode(c.code))
		}
	}
	if off, _ := listOffset(t, cl, "malformed", -1); off != 0 {
		t.Fatalf("end offset %d after refused batches, want 0", off)
	}
	if base, code := produceBatch(t, cl, "malformed", rawBatch(good())); code != 0 || base != 0 {
		t.Fatalf("a good batch after them: base %d code %d", base, code)
	}
}
