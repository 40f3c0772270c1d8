package gateway

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/protocol"
)

// counterValue reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
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

func produceRaw(t testing.TB, cl *kgo.Client, topic string, records []byte) int64 {
	t.Helper()
	resp, err := produceRequest(topic, records).RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	return resp.Topics[0].Partitions[0].BaseOffset
}

// produceRequest is an acks=all Produce of records to partition 0 of topic.
func produceRequest(topic string, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 20000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchPartition0 sends a Fetch v11 for partition 0 of topic from offset,
// at most partMax bytes, and returns the partition's answer, failing the
// test on an error code.
func fetchPartition0(t testing.TB, cl *kgo.Client, topic string, offset int64, partMax int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 11, -1, 1<<20, 10
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset = offset, partMax, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch at %d: error %d", offset, p.ErrorCode)
	}
	return p
}

// fetchAt fetches partition 0 from offset and returns the first and last
// offsets of the batches that came back, and the high watermark.
func fetchAt(t testing.TB, cl *kgo.Client, topic string, offset int64) (first, last, hwm int64) {
	t.Helper()
	p := fetchPartition0(t, cl, topic, offset, 256<<10)
	first, last = -1, -1
	for data := p.RecordBatches; len(data) > 0; {
		n := 12 + int(binary.BigEndian.Uint32(data[8:]))
		info, ok := protocol.ParseBatchInfo(data[:n])
		if !ok {
			t.Fatalf("fetch at %d: a batch that does not parse", offset)
		}
		if first < 0 {
			first = info.BaseOffset
		}
		last = info.LastOffset()
		data = data[n:]
	}
	return first, last, p.HighWatermark
}

// Seeks to the start, middle and end of a long partition find the batch
// holding the offset on a gateway that has never seen the partition, and a
// consumer that then follows the log opens no further DIS cursor.
func TestSeeksInLongPartition(t *testing.T) {
	gw, dis := startCounted(t)
	prod, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "long", 1, 1
	create.Topics = append(create.Topics, ct)
	if resp, err := create.RequestWith(context.Background(), prod); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %v", resp, err)
	}
	produceRaw(t, prod, "long", batchesOf(t, 1, 1, 1))
	const batches, per = 2000, 3
	for range batches / 250 {
		produceRaw(t, prod, "long", batchesOf(t, 250, per, 2000))
	}
	end := int64(1 + batches*per)

	fresh, err := New(Config{Listen: "127.0.0.1:0"}, dis)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Start(); err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(context.Background())
	// Fetch v12 names topics, not topic ids.
	cl, err := kgo.NewClient(kgo.SeedBrokers(fresh.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, off := range []int64{0, 1, 2, end / 2, end/2 + 1, end - 2, end - 1} {
		first, last, hwm := fetchAt(t, cl, "long", off)
		if first > off || last < off || hwm != end {
			t.Errorf("fetch at %d returned batches %d..%d, high watermark %d (want %d)", off, first, last, hwm, end)
		}
	}
	if first, _, hwm := fetchAt(t, cl, "long", end); first != -1 || hwm != end {
		t.Errorf("fetch at the end returned a batch at %d, high watermark %d", first, hwm)
	}

	// A consumer seeking to the middle, then following the log.
	first, last, _ := fetchAt(t, cl, "long", end/3)
	if first > end/3 || last < end/3 {
		t.Fatalf("seek to %d returned %d..%d", end/3, first, last)
	}
	cursors, probes := dis.getCursor.Load(), counterValue(fresh.metrics.OffsetProbes)
	for next := last + 1; next < end; {
		f, l, _ := fetchAt(t, cl, "long", next)
		if f > next || l < next {
			t.Fatalf("fetch at %d returned %d..%d", next, f, l)
		}
		next = l + 1
	}
	if n := dis.getCursor.Load() - cursors; n != 0 {
		t.Errorf("a consumer following the log opened %d DIS cursors", n)
	}
	if n := counterValue(fresh.metrics.OffsetProbes) - probes; n != 0 {
		t.Errorf("a consumer following the log made %v offset-search reads", n)
	}
}

// lyingDIS stores the records of its first PutRecords calls but answers
// them with an error, as a DIS that times out after writing does.
type lyingDIS struct {
	disclient.API
	lies atomic.Int32
}

func (d *lyingDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	resp, err := d.API.PutRecords(ctx, req)
	if err == nil && d.lies.Add(-1) >= 0 {
		return nil, &disclient.Error{Status: 500, Code: "DIS.5000", Message: "timed out, but wrote"}
	}
	return resp, err
}

// A PutRecords call that failed after DIS stored its batches is answered
// as written, with the offsets the batches got: a retry then never stores
// them twice, and the offsets stay dense.
func TestFailedCallThatLandedIsAnsweredAsWritten(t *testing.T) {
	cl := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	dis := &lyingDIS{API: cl}
	gw, err := New(Config{Listen: "127.0.0.1:0"}, dis)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "lied", 1, 1
	create.Topics = append(create.Topics, ct)
	if resp, err := create.RequestWith(context.Background(), kc); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %v", resp, err)
	}
	dis.lies.Store(1)
	if base := produceRaw(t, kc, "lied", batchesOf(t, 2, 3, 10)); base != 0 {
		t.Fatalf("the call DIS failed after writing answered base offset %d, want 0", base)
	}
	if base := produceRaw(t, kc, "lied", batchesOf(t, 1, 3, 10)); base != 6 {
		t.Fatalf("the next batch got base offset %d, want 6", base)
	}
	first, last, hwm := fetchAt(t, kc, "lied", 0)
	if first != 0 || last != 8 || hwm != 9 {
		t.Fatalf("the partition holds %d..%d, high watermark %d; want 0..8 and 9", first, last, hwm)
	}
}

