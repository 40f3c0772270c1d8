package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A stored batch is stamped with its base offset and leader epoch without
// touching its CRC; LogAppendTime and a corrected max timestamp recompute
// it, and every record then reads as the batch says.
func TestStampedBatchesStayValid(t *testing.T) {
	recs := []Record{{Offset: 0, Timestamp: 300, Value: []byte("a")}, {Offset: 1, Timestamp: 100, Value: []byte("b")}}
	for _, codec := range allCodecs {
		b, err := AppendBatch(nil, recs, codec, 0)
		if err != nil {
			t.Fatal(err)
		}
		StampBatch(b, 42, 0)
		info, ok := ParseBatchInfo(b)
		if !ok || info.BaseOffset != 42 || info.LastOffset() != 43 || info.MaxTimestamp != 300 {
			t.Fatalf("%v: stamped batch reads %+v, %v", codec, info, ok)
		}
		if bs, err := DecodeBatches(b, NewDecompressBudget(1<<20)); err != nil || bs[0].Records[1].Offset != 43 {
			t.Fatalf("%v: stamped batch decodes as %v, %v", codec, bs, err)
		}
		SetMaxTimestamp(b, 250)
		if _, err := DecodeBatches(b, NewDecompressBudget(1<<20)); err != nil {
			t.Fatalf("%v: after a max timestamp correction: %v", codec, err)
		}
		SetLogAppendTime(b, 999)
		bs, err := DecodeBatches(b, NewDecompressBudget(1<<20))
		if err != nil || !bs[0].LogAppendTime() || bs[0].Records[0].Timestamp != 999 || bs[0].Records[1].Timestamp != 999 {
			t.Fatalf("%v: LogAppendTime batch decodes as %+v, %v", codec, bs, err)
		}
	}
	if _, ok := ParseBatchInfo([]byte("plain data written by a DIS-native producer, long enough to hold a header")); ok {
		t.Fatal("plain data parsed as a batch")
	}
}

// sparseRecords returns minimal records with the given offset deltas.
func sparseRecords(deltas ...byte) []byte {
	var out []byte
	for _, d := range deltas {
		out = append(out, minimalRecord(d)...)
	}
	return out
}

