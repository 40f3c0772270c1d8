package protocol

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// sampleRecords covers what a batch must carry exactly: null and empty keys
// and values, headers with null and empty values, a timestamp older than the
// first (a negative delta), offset gaps, and a value big enough to compress.
func sampleRecords() []Record {
	return []Record{
		{Offset: 100, Timestamp: 1_700_000_000_000, Key: []byte("k1"), Value: []byte("v1")},
		{Offset: 101, Timestamp: 1_699_999_999_000, Key: nil, Value: []byte{}},
		{Offset: 102, Timestamp: 1_700_000_000_500, Key: []byte{}, Value: nil, Headers: []Header{
			{Key: "trace", Value: []byte("abc")},
			{Key: "null", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "", Value: []byte("empty key")},
		}},
		{Offset: 105, Timestamp: 1_700_000_009_000, Key: []byte("big"), Value: []byte(strings.Repeat("compressible ", 500))},
		{Offset: 106, Timestamp: 0, Value: []byte("epoch")},
	}
}

// producedRecords is sampleRecords numbered as a producer numbers them:
// offset deltas 0, 1, 2, ..., which DecodeBatches requires.
func producedRecords() []Record {
	recs := sampleRecords()
	for i := range recs {
		recs[i].Offset = 100 + int64(i)
	}
	return recs
}

func fixCRC(batch []byte) {
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
}

func TestBatchRoundTrip(t *testing.T) {
	recs := producedRecords()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			data, err := AppendBatch(nil, recs, codec, 7)
			if err != nil {
				t.Fatal(err)
			}
			batches, err := DecodeBatches(data, NewDecompressBudget(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			if len(batches) != 1 {
				t.Fatalf("%d batches", len(batches))
			}
			b := batches[0]
			want := Batch{
				BaseOffset: 100, PartitionLeaderEpoch: 7, Attributes: int16(codec), LastOffsetDelta: 4,
				FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_009_000,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 5,
				Records: recs, Raw: data,
				Timestamps:   TimestampRange{Min: 0, MinRecord: 4, Max: 1_700_000_009_000, MaxRecord: 3},
				FirstNullKey: 1,
			}
			if !reflect.DeepEqual(b, want) {
				t.Errorf("got  %+v\nwant %+v", b, want)
			}
			// CheckBatches sees the same batch and keeps no record.
			checked, err := CheckBatches(data, NewDecompressBudget(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			want.Records = nil
			if len(checked) != 1 || !reflect.DeepEqual(checked[0], want) {
				t.Errorf("CheckBatches: got %+v\nwant %+v", checked, want)
			}
			if b.Codec() != codec || b.Transactional() || b.Control() || b.LogAppendTime() {
				t.Errorf("attributes %#x", b.Attributes)
			}
		})
	}
}

// referenceDecompress undoes codec with libraries other than the ones
// Decompress uses where there is one (stdlib gzip), or their plain APIs.
func referenceDecompress(t *testing.T, codec Codec, src []byte) []byte {
	t.Helper()
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecNone:
		return src
	case CodecGzip:
		var r *stdgzip.Reader
		if r, err = stdgzip.NewReader(bytes.NewReader(src)); err == nil {
			out, err = io.ReadAll(r)
		}
	case CodecSnappy:
		out, err = s2.Decode(nil, src)
	case CodecLZ4:
		out, err = io.ReadAll(lz4.NewReader(bytes.NewReader(src)))
	case CodecZstd:
		var d *zstd.Decoder
		if d, err = zstd.NewReader(nil); err == nil {
			out, err = d.DecodeAll(src, nil)
			d.Close()
		}
	}
	if err != nil {
		t.Fatalf("reference %v decoder: %v", codec, err)
	}
	return out
}

