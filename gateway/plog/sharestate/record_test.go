package sharestate

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// sampleRecords are a snapshot and an update of every persisted state.
func sampleRecords() []Record {
	return []Record{
		{Seq: 1, Snapshot: true, Start: 7, End: 7},
		{Seq: 9, Snapshot: true, Start: 100, End: 1 << 40, States: []StateRange{
			{100, 104, Available, 3}, {105, 105, Acknowledged, 1}, {106, 1<<40 - 1, Archived, 0},
		}},
		{Seq: 1 << 50, Start: 5, End: 90, States: []StateRange{{5, 5, Archived, 5}, {40, 89, Available, 32767}}},
		{Seq: 2, Start: 5, End: 90},
	}
}

// TestRecordRoundTrip: Decode reads what Encode wrote, every field.
func TestRecordRoundTrip(t *testing.T) {
	for _, r := range sampleRecords() {
		got, err := Decode(r.Encode())
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
		}
	}
}

// TestRecordSize: a snapshot of the largest in-flight state is tens of
// kilobytes, small enough for one stream record.
func TestRecordSize(t *testing.T) {
	snap := Record{Seq: 1 << 30, Snapshot: true, Start: 1 << 40}
	off := snap.Start
	for i := range 2 * maxMaxInFlight {
		st := State(Available)
		if i%2 == 1 {
			st = Acknowledged
		}
		snap.States = append(snap.States, StateRange{off, off, st, 10})
		off++
	}
	snap.End = off
	if n := len(snap.Encode()); n > 6*2*maxMaxInFlight {
		t.Fatalf("a snapshot of %d runs takes %d bytes", len(snap.States), n)
	}
}

// TestDecodeRejects: garbage, another version or kind, truncation,
// trailing bytes, and states Load could not use.
func TestDecodeRejects(t *testing.T) {
	good := sampleRecords()[2].Encode()
	header := func(kind byte, vals ...uint64) []byte {
		b := []byte{recordVersion, kind}
		for _, v := range vals {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	for name, b := range map[string][]byte{
		"empty":            nil,
		"one byte":         {recordVersion},
		"other version":    append([]byte{2}, good[1:]...),
		"unknown kind":     append([]byte{recordVersion, 3}, good[2:]...),
		"truncated":        good[:len(good)-1],
		"trailing":         append(append([]byte{}, good...), 0),
		"bad varint":       append([]byte{recordVersion, kindUpdate}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"huge start":       header(kindUpdate, 1, 1<<63, 0, 0),
		"end overflowing":  header(kindUpdate, 1, 1<<62, 1<<62, 0),
		"too many states":  header(kindUpdate, 1, 0, 10, 1000, 0, 0),
		"state past end":   append(header(kindUpdate, 1, 0, 10, 1, 9, 1), byte(Available), 1),
		"acquired state":   append(header(kindUpdate, 1, 0, 10, 1, 0, 1), byte(Acquired), 1),
		"count too large":  append(header(kindUpdate, 1, 0, 10, 1, 0, 1), byte(Available), 0x80, 0x80, 0x02),
		"no state byte":    append(header(kindUpdate, 1, 0, 10, 1), 0x80, 0x80, 0x00, 1),
		"snapshot hole":    append(header(kindSnapshot, 1, 0, 10, 1, 1, 8), byte(Available), 1),
		"snapshot no tail": append(header(kindSnapshot, 1, 0, 10, 1, 0, 8), byte(Available), 1),
	} {
		if r, err := Decode(b); err == nil {
			t.Errorf("%s: Decode(%x) accepted %+v", name, b, r)
		}
	}
}

// FuzzDecode: Decode never panics, what it accepts survives a round trip,
// and a snapshot it accepts loads.
func FuzzDecode(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r.Encode())
	}
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
		if rec.Snapshot {
			p, err := Load(testConfig(), rec)
			if err != nil {
				t.Fatalf("loading %+v: %v", rec, err)
			}
			checkLoaded(t, p)
		}
	})
}

// checkLoaded is checkStructure without the in-flight cap, which a
// snapshot written under another configuration need not respect.
func checkLoaded(t *testing.T, p *Partition) {
	t.Helper()
	p.cfg.MaxInFlight = max(p.cfg.MaxInFlight, int(p.inFlight()))
	checkStructure(t, p)
}
