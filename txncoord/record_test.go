package txncoord

import (
	"reflect"
	"testing"
)

func sampleRecord() Record {
	return Record{
		TxnID: "tx", ProducerID: 5, Epoch: 3, LastProducerID: 2, LastEpoch: 2, NextProducerID: 9,
		TimeoutMillis: 60000, State: PrepareCommit,
		Partitions:     []TopicPartition{{"a", 0}, {"b", 3}},
		Groups:         []string{"g"},
		PendingOffsets: map[string][]Offset{"g": {{Topic: "a", Partition: 0, Offset: 7, LeaderEpoch: 1, Metadata: new(string)}}},
		StartMillis:    100, UpdateMillis: 200, Version2: true, CoordinatorEpoch: 4,
	}
}

// TestRecordRoundTrip: Decode reads what Encode wrote, every field.
func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []Record{sampleRecord(), {TxnID: "x", State: Dead, LastProducerID: -1, LastEpoch: -1, NextProducerID: -1, StartMillis: -1}} {
		got, err := Decode(r.Encode())
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
		}
	}
}

// TestDecodeRejects: garbage, another version, no id, an unknown state.
func TestDecodeRejects(t *testing.T) {
	for _, b := range []string{
		"", "null", "{", "[]", `{"v":2,"id":"x","state":"Empty"}`, `{"v":1,"state":"Empty"}`,
		`{"v":1,"id":"x","state":"Sleeping"}`, `{"v":1,"id":"x","state":"Empty","epoch":99999}`,
	} {
		if _, err := Decode([]byte(b)); err == nil {
			t.Errorf("Decode(%q) accepted it", b)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts survives a round
// trip.
func FuzzDecode(f *testing.F) {
	r := sampleRecord()
	f.Add(r.Encode())
	f.Add([]byte(`{"v":1,"id":"x","state":"Empty"}`))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(rec.Encode())
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("round trip of %+v: %+v, %v", rec, again, err)
		}
	})
}