// A stored batch may be sparse, as compaction leaves it: fewer records than
// offsets, offset deltas rising with gaps. Producers still may not send one.
func TestDecodeStoredBatchSparse(t *testing.T) {
	good, err := AppendBatch(nil, producedRecords()[:1], CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := int64(binary.BigEndian.Uint64(good))
	for _, tc := range []struct {
		name            string
		lastOffsetDelta int32
		deltas          []byte
	}{
		{"dense", 1, []byte{0, 1}},
		{"a gap", 2, []byte{0, 2}},
		{"first record removed", 2, []byte{1, 2}},
		{"last record removed", 3, []byte{0, 1}},
		{"one record left in the middle", 5, []byte{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := withRecordBytes(good, tc.lastOffsetDelta, int32(len(tc.deltas)), sparseRecords(tc.deltas...)...)
			b, err := DecodeStoredBatch(data, NewDecompressBudget(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Records) != len(tc.deltas) || !bytes.Equal(b.Raw, data) {
				t.Fatalf("%d records, raw %d bytes", len(b.Records), len(b.Raw))
			}
			for i, d := range tc.deltas {
				if b.Records[i].Offset != base+int64(d) {
					t.Errorf("record %d at offset %d, want %d", i, b.Records[i].Offset, base+int64(d))
				}
			}
			info, ok := ParseStoredBatchInfo(data)
			if !ok || info.LastOffset() != base+int64(tc.lastOffsetDelta) || info.NumRecords != int32(len(tc.deltas)) {
				t.Errorf("ParseStoredBatchInfo: %+v, %v", info, ok)
			}
			if head, ok := ParseStoredBatchHead(data[:BatchHeaderSize], len(data)); !ok || head != info {
				t.Errorf("ParseStoredBatchHead: %+v, %v", head, ok)
			}
			dense := int(tc.lastOffsetDelta)+1 == len(tc.deltas)
			if _, err := DecodeBatches(data, NewDecompressBudget(1<<20)); (err == nil) != dense {
				t.Errorf("DecodeBatches: %v", err)
			}
			if _, ok := ParseBatchInfo(data); ok != dense {
				t.Errorf("ParseBatchInfo: %v", ok)
			}
		})
	}
}

func TestDecodeStoredBatchInvalid(t *testing.T) {
	good, err := AppendBatch(nil, producedRecords()[:2], CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		head bool // ParseStoredBatchHead accepts it: it reads only the header
	}{
		{"empty", nil, false},
		{"truncated", good[:len(good)-1], false},
		{"trailing bytes", append(bytes.Clone(good), good...), false},
		{"no records", withRecordBytes(good, 2, 0), false},
		{"negative last offset delta", withRecordBytes(good, -1, 1, sparseRecords(0)...), false},
		{"more records than offsets", withRecordBytes(good, 1, 3, sparseRecords(0, 1, 2)...), false},
		{"offset deltas descending", withRecordBytes(good, 2, 2, sparseRecords(2, 1)...), true},
		{"offset deltas repeated", withRecordBytes(good, 2, 2, sparseRecords(1, 1)...), true},
		{"offset delta past the last", withRecordBytes(good, 2, 1, sparseRecords(3)...), true},
		{"first record leaves no room for the second", withRecordBytes(good, 2, 2, sparseRecords(2, 3)...), true},
		{"more records announced than held", withRecordBytes(good, 4, 3, sparseRecords(0, 2)...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeStoredBatch(tc.data, NewDecompressBudget(1<<20)); err == nil {
				t.Fatal("decoded")
			} else if ire := (*InvalidRecordError)(nil); !errors.As(err, &ire) {
				t.Fatalf("got %v, want *InvalidRecordError", err)
			}
			if _, ok := ParseStoredBatchInfo(tc.data); ok != tc.head {
				t.Errorf("ParseStoredBatchInfo: %v", ok)
			}
		})
	}
}

// A sparse batch's last sequence counts from its last offset delta, as
// Kafka's does: compaction leaves the producer's sequence range as it was.
func TestLastSequenceOfSparseBatch(t *testing.T) {
	for _, tc := range []struct {
		info BatchInfo
		want int32
	}{
		{BatchInfo{BaseSequence: 10, LastOffsetDelta: 4, NumRecords: 5}, 14},
		{BatchInfo{BaseSequence: 10, LastOffsetDelta: 4, NumRecords: 2}, 14},
		{BatchInfo{BaseSequence: math.MaxInt32, LastOffsetDelta: 2, NumRecords: 1}, 1},
	} {
		if got := tc.info.LastSequence(); got != tc.want {
			t.Errorf("%+v: last sequence %d, want %d", tc.info, got, tc.want)
		}
	}
}

// keepOffsets keeps the records at the given offset deltas from base.
func keepOffsets(base int64, deltas ...int64) func(r *Record) bool {
	return func(r *Record) bool { return slices.Contains(deltas, r.Offset-base) }
}

func TestFilterBatch(t *testing.T) {
	recs := producedRecords() // offsets 100 to 104
	all := func(*Record) bool { return true }
	none := func(*Record) bool { return false }
	tombstones := func(r *Record) bool { return r.Value != nil }
	for _, codec := range allCodecs {
		for _, logAppendTime := range []bool{false, true} {
			data, err := AppendBatch(nil, recs, codec, 9)
			if err != nil {
				t.Fatal(err)
			}
			binary.BigEndian.PutUint64(data[43:], 4242) // producer id
			binary.BigEndian.PutUint16(data[51:], 3)    // producer epoch
			binary.BigEndian.PutUint32(data[53:], 77)   // base sequence
			binary.BigEndian.PutUint16(data[21:], binary.BigEndian.Uint16(data[21:])|attrTransactional)
			fixCRC(data)
			if logAppendTime {
				SetLogAppendTime(data, 1_800_000_000_000)
			}
			for _, tc := range []struct {
				name string
				keep func(r *Record) bool
				want int
			}{
				{"all", all, 5},
				{"none", none, 0},
				{"first", keepOffsets(100, 0), 1},
				{"last", keepOffsets(100, 4), 1},
				{"all but the last", keepOffsets(100, 0, 1, 2, 3), 4},
				{"all but the first", keepOffsets(100, 1, 2, 3, 4), 4},
				{"every other", keepOffsets(100, 0, 2, 4), 3},
				{"no tombstones", tombstones, 4},
				{"the latest record", func(r *Record) bool { return r.Timestamp == 1_700_000_009_000 || logAppendTime && r.Offset == 103 }, 1},
			} {
				t.Run(fmt.Sprintf("%v/logAppendTime=%v/%s", codec, logAppendTime, tc.name), func(t *testing.T) {
					prefix := []byte("dst")
					out, kept, err := FilterBatch(prefix, data, tc.keep, NewDecompressBudget(1<<20))
					if err != nil {
						t.Fatal(err)
					}
					if kept != tc.want || string(out[:3]) != "dst" {
						t.Fatalf("kept %d, want %d; dst %q", kept, tc.want, out[:3])
					}
					if want, keptAt := checkFiltered(t, data, out[3:], kept, tc.keep); want != nil {
						checkIndependentReads(t, data, out[3:], want, keptAt)
					}
					if kept == 0 {
						return
					}
					// What was kept filters again.
					again, kept, err := FilterBatch(nil, out[3:], keepOffsets(100, 2, 3, 4), NewDecompressBudget(1<<20))
					if err != nil {
						t.Fatal(err)
					}
					if want, keptAt := checkFiltered(t, out[3:], again, kept, keepOffsets(100, 2, 3, 4)); want != nil {
						checkIndependentReads(t, out[3:], again, want, keptAt)
					}
				})
			}
		}
	}
}

// FilterBatch refuses what DecodeStoredBatch refuses, appending nothing,
// and stops decompressing at the budget's end.
func TestFilterBatchInvalid(t *testing.T) {
	data, err := AppendBatch(nil, producedRecords(), CodecZstd, 0)
	if err != nil {
		t.Fatal(err)
	}
	keep := func(r *Record) bool { return r.Offset%2 == 0 }
	prefix := []byte("dst")
	check := func(name string, data []byte, budget int64) error {
		t.Helper()
		out, kept, err := FilterBatch(prefix, data, keep, NewDecompressBudget(budget))
		if err == nil || kept != 0 || !bytes.Equal(out, prefix) {
			t.Errorf("%s: %d bytes, %d kept, error %v", name, len(out), kept, err)
		}
		return err
	}
	for n := range len(data) {
		check(fmt.Sprintf("truncated to %d bytes", n), data[:n], 1<<20)
	}
	flipped := bytes.Clone(data)
	flipped[len(flipped)-1] ^= 1
	if err := check("CRC mismatch", flipped, 1<<20); !errors.Is(err, ErrCorruptMessage) {
		t.Errorf("CRC mismatch: %v", err)
	}
	for _, magic := range []byte{0, 1, 3} {
		wrong := bytes.Clone(data)
		wrong[16] = magic
		check(fmt.Sprintf("magic %d", magic), withFixedCRCs(wrong), 1<<20)
	}
	if err := check("over budget", data, 1000); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Errorf("over budget: %v", err)
	}
	if err := check("zstd bomb", zstdBomb(t, 4<<20), 1<<20); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Errorf("zstd bomb: %v", err)
	}
	check("two batches", append(bytes.Clone(data), data...), 1<<20)
}

