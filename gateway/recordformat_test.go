package gateway

import (
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/protocol"
)

func TestRawFormatRoundTrip(t *testing.T) {
	in := protocol.Record{Key: []byte("user-1"), Value: []byte("hello"), Timestamp: 1234}
	e, err := topics.ToRawEntry(&in, "shardId-0000000002", 1<<20, topics.RawSpec{}, &topics.RawDrops{})
	if err != nil {
		t.Fatal(err)
	}
	if e.PartitionKey != "user-1" || string(e.Data) != "hello" || *e.Timestamp != 1234 || e.PartitionID != "shardId-0000000002" {
		t.Fatalf("entry %+v", e)
	}
	out, err := plog.FromRawDIS(&disclient.Record{PartitionKey: "user-1", SequenceNumber: "42", Data: e.Data, Timestamp: 1234})
	if err != nil {
		t.Fatal(err)
	}
	if out.Offset != 42 || string(out.Key) != "user-1" || string(out.Value) != "hello" || out.Timestamp != 1234 {
		t.Fatalf("record %+v", out)
	}
	// A DIS record without a key reads as a null key and a non-null value.
	out, _ = plog.FromRawDIS(&disclient.Record{SequenceNumber: "0"})
	if out.Key != nil || out.Value == nil {
		t.Fatalf("keyless empty record read as key %#v value %#v", out.Key, out.Value)
	}
}
