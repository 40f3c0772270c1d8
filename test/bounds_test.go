package test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
)

// A 61-byte Produce payload, a v2 batch with a valid CRC and no records, is
// refused with an error and the gateway keeps serving.
func TestZeroRecordBatchProduce(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "empty", 1, nil)
	rc := dialRaw(t, c.Addr)
	empty := rawBatch(kmsg.RecordBatch{Magic: 2, PartitionLeaderEpoch: -1, LastOffsetDelta: -1,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1})
	if len(empty) != 61 {
		t.Fatalf("empty batch is %d bytes, want 61", len(empty))
	}
	p := rc.roundTrip(produceReq(9, "empty", 0, empty)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode == 0 {
		t.Fatal("a batch without records was accepted")
	}
	p = rc.roundTrip(produceReq(9, "empty", 0, testBatch(-1, -1, -1, 1, "after"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce after the empty batch: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}

// A partition named twice in one Produce or Fetch is refused for that
// partition with INVALID_REQUEST (docs/errors.md): none of its batches is
// written, and the request's other partitions are served.
func TestDuplicatePartitionInRequest(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "dup", 2, nil)
	rc := dialRaw(t, c.Addr)
	req := produceReq(9, "dup", 0, testBatch(-1, -1, -1, 1, "first"))
	again := kmsg.NewProduceRequestTopic()
	again.Topic = "dup"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch(-1, -1, -1, 1, "second")
	again.Partitions = append(again.Partitions, pp)
	other := kmsg.NewProduceRequestTopicPartition()
	other.Partition = 1
	other.Records = testBatch(-1, -1, -1, 1, "other")
	again.Partitions = append(again.Partitions, other)
	req.Topics = append(req.Topics, again)
	resp := rc.roundTrip(req).(*kmsg.ProduceResponse)
	codes := map[int32][]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			codes[p.Partition] = append(codes[p.Partition], p.ErrorCode)
		}
	}
	inv := kerr.InvalidRequest.Code
	if len(codes[0]) != 2 || codes[0][0] != inv || codes[0][1] != inv || len(codes[1]) != 1 || codes[1][0] != 0 {
		t.Fatalf("produce answers by partition %v, want partition 0 twice INVALID_REQUEST and partition 1 written", codes)
	}

	f := fetchReq(12, "dup", [16]byte{}, 0, 0)
	f.Topics[0].Partitions = append(f.Topics[0].Partitions, f.Topics[0].Partitions[0])
	second := f.Topics[0].Partitions[0]
	second.Partition = 1
	f.Topics[0].Partitions = append(f.Topics[0].Partitions, second)
	fresp := rc.roundTrip(f).(*kmsg.FetchResponse)
	fps := fresp.Topics[0].Partitions
	if len(fps) != 3 || fps[0].ErrorCode != inv || fps[1].ErrorCode != inv || fps[2].ErrorCode != 0 {
		t.Fatalf("fetch answers %+v, want partition 0 twice INVALID_REQUEST and partition 1 served", fps)
	}
	if vals := batchValues(t, fps[2].RecordBatches); len(vals) != 1 || vals[0] != "other" {
		t.Fatalf("partition 1 holds %v, want [other]", vals)
	}
	// Nothing of the refused partition was written.
	hw := rc.roundTrip(fetchReq(12, "dup", [16]byte{}, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0].HighWatermark
	if hw != 0 {
		t.Fatalf("partition 0 high watermark %d, want 0: a refused batch was written", hw)
	}
}

// batchValues decodes the record values of uncompressed fetched batches.
func batchValues(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		raw = raw[12+int(b.Length):]
		recs := b.Records
		for range b.NumRecords {
			var r kmsg.Record
			if err := r.ReadFrom(recs); err != nil {
				t.Fatal(err)
			}
			out = append(out, string(r.Value))
			recs = recs[len(r.AppendTo(nil)):]
		}
	}
	return out
}

