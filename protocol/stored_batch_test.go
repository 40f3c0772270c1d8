package protocol

import "testing"

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