// TestAppendBatchMatchesKmsg reads AppendBatch's output with franz-go's own
// record batch and record decoders.
func TestAppendBatchMatchesKmsg(t *testing.T) {
	recs := sampleRecords()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			data, err := AppendBatch(nil, recs, codec, 3)
			if err != nil {
				t.Fatal(err)
			}
			krecs, rb := kmsgRecords(t, data)
			if rb.FirstOffset != 100 || rb.PartitionLeaderEpoch != 3 || rb.Magic != 2 || rb.Attributes != int16(codec) ||
				rb.LastOffsetDelta != 6 || rb.FirstTimestamp != 1_700_000_000_000 || rb.MaxTimestamp != 1_700_000_009_000 ||
				rb.ProducerID != -1 || rb.ProducerEpoch != -1 || rb.FirstSequence != -1 || rb.NumRecords != 5 {
				t.Errorf("batch header %+v", rb)
			}
			if int(rb.Length) != len(data)-12 {
				t.Errorf("length %d, want %d", rb.Length, len(data)-12)
			}
			if uint32(rb.CRC) != crc32.Checksum(data[21:], crc32.MakeTable(crc32.Castagnoli)) {
				t.Errorf("CRC %#x does not cover attributes to end", uint32(rb.CRC))
			}
			if len(krecs) != len(recs) {
				t.Fatalf("%d records, want %d", len(krecs), len(recs))
			}
			for i, want := range recs {
				kr := krecs[i]
				if int64(kr.OffsetDelta) != want.Offset-100 || kr.TimestampDelta64 != want.Timestamp-1_700_000_000_000 ||
					!reflect.DeepEqual(kr.Key, want.Key) || !reflect.DeepEqual(kr.Value, want.Value) || len(kr.Headers) != len(want.Headers) {
					t.Errorf("record %d: got %+v, want %+v", i, kr, want)
				}
				for j, h := range kr.Headers {
					if h.Key != want.Headers[j].Key || !reflect.DeepEqual(h.Value, want.Headers[j].Value) {
						t.Errorf("record %d header %d: got %+v", i, j, h)
					}
				}
			}
		})
	}
}

// kmsgRecords reads one v2 batch with franz-go's record batch and record
// decoders, after referenceDecompress.
func kmsgRecords(t *testing.T, data []byte) ([]kmsg.Record, kmsg.RecordBatch) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(data); err != nil {
		t.Fatal(err)
	}
	var recs []kmsg.Record
	for raw := referenceDecompress(t, Codec(rb.Attributes&attrCodecMask), rb.Records); len(raw) > 0; {
		length, n := binary.Varint(raw)
		if n <= 0 || length < 0 || length > int64(len(raw)-n) {
			t.Fatalf("record %d: bad length", len(recs))
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(raw[:n+int(length)]); err != nil {
			t.Fatalf("record %d: %v", len(recs), err)
		}
		recs = append(recs, kr)
		raw = raw[n+int(length):]
	}
	return recs, rb
}

// referenceCompress compresses as other clients do: stdlib gzip, snappy in
// the Java client's xerial framing, an lz4 frame with 4 MiB blocks and
// block checksums, a streamed zstd frame without a content size.
func referenceCompress(t *testing.T, codec Codec, src []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case CodecNone:
		return src
	case CodecGzip:
		w := stdgzip.NewWriter(&buf)
		_, _ = w.Write(src)
		_ = w.Close()
	case CodecSnappy:
		return xerialFrame(src, 1000)
	case CodecLZ4:
		w := lz4.NewWriter(&buf)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.BlockChecksumOption(true)); err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(src)
		_ = w.Close()
	case CodecZstd:
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(src)
		_ = w.Close()
	}
	return buf.Bytes()
}

// xerialFrame frames src as the Java client's snappy stream does, in blocks
// of at most blockSize input bytes.
func xerialFrame(src []byte, blockSize int) []byte {
	out := append([]byte("\x82SNAPPY\x00"), 0, 0, 0, 1, 0, 0, 0, 1)
	for len(src) > 0 {
		n := min(blockSize, len(src))
		block := s2.EncodeSnappy(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		src = src[n:]
	}
	return out
}

// kmsgBatch builds a batch the way franz-go lays it out, from kmsg's record
// and record batch encoders.
func kmsgBatch(t *testing.T, codec Codec, attrs int16, recs []Record) []byte {
	t.Helper()
	var raw []byte
	for _, r := range recs {
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - recs[0].Timestamp,
			OffsetDelta:      int32(r.Offset - recs[0].Offset),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)[1:] // drop the placeholder length 0
		raw = binary.AppendVarint(raw, int64(len(body)))
		raw = append(raw, body...)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          recs[0].Offset,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec) | attrs,
		LastOffsetDelta:      int32(recs[len(recs)-1].Offset - recs[0].Offset),
		FirstTimestamp:       recs[0].Timestamp,
		MaxTimestamp:         1_800_000_000_000,
		ProducerID:           4242,
		ProducerEpoch:        2,
		FirstSequence:        17,
		NumRecords:           int32(len(recs)),
		Records:              referenceCompress(t, codec, raw),
	}
	data := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(data[8:], uint32(len(data)-12))
	fixCRC(data)
	return data
}

