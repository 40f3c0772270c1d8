package test

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// zstdBombBatch is a v2 batch of one record whose value is n zero bytes,
// zstd-compressed as it is streamed, so the test never holds n bytes.
func zstdBombBatch(t *testing.T, n int) []byte {
	t.Helper()
	var body []byte
	body = append(body, 0)                     // attributes
	body = binary.AppendVarint(body, 0)        // timestamp delta
	body = binary.AppendVarint(body, 0)        // offset delta
	body = binary.AppendVarint(body, -1)       // null key
	body = binary.AppendVarint(body, int64(n)) // value length
	bodyLen := len(body) + n + 1               // value, then 0 headers
	var compressed bytes.Buffer
	w, err := zstd.NewWriter(&compressed, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(binary.AppendVarint(nil, int64(bodyLen)))
	_, _ = w.Write(body)
	zeros := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zeros) {
		_, _ = w.Write(zeros[:min(left, len(zeros))])
	}
	_, _ = w.Write(binary.AppendVarint(nil, 0))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return rawBatch(kmsg.RecordBatch{
		Magic: 2, Attributes: 4, PartitionLeaderEpoch: -1, FirstTimestamp: 1, MaxTimestamp: 1,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: compressed.Bytes(),
	})
}

// One produce request listing a small zstd bomb for 50 partitions is
// refused partition by partition with MESSAGE_TOO_LARGE, decompresses one
// request budget in all rather than one per partition, and leaves the
// gateway answering.
func TestProduceZstdBombAcrossPartitions(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	const budget = 32 << 20
	c := startCluster(t, func(cfg *gateway.Config) { cfg.MaxDecompressedBytes = budget })
	createTopic(t, c, "bombed", 50, nil)
	bomb := zstdBombBatch(t, 256<<20)
	if len(bomb) > 16<<10 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	req := produceReq(9, "bombed", 0, bomb)
	for p := int32(1); p < 50; p++ {
		part := kmsg.NewProduceRequestTopicPartition()
		part.Partition = p
		part.Records = bomb
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, part)
	}
	rc := dialRaw(t, c.Addr)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp := rc.roundTrip(req).(*kmsg.ProduceResponse)
	runtime.ReadMemStats(&after)

	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 50 {
		t.Fatalf("response %+v", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.MessageTooLarge.Code {
			t.Errorf("partition %d: %v, want MESSAGE_TOO_LARGE", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	// One budget with its buffer doublings, a zstd window and the
	// gateway's own garbage; one budget per partition would be 1.6 GiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 6*budget {
		t.Errorf("the request allocated %d MiB, over 6 budgets of %d MiB", alloc>>20, budget>>20)
	}
	if heap := after.HeapInuse; heap > 512<<20 {
		t.Errorf("heap in use %d MiB after the request", heap>>20)
	}

	ok := rc.roundTrip(produceReq(9, "bombed", 3, testBatch(-1, -1, -1, 1, "after the bomb"))).(*kmsg.ProduceResponse)
	if code := ok.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce after the bomb: %v", kerr.ErrorForCode(code))
	}
}

// A batch with a correct CRC and no records, or a count that disagrees
// with its last offset delta, is refused with INVALID_RECORD before it
// reaches a partition writer, and the gateway goes on answering.
func TestProduceZeroRecordBatch(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "empty-batches", 1, nil)
	rc := dialRaw(t, c.Addr)
	for name, b := range map[string]kmsg.RecordBatch{
		"zero records":       {Magic: 2, PartitionLeaderEpoch: -1, LastOffsetDelta: -1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1},
		"count past records": {Magic: 2, PartitionLeaderEpoch: -1, LastOffsetDelta: 1, NumRecords: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1},
	} {
		p := rc.roundTrip(produceReq(9, "empty-batches", 0, rawBatch(b))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("%s: %v, want INVALID_RECORD", name, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	p := rc.roundTrip(produceReq(9, "empty-batches", 0, testBatch(-1, -1, -1, 1, "v"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("a good batch after them: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}
