package gateway

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/protocol"
)

// Under refuse policies a raw topic refuses every record it cannot hold
// whole.
func TestRawFormatRefusesWhatItCannotHold(t *testing.T) {
	cases := []struct {
		name     string
		rec      protocol.Record
		tooLarge bool
		msg      string
	}{
		{"headers", protocol.Record{Value: []byte("v"), Headers: []protocol.Header{{Key: "h"}}}, false, "headers"},
		{"null value", protocol.Record{Key: []byte("k")}, false, "null value"},
		{"empty key", protocol.Record{Key: []byte{}, Value: []byte("v")}, false, "empty key"},
		{"binary key", protocol.Record{Key: []byte{0xff}, Value: []byte("v")}, false, "UTF-8"},
		{"long key", protocol.Record{Key: bytes.Repeat([]byte("k"), maxRawKeyBytes+1), Value: []byte("v")}, false, "at most"},
		{"big value", protocol.Record{Value: make([]byte, 11)}, true, "exceeds"},
	}
	for _, c := range cases {
		_, err := toRawEntry(&c.rec, "shardId-0000000000", 10, rawSpec{headers: policyRefuse, keys: policyRefuse}, &rawDrops{})
		var re *recordError
		if !errors.As(err, &re) || re.tooLarge != c.tooLarge || !strings.Contains(re.msg, c.msg) {
			t.Errorf("%s: got %v, want a recordError mentioning %q (too large %v)", c.name, err, c.msg, c.tooLarge)
		}
	}
}

func TestRawFormatRoundTrip(t *testing.T) {
	in := protocol.Record{Key: []byte("user-1"), Value: []byte("hello"), Timestamp: 1234}
	e, err := toRawEntry(&in, "shardId-0000000002", 1<<20, rawSpec{}, &rawDrops{})
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

func TestTopicIDs(t *testing.T) {
	a, b := topicIDFor("stream-a"), topicIDFor("stream-b")
	if a == b || a == [16]byte{} {
		t.Fatal("topic ids must differ per stream and never be zero")
	}
	if a != topicIDFor("stream-a") {
		t.Fatal("topic id is not deterministic")
	}
	if a[6]>>4 != 8 || a[8]>>6 != 2 {
		t.Fatalf("topic id %x is not a version 8 UUID", a)
	}
}
