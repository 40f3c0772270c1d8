package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
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

// FuzzFilterBatch asserts that FilterBatch refuses what DecodeStoredBatch
// refuses, appending nothing, and otherwise appends what checkFiltered
// expects, which filters again.
func FuzzFilterBatch(f *testing.F) {
	for _, codec := range allCodecs {
		data, err := AppendBatch(nil, producedRecords(), codec, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint64(0b10110))
		logAppend := bytes.Clone(data)
		SetLogAppendTime(logAppend, 1_800_000_000_000)
		f.Add(logAppend, uint64(0b01101))
		sparse, _, err := FilterBatch(nil, data, func(r *Record) bool { return r.Offset != 102 }, NewDecompressBudget(1<<20))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sparse, uint64(0b11011))
	}
	f.Add(zstdBomb(f, 4<<20), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, mask uint64) {
		// Most mutations break a CRC; fixing them lets the fuzzer reach
		// the records.
		for _, data := range [][]byte{data, withFixedCRCs(bytes.Clone(data))} {
			if out := checkFilter(t, data, mask); out != nil {
				checkFilter(t, out, bits.RotateLeft64(mask, 7))
			}
		}
	})
}

// checkFilter filters data keeping the records whose offset delta's bit
// (modulo 64) is set in mask, checks the result and returns the batch
// appended, if any.
func checkFilter(t *testing.T, data []byte, mask uint64) []byte {
	b, derr := DecodeStoredBatch(data, NewDecompressBudget(1<<20))
	keep := func(r *Record) bool { return mask>>(uint64(r.Offset-b.BaseOffset)%64)&1 != 0 }
	prefix := []byte("dst")
	budget := NewDecompressBudget(1 << 20)
	out, kept, err := FilterBatch(prefix, data, keep, budget)
	if c := budget.Charged(); c < 0 || c > 1<<20 {
		t.Fatalf("%d bytes charged to a 1 MiB budget, error %v", c, err)
	}
	if (err == nil) != (derr == nil) || err != nil && (err.Error() != derr.Error() || kept != 0 || !bytes.Equal(out, prefix)) {
		t.Fatalf("FilterBatch: %d bytes, %d kept, error %v; DecodeStoredBatch: %v", len(out), kept, err, derr)
	}
	if err != nil {
		return nil
	}
	if !bytes.Equal(out[:len(prefix)], prefix) {
		t.Fatalf("dst changed to %q", out[:len(prefix)])
	}
	checkFiltered(t, data, out[len(prefix):], kept, keep)
	if kept == 0 {
		return nil
	}
	return out[len(prefix):]
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

// FuzzDecompress asserts that decompressing depends on the input alone: a
// stream decodes to the same bytes, or fails with the same error, after the
// pooled decoders have read either of two well-formed streams of different
// content (two sets of Huffman tables). The gzip seed is a deflate block declaring an empty distance
// table and then using it, which a reused flate decoder read with the last
// stream's table.
func FuzzDecompress(f *testing.F) {
	texts := [2][]byte{randomLetters(1, 4000, 6, 1000), randomLetters(5, 20000, 3, 5000)}
	primers := map[Codec][2][]byte{}
	for _, codec := range allCodecs[1:] {
		var pair [2][]byte
		for i, text := range texts {
			primer, err := Compress(nil, codec, text)
			if err != nil {
				f.Fatal(err)
			}
			pair[i] = primer
			f.Add(int8(codec), primer)
		}
		primers[codec] = pair
	}
	f.Add(int8(CodecGzip), []byte("\x1f\x8b\b\x00000000$\x00\x00 "))
	f.Fuzz(func(t *testing.T, c int8, src []byte) {
		codec := Codec(c)
		pair, ok := primers[codec]
		if !ok {
			return
		}
		var outs [2][]byte
		var errs [2]string
		for i, primer := range pair {
			if _, err := Decompress(codec, primer, 1<<20); err != nil {
				t.Fatal(err)
			}
			out, err := Decompress(codec, src, 1<<20)
			outs[i], errs[i] = out, fmt.Sprint(err)
		}
		if errs[0] != errs[1] || !bytes.Equal(outs[0], outs[1]) {
			t.Fatalf("%v: %d bytes, error %s; after another stream %d bytes, error %s", codec, len(outs[0]), errs[0], len(outs[1]), errs[1])
		}
	})
}

// randomLetters returns n letters drawn from the first alphabet letters of
// the alphabet, followed by a repeat of the first repeat of them.
func randomLetters(seed uint64, n, alphabet, repeat int) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	text := make([]byte, n, n+repeat)
	for i := range text {
		text[i] = byte('a' + rng.IntN(alphabet))
	}
	return append(text, text[:repeat]...)
}