func TestDecodeBatchesFromKmsg(t *testing.T) {
	recs := producedRecords()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			batches, err := DecodeBatches(kmsgBatch(t, codec, 0, recs), NewDecompressBudget(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			b := batches[0]
			if b.ProducerID != 4242 || b.ProducerEpoch != 2 || b.BaseSequence != 17 || b.PartitionLeaderEpoch != -1 || b.Codec() != codec {
				t.Errorf("batch %+v", b)
			}
			if !reflect.DeepEqual(b.Records, recs) {
				t.Errorf("records\ngot  %+v\nwant %+v", b.Records, recs)
			}
		})
	}
}

func TestDecodeBatchesAttributes(t *testing.T) {
	recs := sampleRecords()[:2]
	batches, err := DecodeBatches(kmsgBatch(t, CodecNone, attrLogAppendTime|attrTransactional|attrControl, recs), NewDecompressBudget(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	b := batches[0]
	if !b.LogAppendTime() || !b.Transactional() || !b.Control() || b.Codec() != CodecNone {
		t.Errorf("attributes %#x", b.Attributes)
	}
	for _, r := range b.Records {
		if r.Timestamp != 1_800_000_000_000 {
			t.Errorf("LogAppendTime record timestamp %d, want the batch's max timestamp", r.Timestamp)
		}
	}
}

func TestDecodeBatchesSeveral(t *testing.T) {
	recs := sampleRecords()
	var data []byte
	for i, codec := range allCodecs {
		var err error
		if data, err = AppendBatch(data, recs[i:i+1], codec, 0); err != nil {
			t.Fatal(err)
		}
	}
	batches, err := DecodeBatches(data, NewDecompressBudget(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != len(allCodecs) {
		t.Fatalf("%d batches", len(batches))
	}
	for i, b := range batches {
		if b.Codec() != allCodecs[i] || !reflect.DeepEqual(b.Records, recs[i:i+1]) {
			t.Errorf("batch %d: %v %+v", i, b.Codec(), b.Records)
		}
	}
}

func TestDecodeBatchesCorrupt(t *testing.T) {
	good, err := AppendBatch(nil, sampleRecords(), CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pos := range []int{17, 21, 30, 60, 61, len(good) - 1} {
		data := bytes.Clone(good)
		data[pos] ^= 0x10
		if _, err := DecodeBatches(data, NewDecompressBudget(1<<20)); !errors.Is(err, ErrCorruptMessage) {
			t.Errorf("byte %d flipped: got %v, want ErrCorruptMessage", pos, err)
		}
		if _, err := CheckBatches(data, NewDecompressBudget(1<<20)); !errors.Is(err, ErrCorruptMessage) {
			t.Errorf("byte %d flipped: CheckBatches got %v, want ErrCorruptMessage", pos, err)
		}
	}
}

// withRecordBytes is a copy of the header of batch with records as its
// records, the given last offset delta and record count, and its length
// and CRC set to match.
func withRecordBytes(batch []byte, lastOffsetDelta, count int32, records ...byte) []byte {
	data := append(bytes.Clone(batch[:BatchHeaderSize]), records...)
	binary.BigEndian.PutUint32(data[8:], uint32(len(data)-12))
	binary.BigEndian.PutUint32(data[23:], uint32(lastOffsetDelta))
	binary.BigEndian.PutUint32(data[57:], uint32(count))
	fixCRC(data)
	return data
}

// minimalRecord is the smallest record: length 6, attributes, timestamp
// delta 0, the given offset delta (below 64), null key and value, no
// headers.
func minimalRecord(offsetDelta byte) []byte { return []byte{12, 0, 0, 2 * offsetDelta, 1, 1, 0} }

// TestDecodeBatchesInvalid feeds every kind of bad batch a producer could
// send, each with a correct CRC unless the CRC is the point, and checks
// the error maps to the code Kafka answers: ErrCorruptMessage for
// CORRUPT_MESSAGE, *InvalidRecordError for INVALID_RECORD.
func TestDecodeBatchesInvalid(t *testing.T) {
	good, err := AppendBatch(nil, sampleRecords()[:2], CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	// good's two records are 11 bytes each: length 10, attributes,
	// timestamp and offset deltas, key and value, 0 headers.
	batch := func(lastOffsetDelta, count int32, records ...byte) []byte {
		return withRecordBytes(good, lastOffsetDelta, count, records...)
	}
	withRecords := func(count int32, records ...byte) []byte { return batch(count-1, count, records...) }
	edit := func(f func(d []byte)) []byte {
		d := bytes.Clone(good)
		f(d)
		return d
	}
	const (
		corrupt = iota
		invalid
	)
	for _, tc := range []struct {
		name string
		want int
		data []byte
	}{
		{"empty", invalid, nil},
		{"shorter than a length", invalid, good[:11]},
		{"magic 0", invalid, edit(func(d []byte) { d[16] = 0; fixCRC(d) })},
		{"magic 1", invalid, edit(func(d []byte) { d[16] = 1 })},
		{"magic 3", invalid, edit(func(d []byte) { d[16] = 3; fixCRC(d) })},
		{"CRC mismatch", corrupt, edit(func(d []byte) { d[17]++ })},
		{"length below any batch", corrupt, edit(func(d []byte) { binary.BigEndian.PutUint32(d[8:], 13) })},
		{"length below the v2 header", corrupt, edit(func(d []byte) { binary.BigEndian.PutUint32(d[8:], 48) })},
		{"negative length", corrupt, edit(func(d []byte) { binary.BigEndian.PutUint32(d[8:], math.MaxUint32) })},
		{"length past the end (truncated)", invalid, edit(func(d []byte) { binary.BigEndian.PutUint32(d[8:], uint32(len(d))) })},
		{"truncated header", invalid, good[:40]},
		{"trailing partial batch", invalid, append(bytes.Clone(good), good[:20]...)},
		{"trailing bytes", invalid, append(bytes.Clone(good), 0, 0, 0)},
		{"zero records", invalid, batch(-1, 0)},
		{"zero records, last offset delta 0", invalid, batch(0, 0)},
		{"zero records announced, one held", invalid, batch(0, 0, minimalRecord(0)...)},
		{"negative record count", invalid, batch(0, -1, good[BatchHeaderSize:]...)},
		{"negative last offset delta", invalid, batch(-2, 2, good[BatchHeaderSize:]...)},
		{"count above last offset delta + 1", invalid, batch(0, 2, good[BatchHeaderSize:]...)},
		{"count below last offset delta + 1", invalid, batch(2, 2, good[BatchHeaderSize:]...)},
		{"more records announced than held", invalid, withRecords(3, good[BatchHeaderSize:]...)},
		{"more records announced than bytes hold", invalid, withRecords(2, 32, 0, 0, 0, 20, '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 1, 0)},
		{"fewer records announced than held", invalid, withRecords(1, good[BatchHeaderSize:]...)},
		{"bytes after the records", invalid, withRecords(2, append(bytes.Clone(good[BatchHeaderSize:]), 0)...)},
		{"huge record count", invalid, withRecords(math.MaxInt32, good[BatchHeaderSize:]...)},
		{"offset deltas with a gap", invalid, withRecords(2, append(minimalRecord(0), minimalRecord(2)...)...)},
		{"offset deltas repeated", invalid, withRecords(2, append(minimalRecord(0), minimalRecord(0)...)...)},
		{"offset delta not starting at 0", invalid, withRecords(1, minimalRecord(1)...)},
		{"producer id without a sequence", invalid, edit(func(d []byte) {
			binary.BigEndian.PutUint64(d[43:], 7)
			binary.BigEndian.PutUint32(d[53:], math.MaxUint32)
			fixCRC(d)
		})},
		{"unknown codec", invalid, edit(func(d []byte) { d[22] |= 6; fixCRC(d) })},
		{"garbage compressed records", invalid, func() []byte {
			d := withRecords(2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)
			d[22] |= byte(CodecZstd)
			fixCRC(d)
			return d
		}()},
		// length 8, attrs, ts delta 0, offset delta 0, key null, value null,
		// 0 headers, then 2 bytes the record length claims but no field uses.
		{"bytes left in a record", invalid, withRecords(1, 16, 0, 0, 0, 1, 1, 0, 0, 0)},
		{"record length past the end", invalid, withRecords(1, 40, 0, 0, 0, 1, 1, 0)},
		{"negative record length", invalid, withRecords(1, 1, 0, 0, 0, 1, 1, 0)},
		{"record length varint overflow", invalid, withRecords(1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{"record length in six bytes", invalid, withRecords(1, 0x8c, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 1, 1, 0)},
		{"timestamp delta varint overflow", invalid, withRecords(1, 30, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 1, 1, 0)},
		{"key length past the record", invalid, withRecords(1, 12, 0, 0, 0, 8, 1, 0)},
		{"key length -2", invalid, withRecords(1, 12, 0, 0, 0, 3, 1, 0)},
		{"value length past the record", invalid, withRecords(1, 12, 0, 0, 0, 1, 8, 0)},
		{"negative header count", invalid, withRecords(1, 12, 0, 0, 0, 1, 1, 1)},
		{"header count over what remains", invalid, withRecords(1, 16, 0, 0, 0, 1, 1, 200, 1, 0, 0)},
		{"header null key", invalid, withRecords(1, 16, 0, 0, 0, 1, 1, 2, 1, 0)},
		{"header value past the record", invalid, withRecords(1, 16, 0, 0, 0, 1, 1, 2, 0, 40)},
		{"offset delta beyond int32", invalid, withRecords(1, 20, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 1, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeBatches(tc.data, NewDecompressBudget(1<<20))
			var ire *InvalidRecordError
			switch {
			case tc.want == corrupt && !errors.Is(err, ErrCorruptMessage):
				t.Fatalf("got %v, want ErrCorruptMessage", err)
			case tc.want == invalid && !errors.As(err, &ire):
				t.Fatalf("got %v, want *InvalidRecordError", err)
			case tc.want == invalid && errors.Is(err, ErrCorruptMessage):
				t.Fatalf("got %v, want only *InvalidRecordError", err)
			}
			t.Log(err)
			if _, cerr := CheckBatches(tc.data, NewDecompressBudget(1<<20)); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("CheckBatches: %v, DecodeBatches: %v", cerr, err)
			}
		})
	}
}

func TestDecodeBatchesTruncated(t *testing.T) {
	for _, codec := range allCodecs {
		data, err := AppendBatch(nil, sampleRecords(), codec, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(data) {
			if _, err := DecodeBatches(data[:i], NewDecompressBudget(1<<20)); err == nil {
				t.Fatalf("%v: %d of %d bytes decoded without error", codec, i, len(data))
			}
		}
	}
}

func TestDecodeBatchesZipBomb(t *testing.T) {
	bomb := []Record{{Offset: 0, Value: make([]byte, 8<<20)}}
	for _, codec := range allCodecs[1:] {
		t.Run(codec.String(), func(t *testing.T) {
			data, err := AppendBatch(nil, bomb, codec, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeBatches(data, NewDecompressBudget(1<<20))
			var ire *InvalidRecordError
			if !errors.Is(err, ErrDecompressedTooLarge) || !errors.As(err, &ire) {
				t.Fatalf("got %v, want an *InvalidRecordError wrapping ErrDecompressedTooLarge", err)
			}
			if _, err := DecodeBatches(data, NewDecompressBudget(9<<20)); err != nil {
				t.Fatalf("within the limit: %v", err)
			}
		})
	}
}

func TestDecodeBatchesBudgetCoversAllBatches(t *testing.T) {
	half := []Record{{Offset: 0, Value: make([]byte, 600<<10)}}
	one, err := AppendBatch(nil, half, CodecLZ4, 0)
	if err != nil {
		t.Fatal(err)
	}
	two := append(bytes.Clone(one), one...)
	budget := NewDecompressBudget(1 << 20)
	if _, err := DecodeBatches(one, budget); err != nil {
		t.Fatalf("one batch: %v", err)
	}
	kept := budget.Charged()
	if kept < 600<<10 || kept > 1<<20 {
		t.Fatalf("one batch of 600 KiB charged %d bytes", kept)
	}
	if _, err := DecodeBatches(two, NewDecompressBudget(1<<20)); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Fatalf("two batches: got %v, want ErrDecompressedTooLarge", err)
	}
	// A second partition of the same request shares what is left, and
	// what it decompressed before being refused stays spent.
	if _, err := DecodeBatches(one, budget); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Fatalf("second partition: got %v, want ErrDecompressedTooLarge", err)
	}
	if c := budget.Charged(); c <= kept || c > 1<<20 {
		t.Errorf("after a refused partition %d bytes are charged, want more than the first partition's %d and at most the budget", c, kept)
	}
}

// zstdBomb is one batch of a single record whose value is n zero bytes:
// a few KiB of zstd.
func zstdBomb(t testing.TB, n int) []byte {
	t.Helper()
	data, err := AppendBatch(nil, []Record{{Offset: 0, Value: make([]byte, n)}}, CodecZstd, 0)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDecodeBatchesBombStopsAtBudget checks that decompression stops where
// the budget ends rather than expanding the whole bomb first, and that a
// request listing a 64 MiB bomb for 50 partitions against a 4 MiB budget
// decompresses about one budget in all, not one per partition.
func TestDecodeBatchesBombStopsAtBudget(t *testing.T) {
	bomb := zstdBomb(t, 64<<20)
	if len(bomb) > 64<<10 {
		t.Fatalf("bomb is %d bytes compressed", len(bomb))
	}
	budget := NewDecompressBudget(4 << 20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 50 {
		if _, err := DecodeBatches(bomb, budget); !errors.Is(err, ErrDecompressedTooLarge) {
			t.Fatalf("got %v, want ErrDecompressedTooLarge", err)
		}
	}
	runtime.ReadMemStats(&after)
	// The buffer doublings up to the budget (under 2 × 4 MiB) plus a zstd
	// decoder's window (8 MiB), with room for the test's own garbage.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 && !raceEnabled {
		t.Errorf("50 refused bombs allocated %d MiB", alloc>>20)
	}
	if budget.Charged() != 4<<20 {
		t.Errorf("%d bytes charged, want the whole 4 MiB budget", budget.Charged())
	}
}

func TestDecompressBudgetConcurrent(t *testing.T) {
	data, err := AppendBatch(nil, []Record{{Offset: 0, Value: make([]byte, 100<<10)}}, CodecGzip, 0)
	if err != nil {
		t.Fatal(err)
	}
	budget := NewDecompressBudget(1 << 20)
	var (
		wg sync.WaitGroup
		ok atomic.Int64
	)
	for range 32 {
		wg.Go(func() {
			if _, err := DecodeBatches(data, budget); err == nil {
				ok.Add(1)
			} else if !errors.Is(err, ErrDecompressedTooLarge) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c := budget.Charged(); c > 1<<20 || ok.Load() == 0 || ok.Load() == 32 {
		t.Errorf("%d of 32 decoded, %d bytes charged of a 1 MiB budget", ok.Load(), c)
	}
}

func TestAppendBatchErrors(t *testing.T) {
	dst := []byte("keep")
	for _, tc := range []struct {
		name  string
		recs  []Record
		codec Codec
	}{
		{"no records", nil, CodecNone},
		{"same offset twice", []Record{{Offset: 5}, {Offset: 5}}, CodecNone},
		{"descending offsets", []Record{{Offset: 5}, {Offset: 4}}, CodecNone},
		{"offset delta beyond int32", []Record{{Offset: 0}, {Offset: 1 << 31}}, CodecNone},
		{"unknown codec", []Record{{Offset: 0}}, Codec(5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := AppendBatch(dst, tc.recs, tc.codec, 0)
			if err == nil {
				t.Fatal("no error")
			}
			if string(out) != "keep" {
				t.Errorf("dst changed to %q", out)
			}
		})
	}
}

func TestRecordSizeInBatch(t *testing.T) {
	recs := sampleRecords()
	data, err := AppendBatch(nil, recs, CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	total := BatchHeaderSize
	for i := range recs {
		total += RecordSizeInBatch(&recs[i], int32(recs[i].Offset-recs[0].Offset), recs[i].Timestamp-recs[0].Timestamp)
	}
	if total != len(data) {
		t.Errorf("sizes add up to %d, batch is %d bytes", total, len(data))
	}
	big := Record{Value: make([]byte, 300)}
	if got := RecordSizeInBatch(&big, 1<<20, -1<<40); got != 2+1+6+4+1+2+300+1 {
		t.Errorf("300-byte value with wide deltas: %d", got)
	}
}

// TestWireReaderVarints checks the shortcut of the record reader for
// varints of up to three bytes against binary.Varint: every encoding of
// one and two bytes and, for a third byte, those bytes that end a varint
// or do not, the non-minimal ones included, each followed by a byte that
// must be left unread; and truncated ones.
func TestWireReaderVarints(t *testing.T) {
	for b0 := range 256 {
		for b1 := range 256 {
			for _, b2 := range []byte{0x00, 0x01, 0x40, 0x7f, 0x80, 0xff} {
				src := []byte{byte(b0), byte(b1), b2, 0x00, 0x00, 0x00, 0x7f}
				want, n := binary.Varint(src)
				for _, read := range []struct {
					name string
					get  func(*wireReader) int64
				}{
					{"varint", func(r *wireReader) int64 { return int64(r.varint()) }},
					{"varlong", func(r *wireReader) int64 { return r.varlong() }},
				} {
					r := wireReader{src: src, ok: true}
					got := read.get(&r)
					if !r.ok || got != want || len(r.src) != len(src)-n {
						t.Fatalf("%s of % x = %d with %d bytes left (ok %v), want %d with %d", read.name, src, got, len(r.src), r.ok, want, len(src)-n)
					}
				}
			}
			for _, src := range [][]byte{{byte(b0)}, {byte(b0), byte(b1)}} {
				if _, n := binary.Varint(src); n > 0 {
					continue
				}
				if r := (wireReader{src: src, ok: true}); r.varint() != 0 || r.ok {
					t.Fatalf("varint of the truncated % x read", src)
				}
			}
		}
	}
}

// TestSkimRecord checks the common path of checking a record against
// decodeRecord: where it reads a record it must read the same timestamp
// and end, it must read the records it is for (no headers, up to 1 MiB),
// and it must leave the rest to decodeRecord.
func TestSkimRecord(t *testing.T) {
	recs := append(producedRecords(),
		Record{Offset: 105, Timestamp: 1_700_000_000_000, Value: bytes.Repeat([]byte{'x'}, 9000)},
		Record{Offset: 106, Timestamp: 1_700_000_000_000, Value: bytes.Repeat([]byte{'y'}, 1<<20)})
	data, err := AppendBatch(nil, recs, CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	logAppend := bytes.Clone(data)
	binary.BigEndian.PutUint16(logAppend[21:], attrLogAppendTime)
	fixCRC(logAppend)
	for name, data := range map[string][]byte{"create time": data, "log append time": logAppend} {
		batches, err := CheckBatches(data, NewDecompressBudget(1<<20))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := batches[0]
		var skimmed []int
		src := data[BatchHeaderSize:]
		for i := range recs {
			r, rest, err := b.decodeRecord(src, i, false, int32(i), int32(i))
			if err != nil {
				t.Fatalf("%s: record %d: %v", name, i, err)
			}
			if ts, nullKey, skimRest, ok := b.skimRecord(src, int32(i)); ok {
				skimmed = append(skimmed, i)
				if ts != r.Timestamp || nullKey != (r.Key == nil) || len(skimRest) != len(rest) {
					t.Fatalf("%s: record %d skimmed to timestamp %d with %d bytes left, decoded to %d with %d", name, i, ts, len(skimRest), r.Timestamp, len(rest))
				}
			}
			src = rest
		}
		// Record 2 has headers and record 6 a length of four bytes.
		if want := []int{0, 1, 3, 4, 5}; !slices.Equal(skimmed, want) {
			t.Errorf("%s: skimmed records %v, want %v", name, skimmed, want)
		}
	}
}

// TestFirstNullKey checks that checking a batch, compressed or not, finds
// its first record with a null key (an empty key is a key), which a
// compacted topic refuses.
func TestFirstNullKey(t *testing.T) {
	keyed := producedRecords()
	for i := range keyed {
		keyed[i].Key = []byte{}
	}
	for _, codec := range []Codec{CodecNone, CodecGzip, CodecZstd} {
		for _, tc := range []struct {
			recs []Record
			want int
		}{{producedRecords(), 1}, {keyed, -1}, {producedRecords()[2:], 2}} {
			data, err := AppendBatch(nil, tc.recs, codec, 0)
			if err != nil {
				t.Fatal(err)
			}
			for name, decode := range map[string]func([]byte, *DecompressBudget) ([]Batch, error){"check": CheckBatches, "decode": DecodeBatches} {
				batches, err := decode(data, NewDecompressBudget(1<<20))
				if err != nil {
					t.Fatalf("%v %s: %v", codec, name, err)
				}
				if got := batches[0].FirstNullKey; got != tc.want {
					t.Errorf("%v %s: FirstNullKey %d, want %d", codec, name, got, tc.want)
				}
			}
		}
	}
}