// fetchRecords fetches partition 0 from offset and decodes what came back.
func fetchRecords(t testing.TB, cl *kgo.Client, topic string, offset int64) []protocol.Record {
	t.Helper()
	p := fetchPartition0(t, cl, topic, offset, 1<<20)
	bs, err := protocol.DecodeBatches(p.RecordBatches, protocol.NewDecompressBudget(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Record
	for _, b := range bs {
		out = append(out, b.Records...)
	}
	return out
}

// When someone else writes a partition between two writes of the gateway
// (here a DIS-native producer), the gateway's batch that landed with
// offsets overlapping theirs is written again after them before its
// producer is answered; readers skip the stale copy, so every offset holds
// one record, once (docs/design.md §6).
func TestWriterFencesAnotherWriter(t *testing.T) {
	gw, dis := startCounted(t)
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "shared", 1, 1
	create.Topics = append(create.Topics, ct)
	if resp, err := create.RequestWith(context.Background(), kc); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %v", resp, err)
	}
	if base := produceRaw(t, kc, "shared", batchesOf(t, 1, 3, 4)); base != 0 {
		t.Fatalf("first batch at %d", base)
	}
	if _, err := dis.PutRecords(context.Background(), &disclient.PutRecordsRequest{StreamName: "shared",
		Records: []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(0), Data: []byte("native")}}}); err != nil {
		t.Fatal(err)
	}
	if base := produceRaw(t, kc, "shared", batchesOf(t, 1, 2, 4)); base != 4 {
		t.Fatalf("the batch written after the native record answered base offset %d, want 4", base)
	}
	if base := produceRaw(t, kc, "shared", batchesOf(t, 1, 1, 4)); base != 6 {
		t.Fatalf("the next batch answered base offset %d, want 6", base)
	}
	if n := counterValue(gw.metrics.FencedBatches); n != 1 {
		t.Fatalf("%v batches written again, want 1", n)
	}
	check := func(cl *kgo.Client, who string) {
		t.Helper()
		var got []protocol.Record
		for off := int64(0); off < 7; off = got[len(got)-1].Offset + 1 {
			recs := fetchRecords(t, cl, "shared", off)
			if len(recs) == 0 {
				t.Fatalf("%s: nothing at %d", who, off)
			}
			got = append(got, recs...)
		}
		for i, r := range got {
			if r.Offset != int64(i) {
				t.Fatalf("%s: record %d has offset %d: a stale copy was served or an offset skipped", who, i, r.Offset)
			}
		}
		if string(got[3].Value) != "native" {
			t.Fatalf("%s: offset 3 holds %q, want the native record", who, got[3].Value)
		}
	}
	check(kc, "the writing gateway")
	fresh, err := New(Config{Listen: "127.0.0.1:0"}, dis)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Start(); err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(context.Background())
	fc, err := kgo.NewClient(kgo.SeedBrokers(fresh.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	check(fc, "a fresh gateway")
}
