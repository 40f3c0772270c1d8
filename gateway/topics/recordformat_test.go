package topics

import (
	"bytes"
	"errors"
	"strings"
	"testing"

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
		_, err := ToRawEntry(&c.rec, "shardId-0000000000", 10, RawSpec{headers: policyRefuse, keys: policyRefuse}, &RawDrops{})
		var re *RecordError
		if !errors.As(err, &re) || re.TooLarge != c.tooLarge || !strings.Contains(re.msg, c.msg) {
			t.Errorf("%s: got %v, want a RecordError mentioning %q (too large %v)", c.name, err, c.msg, c.tooLarge)
		}
	}
}

func TestTopicIDs(t *testing.T) {
	a, b := TopicID("stream-a"), TopicID("stream-b")
	if a == b || a == [16]byte{} {
		t.Fatal("topic ids must differ per stream and never be zero")
	}
	if a != TopicID("stream-a") {
		t.Fatal("topic id is not deterministic")
	}
	if a[6]>>4 != 8 || a[8]>>6 != 2 {
		t.Fatalf("topic id %x is not a version 8 UUID", a)
	}
}
