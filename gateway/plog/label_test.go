package plog

import (
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// A kafka stream's records are placed by their batch headers; records a
// DIS-native producer wrote hold one offset each, next to the batches
// around them, and are served as one-record batches.
func TestLabelRecordsPlacesBatchesAndNativeRecords(t *testing.T) {
	batch := func(base int64, n int) []byte {
		recs := make([]protocol.Record, n)
		for i := range recs {
			recs[i] = protocol.Record{Offset: base + int64(i), Timestamp: 100 + int64(i), Value: []byte("v")}
		}
		b, err := protocol.AppendBatch(nil, recs, protocol.CodecNone, 0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	recs := []disclient.Record{
		{SequenceNumber: "10", Data: []byte("native-before"), Timestamp: 5},
		{SequenceNumber: "11", Data: batch(20, 3)},
		{SequenceNumber: "12", Data: []byte("native-after"), PartitionKey: "k", Timestamp: 7},
		{SequenceNumber: "13", Data: batch(24, 2)},
	}
	got, err := labelRecords(recs, noContext, func(int64) int64 { t.Fatal("fallback used with batches in the run"); return 0 })
	if err != nil {
		t.Fatal(err)
	}
	want := []batchLoc{{10, 19, 19, 0}, {11, 20, 22, 0}, {12, 23, 23, 0}, {13, 24, 25, 0}}
	for i := range want {
		if got[i].batchLoc != want[i] {
			t.Errorf("record %d placed at %+v, want %+v", i, got[i].batchLoc, want[i])
		}
	}
	bs, err := protocol.DecodeBatches(got[2].Data, protocol.NewDecompressBudget(1<<20))
	if err != nil || len(bs) != 1 || len(bs[0].Records) != 1 {
		t.Fatalf("native record served as %v, %v", bs, err)
	}
	if r := bs[0].Records[0]; r.Offset != 23 || string(r.Value) != "native-after" || string(r.Key) != "k" || r.Timestamp != 7 {
		t.Fatalf("native record served as %+v", r)
	}
	only, err := labelRecords(recs[:1], noContext, func(seq int64) int64 { return seq + 100 })
	if err != nil || only[0].base != 110 {
		t.Fatalf("a run without batches placed at %+v, %v", only, err)
	}
}

// A batch whose offsets overlap those of the records before it is a stale
// copy: it holds no offsets, keeps no data, and the records after it are
// placed as if it were not there.
func TestLabelRecordsMarksStaleCopies(t *testing.T) {
	batch := func(base int64, n int) []byte {
		recs := make([]protocol.Record, n)
		for i := range recs {
			recs[i] = protocol.Record{Offset: base + int64(i), Value: []byte("v")}
		}
		b, err := protocol.AppendBatch(nil, recs, protocol.CodecNone, 0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	recs := []disclient.Record{
		{SequenceNumber: "0", Data: batch(0, 3)},
		{SequenceNumber: "1", Data: []byte("native")},
		{SequenceNumber: "2", Data: batch(3, 2)}, // stale: offset 3 is the native record's
		{SequenceNumber: "3", Data: batch(4, 2)}, // the copy written again
		{SequenceNumber: "4", Data: []byte("native")},
	}
	got, err := labelRecords(recs, noContext, func(int64) int64 { return -1 })
	if err != nil {
		t.Fatal(err)
	}
	want := []batchLoc{{0, 0, 2, 0}, {1, 3, 3, 0}, {2, 4, 3, 0}, {3, 4, 5, 0}, {4, 6, 6, 0}}
	for i := range want {
		if got[i].batchLoc != want[i] {
			t.Errorf("record %d placed at %+v, want %+v", i, got[i].batchLoc, want[i])
		}
	}
	if got[2].Data != nil || got[3].Data == nil {
		t.Fatal("the stale copy kept its data, or the copy written again lost it")
	}
	// Context from before a read marks a stale copy at its start.
	rest, err := labelRecords(recs[2:], 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rest[0].Data != nil || rest[1].batchLoc != (batchLoc{3, 4, 5, 0}) || rest[2].batchLoc != (batchLoc{4, 6, 6, 0}) {
		t.Fatalf("with context, the read placed %+v and %+v", rest[0].batchLoc, rest[1].batchLoc)
	}
}
