package sdkconformance_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/huaweicloud/huaweicloud-sdk-go-v3/services/dis/v2/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/gateway"
)

// docRecord is one Kafka record as docs/record-envelope.md describes it.
type docRecord struct {
	offset, timestamp int64
	key, value        []byte // nil for null
	headers           map[string]string
}

// decodeDocBatch decodes one DIS record of a kafka-format stream following
// docs/record-envelope.md alone, as a DIS-native program in another language
// would: header fields at their documented offsets, CRC-32C from byte 21,
// gzip (codec 1) records, zigzag varints.
func decodeDocBatch(t *testing.T, data []byte) []docRecord {
	t.Helper()
	be := binary.BigEndian
	if len(data) < 61 || data[16] != 2 || int(be.Uint32(data[8:])) != len(data)-12 {
		t.Fatalf("DIS record of %d bytes is not a v2 batch", len(data))
	}
	if crc32.Checksum(data[21:], crc32.MakeTable(crc32.Castagnoli)) != be.Uint32(data[17:]) {
		t.Fatal("CRC-32C mismatch")
	}
	base, attrs := int64(be.Uint64(data)), be.Uint16(data[21:])
	first, count := int64(be.Uint64(data[27:])), int(be.Uint32(data[57:]))
	recs := data[61:]
	switch attrs & 7 {
	case 0:
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(recs))
		if err != nil {
			t.Fatal(err)
		}
		if recs, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("codec %d: this reader only knows gzip", attrs&7)
	}
	varint := func() int64 {
		v, n := binary.Varint(recs)
		if n <= 0 {
			t.Fatal("bad varint")
		}
		recs = recs[n:]
		return v
	}
	bytesField := func() []byte {
		n := varint()
		if n < 0 {
			return nil
		}
		b := recs[:n:n]
		recs = recs[n:]
		return b
	}
	var out []docRecord
	for range count {
		varint() // length
		recs = recs[1:]
		r := docRecord{timestamp: first + varint(), headers: map[string]string{}}
		r.offset = base + varint()
		r.key, r.value = bytesField(), bytesField()
		for range varint() {
			k := bytesField()
			r.headers[string(k)] = string(bytesField())
		}
		out = append(out, r)
	}
	return out
}

// A DIS-native program reading a kafka-format stream with the official
// SDK decodes what Kafka clients produced through the gateway, offsets
// included, from docs/record-envelope.md alone.
func TestSDKReadsKafkaFormatStream(t *testing.T) {
	srv := dislocaltest.Start(t,
		dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone }),
		dislocaltest.WithClient(func(c *disclient.Config) { c.ProjectID = sdkProject }))
	gw, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", AutoCreateTopics: true}, srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.AllowAutoTopicCreation(),
		kgo.DefaultProduceTopic("native"), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ts := time.UnixMilli(1_700_000_000_000)
	var sent []*kgo.Record
	for i := range 3 {
		batch := []*kgo.Record{
			{Key: []byte("k"), Value: bytes.Repeat([]byte{'a' + byte(i)}, 100), Timestamp: ts, Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}},
			{Value: nil, Timestamp: ts.Add(time.Second)},
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, batch...)
	}

	c := sdkClientFor(t, srv.HTTP)
	cursor := val(t, "partition_cursor", must(c.ShowCursor(&model.ShowCursorRequest{
		StreamName: "native", PartitionId: "shardId-0000000000", CursorType: ptr(model.GetShowCursorRequestCursorTypeEnum().TRIM_HORIZON),
	}))(t).PartitionCursor)
	resp := must(c.ConsumeRecords(&model.ConsumeRecordsRequest{PartitionCursor: cursor}))(t)
	var got []docRecord
	for _, r := range val(t, "records", resp.Records) {
		data, err := base64.StdEncoding.DecodeString(val(t, "data", r.Data))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, decodeDocBatch(t, data)...)
	}
	if len(got) != len(sent) {
		t.Fatalf("decoded %d records, want %d", len(got), len(sent))
	}
	for i, r := range got {
		s := sent[i]
		if r.offset != s.Offset || r.timestamp != s.Timestamp.UnixMilli() || !bytes.Equal(r.key, s.Key) || !bytes.Equal(r.value, s.Value) ||
			(s.Key == nil) != (r.key == nil) || (s.Value == nil) != (r.value == nil) || len(r.headers) != len(s.Headers) {
			t.Errorf("record %d decoded as %+v, sent offset %d %+v", i, r, s.Offset, s)
		}
	}
}
