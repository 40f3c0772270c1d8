package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

func envelopeSamples() []Record {
	return []Record{
		{},
		{Timestamp: -1, Key: []byte{}, Value: []byte{}},
		{Timestamp: math.MinInt64, Value: []byte("only a value")},
		{Timestamp: math.MaxInt64, Key: []byte("only a key")},
		{Timestamp: 1_700_000_000_000, Key: []byte{0, 0xff}, Value: bytes.Repeat([]byte("v"), 70000), Headers: []Header{
			{Key: "null", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "", Value: []byte("empty key")},
			{Key: "dup", Value: []byte("1")},
			{Key: "dup", Value: []byte("2")},
		}},
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	for i, r := range envelopeSamples() {
		r.Offset = 99 // not stored
		data := AppendEnvelope([]byte("prefix"), &r)
		if !bytes.HasPrefix(data, []byte("prefix")) {
			t.Fatal("dst prefix overwritten")
		}
		data = data[len("prefix"):]
		if len(data) != EnvelopeSize(&r) {
			t.Errorf("sample %d: %d bytes, EnvelopeSize says %d", i, len(data), EnvelopeSize(&r))
		}
		got, err := DecodeEnvelope(data)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		r.Offset = 0
		if !reflect.DeepEqual(got, r) {
			t.Errorf("sample %d:\ngot  %+v\nwant %+v", i, got, r)
		}
	}
}

// TestEnvelopeDocExample checks the worked example of docs/record-envelope.md
// byte for byte, so the document cannot drift from the code.
func TestEnvelopeDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/record-envelope.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```hex\n")
	if !ok {
		t.Fatal("no ```hex block in the document")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("unterminated ```hex block")
	}

	r := Record{
		Timestamp: 1_700_000_000_000,
		Key:       []byte("user-1"),
		Value:     []byte("hello"),
		Headers:   []Header{{Key: "trace", Value: []byte{0xab, 0xcd}}, {Key: "gone", Value: nil}},
	}
	data := AppendEnvelope(nil, &r)
	var want strings.Builder
	for i, c := range data {
		switch {
		case i == 0:
		case i%16 == 0:
			want.WriteByte('\n')
		default:
			want.WriteByte(' ')
		}
		fmt.Fprintf(&want, "%02x", c)
	}
	want.WriteByte('\n')
	if block != want.String() {
		t.Errorf("document shows\n%s\ncode writes\n%s", block, want.String())
	}
	got, err := DecodeEnvelope(data)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("decoding the example: %+v, %v", got, err)
	}
}

func TestDecodeEnvelopeErrors(t *testing.T) {
	r := envelopeSamples()[4]
	good := AppendEnvelope(nil, &r)
	// minimal: magic, version, timestamp, null key, null value, no headers
	minimal := AppendEnvelope(nil, &Record{})
	withTail := func(tail ...byte) []byte {
		d := bytes.Clone(minimal[:len(minimal)-4])
		return append(d, tail...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrNotEnvelope},
		{"raw payload", []byte(`{"json":true}`), ErrNotEnvelope},
		{"magic only", []byte("\xF9KR"), ErrNotEnvelope},
		{"version 2", append([]byte("\xF9KR\x02"), good[4:]...), ErrUnsupportedEnvelopeVersion},
		{"version 0", append([]byte("\xF9KR\x00"), good[4:]...), ErrUnsupportedEnvelopeVersion},
		{"trailing byte", append(bytes.Clone(good), 0), ErrCorruptEnvelope},
		{"key length -2", func() []byte { d := bytes.Clone(good); binary.BigEndian.PutUint32(d[12:], 0xfffffffe); return d }(), ErrCorruptEnvelope},
		{"key past the end", func() []byte { d := bytes.Clone(minimal); binary.BigEndian.PutUint32(d[12:], 100); return d }(), ErrCorruptEnvelope},
		{"negative header count", withTail(0x80, 0, 0, 0), ErrCorruptEnvelope},
		{"header count too big", withTail(0, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff), ErrCorruptEnvelope},
		{"null header key", withTail(0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0), ErrCorruptEnvelope},
		{"header key past the end", withTail(0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0), ErrCorruptEnvelope},
	} {
		if _, err := DecodeEnvelope(tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	for i := range len(good) {
		if _, err := DecodeEnvelope(good[:i]); err == nil {
			t.Fatalf("%d of %d bytes decoded without error", i, len(good))
		}
	}
}
