package gateway

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/disgw/disgw/protocol"
)

// largeTopic creates a one-partition topic with max.message.bytes set.
func largeTopic(t *testing.T, kc *kgo.Client, topic string, maxBytes int) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "max.message.bytes", kmsg.StringPtr(strconv.Itoa(maxBytes))
	ct.Configs = append(ct.Configs, c)
	create.Topics = append(create.Topics, ct)
	if resp, err := create.RequestWith(context.Background(), kc); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %v", resp, err)
	}
}

// Through a gateway whose DIS records are 64 KiB: a topic with a larger
// max.message.bytes takes a batch of several records, serves it back
// whole, and keeps offsets dense around it.
func TestLargeBatchThroughGateway(t *testing.T) {
	dis := localDIS(t)
	cfg := Config{MaxRecordBytes: 64 << 10, PutRecordsMaxBytes: 128 << 10}
	gw := startGateway(t, cfg, dis)
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	largeTopic(t, kc, "big", 1<<20)

	if base := produceRaw(t, kc, "big", batchesOf(t, 1, 2, 10)); base != 0 {
		t.Fatalf("first batch at %d", base)
	}
	big := batchesOf(t, 1, 1, 300_000)
	if base := produceRaw(t, kc, "big", big); base != 2 {
		t.Fatalf("large batch at %d, want 2", base)
	}
	if base := produceRaw(t, kc, "big", batchesOf(t, 1, 1, 10)); base != 3 {
		t.Fatalf("batch after the large one at %d, want 3", base)
	}
	p := fetchPartition0(t, kc, "big", 2, 1024)
	bs, err := protocol.DecodeBatches(p.RecordBatches, protocol.NewDecompressBudget(1<<20))
	if err != nil || len(bs) == 0 || bs[0].BaseOffset != 2 || len(bs[0].Records) != 1 || len(bs[0].Records[0].Value) != 300_000 {
		t.Fatalf("fetching the large batch over a 1 KiB partition limit: %d batches, %v", len(bs), err)
	}

}

// A batch over the topic's max.message.bytes is refused with
// MESSAGE_TOO_LARGE, the default being one DIS record.
func TestLargeBatchOverTheLimit(t *testing.T) {
	gw := startGateway(t, Config{MaxRecordBytes: 64 << 10}, localDIS(t))
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	largeTopic(t, kc, "small", 64<<10)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 20000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "small"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batchesOf(t, 1, 1, 100_000)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), kc)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 10 {
		t.Fatalf("error %d, want MESSAGE_TOO_LARGE (10)", code)
	}
}

// A Fetch answer of more batches than one writev takes (1024 pieces) goes
// out spliced, in several writes, byte for byte what was stored: the many
// small batches compressible data makes are not copied together first.
func TestFetchOfMoreBatchesThanOneWritev(t *testing.T) {
	gw := startGateway(t, Config{}, localDIS(t))
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	largeTopic(t, kc, "many", 1<<20)
	const n = 1500
	var want []byte
	for i := range n {
		b := batchesOf(t, 1, 1, 1+i%7)
		if base := produceRaw(t, kc, "many", b); base != int64(i) {
			t.Fatalf("batch %d at offset %d", i, base)
		}
		protocol.StampBatch(b, int64(i), 0)
		want = append(want, b...)
	}
	p := fetchPartition0(t, kc, "many", 0, 1<<20)
	if !bytes.Equal(p.RecordBatches, want) {
		bs, err := protocol.DecodeBatches(p.RecordBatches, protocol.NewDecompressBudget(1<<20))
		t.Fatalf("fetched %d bytes in %d batches (%v), want the %d bytes of the %d stored", len(p.RecordBatches), len(bs), err, len(want), n)
	}
}