// TestFilterBatchRandom filters random batches of every codec and
// timestamp type, with headers, null and empty keys and values and
// idempotent producer fields, keeping a random subset, and then filters
// what it kept again.
func TestFilterBatchRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	for _, codec := range allCodecs {
		for _, logAppendTime := range []bool{false, true} {
			for range 20 {
				data := randomStoredBatch(t, rng, codec, logAppendTime)
				for round := range 3 {
					seed := rng.Uint64()
					keep := func(r *Record) bool { return (uint64(r.Offset)*0x9e3779b97f4a7c15^seed)>>61 < 5 }
					out, kept, err := FilterBatch(nil, data, keep, NewDecompressBudget(1<<30))
					if err != nil {
						t.Fatalf("%v round %d: %v", codec, round, err)
					}
					if want, keptAt := checkFiltered(t, data, out, kept, keep); want != nil {
						checkIndependentReads(t, data, out, want, keptAt)
					}
					if kept == 0 {
						break
					}
					data = out
				}
			}
		}
	}
}

// randomStoredBatch is a random dense batch as a kafka-format topic
// stores it.
func randomStoredBatch(t *testing.T, rng *rand.Rand, codec Codec, logAppendTime bool) []byte {
	t.Helper()
	randomBytes := func() []byte {
		switch rng.IntN(5) {
		case 0:
			return nil
		case 1:
			return []byte{}
		case 2:
			return bytes.Repeat([]byte("compressible "), 1+rng.IntN(50))
		}
		return randomLetters(rng.Uint64(), rng.IntN(40), 26, 0)
	}
	base, first := rng.Int64N(1<<40), 1_700_000_000_000+rng.Int64N(1<<30)
	recs := make([]Record, 1+rng.IntN(60))
	for i := range recs {
		recs[i] = Record{Offset: base + int64(i), Timestamp: first + rng.Int64N(20_000) - 10_000, Key: randomBytes(), Value: randomBytes()}
		for h := range rng.IntN(4) {
			recs[i].Headers = append(recs[i].Headers, Header{Key: fmt.Sprint("h", h), Value: randomBytes()})
		}
	}
	recs[0].Timestamp = first
	data, err := AppendBatch(nil, recs, codec, rng.Int32())
	if err != nil {
		t.Fatal(err)
	}
	if rng.IntN(2) == 0 {
		binary.BigEndian.PutUint64(data[43:], uint64(rng.Int64N(1<<40)))
		binary.BigEndian.PutUint16(data[51:], uint16(rng.IntN(1<<15)))
		binary.BigEndian.PutUint32(data[53:], uint32(rng.Int32()))
		fixCRC(data)
	}
	if logAppendTime {
		SetLogAppendTime(data, first+rng.Int64N(1<<20))
	}
	return data
}