// FetchMaxBytes bounds a fetch whatever max_bytes the client asks, and a
// record larger than the bound still comes back alone.
func TestFetchResponseCap(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	c := startCluster(t, func(cfg *gateway.Config) { cfg.FetchMaxBytes = limit })
	createTopic(t, c, "capped", 1, nil)
	rc := dialRaw(t, c.Addr)
	// One batch per record: a kafka-format topic returns stored batches
	// whole, so the cap is kept by whole batches.
	for range 100 {
		if code := rc.roundTrip(produceReq(9, "capped", 0, testBatch(-1, -1, -1, 1, string(make([]byte, 1000))))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	huge := string(make([]byte, 3*limit))
	if code := rc.roundTrip(produceReq(9, "capped", 0, testBatch(-1, -1, -1, 1, huge))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	f := fetchReq(12, "capped", [16]byte{}, 0, 0)
	f.MaxBytes = 1<<31 - 1
	f.Topics[0].Partitions[0].PartitionMaxBytes = 1<<31 - 1
	p := rc.roundTrip(f).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || len(p.RecordBatches) > limit {
		t.Fatalf("fetch asking 2 GiB: %v, %d bytes; want records within the %d-byte cap", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), limit)
	}
	f.Topics[0].Partitions[0].FetchOffset = 100
	p = rc.roundTrip(f).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if got := batchValues(t, p.RecordBatches); p.ErrorCode != 0 || len(got) != 1 || len(got[0]) != len(huge) {
		t.Fatalf("a record over the cap: %v, %d records; want it returned alone", kerr.ErrorForCode(p.ErrorCode), len(got))
	}
}

// slowDIS makes every PutRecords call take a while, as a loaded DIS does.
type slowDIS struct {
	disclient.API
	delay time.Duration
}

func (d slowDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	select {
	case <-time.After(d.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return d.API.PutRecords(ctx, req)
}

// An acks=0 producer sending far faster than DIS takes records does not
// make the gateway queue without limit: the write queues stay within their
// bound, the heap stays small, and the gateway keeps serving.
func TestAcksZeroFloodStaysBounded(t *testing.T) {
	// Not parallel: it measures the process's heap.
	const queueBytes = 1 << 20
	reg := prometheus.NewRegistry()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log,
		WrapDIS: func(api disclient.API) disclient.API { return slowDIS{API: api, delay: 50 * time.Millisecond} },
		Gateway: func(cfg *gateway.Config) {
			cfg.Registry = reg
			cfg.MaxPartitionQueueBytes = 256 << 10
			cfg.MaxQueueBytes = queueBytes
			cfg.MaxFrameBytes = 1 << 20
			cfg.MaxInflightBytesPerConn = 4 << 20
			cfg.PutRecordsMaxBytes = 256 << 10 // DIS takes about 5 MiB/s per partition
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	createTopic(t, c, "flood", 2, nil)

	vals := make([]string, 100)
	for i := range vals {
		vals[i] = string(make([]byte, 1000))
	}
	batch := testBatch(-1, -1, -1, 1, vals...)
	req := produceReq(9, "flood", 0, batch)
	req.Acks = 0
	p1 := kmsg.NewProduceRequestTopicPartition()
	p1.Partition, p1.Records = 1, batch
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	rc := dialRaw(t, c.Addr)
	frame := rc.fmt.AppendRequest(nil, req, 1)
	const flood = 64 << 20 // far more than DIS takes in the test's time

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var maxQueued, maxHeap atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > maxHeap.Load() {
				maxHeap.Store(ms.HeapInuse)
			}
			if q := uint64(gaugeValue(t, reg, "disgw_produce_queue_bytes")); q > maxQueued.Load() {
				maxQueued.Store(q)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	for sent := 0; sent < flood; sent += len(frame) {
		// The gateway stops reading, and may close a connection that keeps
		// sending anyway: either is backpressure.
		_ = rc.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := rc.conn.Write(frame); err != nil {
			break
		}
	}
	close(stop)
	<-sampled

	// One batch costs its data plus a little per record; a queue may take
	// one batch past its bound when it was empty.
	if q := maxQueued.Load(); q > queueBytes+2*uint64(len(batch)) {
		t.Errorf("write queues held %d bytes, bound %d", q, queueBytes)
	}
	if grown := int64(maxHeap.Load()) - int64(before.HeapInuse); grown > 48<<20 {
		t.Errorf("heap grew by %d MiB during a %d MiB flood", grown>>20, flood>>20)
	}
	alive := dialRaw(t, c.Addr)
	p := alive.roundTrip(produceReq(9, "flood", 0, testBatch(-1, -1, -1, 1, "alive"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("produce after the flood: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}

// gaugeValue reads one gauge from reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Error(err)
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}
