package protocol

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The fuzz targets assert that no input panics and that whatever decodes
// re-encodes consistently. Their seeds run in every go test.

func FuzzParseRequest(f *testing.F) {
	client := "fuzz"
	f.Add(frameOf(f, metadataRequest(), 4, 1, &client))
	f.Add(frameOf(f, metadataRequest(), 12, 2, nil))
	f.Add(frameOf(f, kmsg.NewPtrApiVersionsRequest(), 3, 3, &client))
	produce := kmsg.NewPtrProduceRequest()
	topic := kmsg.NewProduceRequestTopic()
	topic.Partitions = append(topic.Partitions, kmsg.NewProduceRequestTopicPartition())
	produce.Topics = append(produce.Topics, topic)
	f.Add(frameOf(f, produce, 9, 4, &client))
	f.Add([]byte{0, 18, 0, 99, 0, 0, 0, 5, 0xff, 0xff})
	f.Add([]byte{0, 3, 0, 9, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := ParseRequest(frame)
		if err != nil {
			return
		}
		if req.Body.Key() != req.Header.Key || req.Body.GetVersion() != req.Header.Version {
			t.Fatalf("body %d v%d under header %+v", req.Body.Key(), req.Body.GetVersion(), req.Header)
		}
		req.Body.AppendTo(nil)
	})
}

func FuzzDecodeBatches(f *testing.F) {
	for _, codec := range allCodecs {
		data, err := AppendBatch(nil, producedRecords(), codec, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	// The batches a broker must refuse: no records, a count that
	// disagrees with the last offset delta, offset deltas with a gap, a
	// record count the bytes cannot hold, and a zstd bomb.
	one, err := AppendBatch(nil, producedRecords()[:1], CodecNone, 0)
	if err != nil {
		f.Fatal(err)
	}
	zero := bytes.Clone(one[:BatchHeaderSize])
	binary.BigEndian.PutUint32(zero[8:], BatchHeaderSize-12)
	binary.BigEndian.PutUint32(zero[23:], math.MaxUint32)
	binary.BigEndian.PutUint32(zero[57:], 0)
	f.Add(withFixedCRCs(zero))
	miscounted := bytes.Clone(one)
	binary.BigEndian.PutUint32(miscounted[23:], 1)
	f.Add(withFixedCRCs(miscounted))
	gapped, err := AppendBatch(nil, sampleRecords(), CodecNone, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(gapped)
	overclaimed := bytes.Clone(one)
	binary.BigEndian.PutUint32(overclaimed[57:], math.MaxInt32)
	f.Add(withFixedCRCs(overclaimed))
	f.Add(zstdBomb(f, 4<<20))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodedBatches(t, data)
		// Most mutations break a CRC; fixing them lets the fuzzer reach
		// the record and decompression code behind it.
		checkDecodedBatches(t, withFixedCRCs(bytes.Clone(data)))
	})
}

func checkDecodedBatches(t *testing.T, data []byte) {
	budget := NewDecompressBudget(1 << 20)
	batches, err := DecodeBatches(data, budget)
	if c := budget.Charged(); c < 0 || c > 1<<20 {
		t.Fatalf("%d bytes charged to a 1 MiB budget, error %v", c, err)
	}
	// CheckBatches decides alike and sums up the same records.
	checked, cerr := CheckBatches(data, NewDecompressBudget(1<<20))
	if (err == nil) != (cerr == nil) || err != nil && err.Error() != cerr.Error() {
		t.Fatalf("DecodeBatches: %v, CheckBatches: %v", err, cerr)
	}
	if err != nil {
		return
	}
	for i, b := range batches {
		if checked[i].Records != nil || checked[i].Timestamps != b.Timestamps || !bytes.Equal(checked[i].Raw, b.Raw) {
			t.Fatalf("batch %d: CheckBatches gave %+v, DecodeBatches timestamps %+v", i, checked[i], b.Timestamps)
		}
		tr := TimestampRange{}
		for j, r := range b.Records {
			tr.add(j, r.Timestamp)
		}
		if tr != b.Timestamps {
			t.Fatalf("batch %d: timestamps %+v, records say %+v", i, b.Timestamps, tr)
		}
	}
	for _, b := range batches {
		if len(b.Records) != int(b.NumRecords) || b.NumRecords < 1 || int64(b.LastOffsetDelta)+1 != int64(b.NumRecords) {
			t.Fatalf("%d records, %d announced, last offset delta %d", len(b.Records), b.NumRecords, b.LastOffsetDelta)
		}
		for i, r := range b.Records {
			if r.Offset != b.BaseOffset+int64(i) {
				t.Fatalf("record %d at offset %d of a batch based at %d", i, r.Offset, b.BaseOffset)
			}
		}
	}
}

// withFixedCRCs rewrites the CRC of every whole batch in data.
func withFixedCRCs(data []byte) []byte {
	for rest := data; len(rest) >= BatchHeaderSize; {
		end := 12 + int64(int32(binary.BigEndian.Uint32(rest[8:])))
		if end < BatchHeaderSize || end > int64(len(rest)) {
			break
		}
		fixCRC(rest[:end])
		rest = rest[end:]
	}
	return data
}