// checkFiltered checks out, what FilterBatch made of src keeping kept
// records with keep: nothing when keep is false for every record, src when
// it is true for every one, and otherwise the records keep is true for,
// with their offsets, timestamps, keys, values and headers, in a batch with
// src's header fields, a valid CRC and the right length. For a new batch
// it returns the records kept and their indexes in src.
func checkFiltered(t *testing.T, src, out []byte, kept int, keep func(r *Record) bool) (want []Record, keptAt []int) {
	t.Helper()
	in, err := DecodeStoredBatch(src, NewDecompressBudget(1<<30))
	if err != nil {
		t.Fatal(err)
	}
	for i := range in.Records {
		if keep(&in.Records[i]) {
			want, keptAt = append(want, in.Records[i]), append(keptAt, i)
		}
	}
	switch {
	case kept != len(want):
		t.Fatalf("kept %d records, want %d", kept, len(want))
	case kept == 0:
		if len(out) != 0 {
			t.Fatalf("kept none, but appended %d bytes", len(out))
		}
		return nil, nil
	case kept == len(in.Records):
		if !bytes.Equal(out, src) {
			t.Fatal("kept all, but the batch changed")
		}
		return nil, nil
	}
	got, err := DecodeStoredBatch(out, NewDecompressBudget(1<<30))
	if err != nil {
		t.Fatal(err)
	}
	header := in
	header.NumRecords = int32(kept)
	if !in.LogAppendTime() {
		header.MaxTimestamp = want[0].Timestamp
		for _, r := range want {
			header.MaxTimestamp = max(header.MaxTimestamp, r.Timestamp)
		}
	}
	header.Records, header.Raw, header.Timestamps, header.FirstNullKey = got.Records, got.Raw, got.Timestamps, got.FirstNullKey
	if !reflect.DeepEqual(got, header) {
		t.Fatalf("header\ngot  %+v\nwant %+v", got, header)
	}
	if !reflect.DeepEqual(got.Records, want) {
		t.Fatalf("records\ngot  %+v\nwant %+v", got.Records, want)
	}
	if int(binary.BigEndian.Uint32(out[8:])) != len(out)-12 || binary.BigEndian.Uint32(out[17:]) != crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatal("wrong length or CRC")
	}
	if info, ok := ParseStoredBatchInfo(out); !ok || info.NumRecords != int32(kept) || info.LastOffsetDelta != in.LastOffsetDelta {
		t.Fatalf("ParseStoredBatchInfo: %+v, %v", info, ok)
	}
	return want, keptAt
}

// checkIndependentReads checks out, what FilterBatch made of src keeping
// the records at keptAt, with decoders other than this package's: kmsg
// reads each record with the deltas, key, value and headers it had in src,
// and franz-go's consumer reads the records want at their offsets.
func checkIndependentReads(t *testing.T, src, out []byte, want []Record, keptAt []int) {
	t.Helper()
	srcRecs, _ := kmsgRecords(t, src)
	outRecs, _ := kmsgRecords(t, out)
	if len(outRecs) != len(keptAt) {
		t.Fatalf("kmsg reads %d records, want %d", len(outRecs), len(keptAt))
	}
	for i, r := range outRecs {
		w := srcRecs[keptAt[i]]
		if r.OffsetDelta != w.OffsetDelta || r.TimestampDelta64 != w.TimestampDelta64 ||
			!reflect.DeepEqual(r.Key, w.Key) || !reflect.DeepEqual(r.Value, w.Value) || !reflect.DeepEqual(r.Headers, w.Headers) {
			t.Fatalf("record %d reads as %+v, was %+v", i, r, w)
		}
	}
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = out
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, &rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		t.Fatal(fp.Err)
	}
	if len(fp.Records) != len(want) {
		t.Fatalf("kgo reads %d records, want %d", len(fp.Records), len(want))
	}
	for i, r := range fp.Records {
		w := want[i]
		var headers []Header
		for _, h := range r.Headers {
			headers = append(headers, Header{Key: h.Key, Value: h.Value})
		}
		if r.Offset != w.Offset || r.Timestamp.UnixMilli() != w.Timestamp ||
			!reflect.DeepEqual(r.Key, w.Key) || !reflect.DeepEqual(r.Value, w.Value) || !reflect.DeepEqual(headers, w.Headers) {
			t.Fatalf("kgo reads record %d as %+v, want %+v", i, r, w)
		}
	}
}
