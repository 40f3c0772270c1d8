package gateway

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

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
		_, err := FormatRaw.toEntry(&c.rec, "shardId-0000000000", 10)
		var re *recordError
		if !errors.As(err, &re) || re.tooLarge != c.tooLarge || !strings.Contains(re.msg, c.msg) {
			t.Errorf("%s: got %v, want a recordError mentioning %q (too large %v)", c.name, err, c.msg, c.tooLarge)
		}
	}
}

func TestRawFormatRoundTrip(t *testing.T) {
	in := protocol.Record{Key: []byte("user-1"), Value: []byte("hello"), Timestamp: 1234}
	e, err := FormatRaw.toEntry(&in, "shardId-0000000002", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if e.PartitionKey != "user-1" || string(e.Data) != "hello" || *e.Timestamp != 1234 || e.PartitionID != "shardId-0000000002" {
		t.Fatalf("entry %+v", e)
	}
	out, err := FormatRaw.fromDIS(&disclient.Record{PartitionKey: "user-1", SequenceNumber: "42", Data: e.Data, Timestamp: 1234})
	if err != nil {
		t.Fatal(err)
	}
	if out.Offset != 42 || string(out.Key) != "user-1" || string(out.Value) != "hello" || out.Timestamp != 1234 {
		t.Fatalf("record %+v", out)
	}
	// A DIS record without a key reads as a null key and a non-null value.
	out, _ = FormatRaw.fromDIS(&disclient.Record{SequenceNumber: "0"})
	if out.Key != nil || out.Value == nil {
		t.Fatalf("keyless empty record read as key %#v value %#v", out.Key, out.Value)
	}
}

func TestKafkaFormatRoundTrip(t *testing.T) {
	in := protocol.Record{Key: nil, Value: []byte{}, Timestamp: -5, Headers: []protocol.Header{{Key: "a", Value: nil}, {Key: "b", Value: []byte("x")}}}
	e, err := FormatKafka.toEntry(&in, "shardId-0000000000", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FormatKafka.fromDIS(&disclient.Record{SequenceNumber: "7", Data: e.Data, Timestamp: 99})
	if err != nil {
		t.Fatal(err)
	}
	if out.Offset != 7 || out.Key != nil || out.Value == nil || len(out.Value) != 0 || out.Timestamp != -5 ||
		len(out.Headers) != 2 || out.Headers[0].Value != nil || string(out.Headers[1].Value) != "x" {
		t.Fatalf("round trip gave %+v", out)
	}
	// Data written by a DIS-native producer is returned as it is.
	out, err = FormatKafka.fromDIS(&disclient.Record{SequenceNumber: "8", Data: []byte("plain"), Timestamp: 99, PartitionKey: "k"})
	if err != nil || string(out.Value) != "plain" || string(out.Key) != "k" || out.Timestamp != 99 {
		t.Fatalf("native record read as %+v, %v", out, err)
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

func TestTopicNames(t *testing.T) {
	for _, ok := range []string{"a", "Topic_1-x", strings.Repeat("x", 64)} {
		if why := validTopicName(ok); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
	for _, bad := range []string{"", "with.dot", "sp ace", strings.Repeat("x", 65), "ünï"} {
		if validTopicName(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}
