package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A marker is the control batch Kafka writes: kmsg reads its header, key
// and value as Kafka's own, and ParseEndTxnMarker reads it back.
func TestEndTxnMarker(t *testing.T) {
	for _, commit := range []bool{false, true} {
		data := AppendEndTxnMarker(nil, 42, 7, commit, 3, 1000)
		StampBatch(data, 99, 0)
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(data); err != nil {
			t.Fatal(err)
		}
		if rb.FirstOffset != 99 || rb.Attributes != 0x30 || rb.ProducerID != 42 || rb.ProducerEpoch != 7 || rb.FirstSequence != -1 || rb.NumRecords != 1 {
			t.Fatalf("header %+v", rb)
		}
		recs, err := DecodeStoredBatch(data, NewDecompressBudget(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		wantType := byte(0)
		if commit {
			wantType = 1
		}
		if k := recs.Records[0].Key; len(k) != 4 || k[0] != 0 || k[1] != 0 || k[2] != 0 || k[3] != wantType {
			t.Errorf("key % x", k)
		}
		if v := recs.Records[0].Value; len(v) != 6 || v[5] != 3 {
			t.Errorf("value % x", v)
		}
		info, _ := ParseBatchInfo(data)
		if !info.Control() || !info.Transactional() {
			t.Errorf("attributes %#x", info.Attributes)
		}
		got, epoch, err := ParseEndTxnMarker(data)
		if err != nil || got != commit || epoch != 3 {
			t.Errorf("parsed %v %d %v, want %v 3", got, epoch, err, commit)
		}
	}
	if _, _, err := ParseEndTxnMarker(mustBatch(t)); err == nil {
		t.Error("a data batch parsed as a marker")
	}
}

func mustBatch(t *testing.T) []byte {
	b, err := AppendBatch(nil, []Record{{Value: []byte("x")}}, CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
