package keep

import (
	"bytes"
	"testing"
)

// TestChainRaces: of commits built on the same generation, the first in
// DIS's order is current; one naming a commit DIS expired starts a chain
// only when no commit was seen; a hint starts the chain where it points.
func TestChainRaces(t *testing.T) {
	c := func(gen, prev, first int64) *Commit { return &Commit{Gen: gen, Prev: prev, First: first} }
	ch := NewChain(0)
	steps := []struct {
		c    *Commit
		seq  int64
		want bool
	}{
		{c(1, -1, 0), 3, true},    // the first generation
		{c(1, -1, 4), 6, false},   // a second gateway's first generation, built on nothing, too late
		{c(2, 3, 7), 9, true},     // built on the current one
		{c(2, 3, 10), 12, false},  // built on the same one, finished second: never current
		{c(3, 12, 13), 14, false}, // built on a commit that was never current
		{c(4, 9, 15), 16, false},  // the right predecessor but the wrong generation number
		{c(3, 9, 17), 18, true},
	}
	for _, s := range steps {
		if got := ch.Add(s.c, s.seq); got != s.want {
			t.Errorf("commit at %d (gen %d after %d): current %v, want %v", s.seq, s.c.Gen, s.c.Prev, got, s.want)
		}
	}
	if cur, seq := ch.Current(); seq != 18 || cur.Gen != 3 {
		t.Errorf("current: gen %d at %d, want gen 3 at 18", cur.Gen, seq)
	}

	// Reading from DIS's earliest record after older commits expired.
	late := NewChain(100)
	if !late.Add(c(7, 90, 101), 105) {
		t.Error("a commit naming an expired one, with none seen, is not current")
	}
	if late.Add(c(7, 90, 106), 108) {
		t.Error("a second commit naming the same expired one became current")
	}
	hinted := NewChain(0)
	hinted.Start(c(5, 40, 41), 50)
	if hinted.Add(c(5, 40, 51), 52) || !hinted.Add(c(6, 50, 53), 60) {
		t.Error("a chain started from a hint does not follow it")
	}
}

// TestCommitRecord: a commit survives its encoding; one whose fields cannot
// hold together, or that is no commit, is refused.
func TestCommitRecord(t *testing.T) {
	c := &Commit{Gen: 2, Prev: 10, First: 11, LogStart: 5, Clean: 50, Cut: 80,
		Compacted: []Span{{End: 30, CompactedMs: 1}, {End: 50, CompactedMs: 2}}, StartedMs: 7, Writer: "1",
		Records: 9, Marks: []Mark{{Offset: 5, Seq: 11}, {Offset: 40, Seq: 15}}}
	got, err := ParseCommit(c.Marshal(), 20)
	if err != nil || got.Gen != 2 || got.Cut != 80 || len(got.Compacted) != 2 || got.Compacted[1].End != 50 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if at, ok := got.CompactedAt(29); !ok || at != 1 {
		t.Errorf("CompactedAt(29) = %d %v", at, ok)
	}
	if at, ok := got.CompactedAt(30); !ok || at != 2 {
		t.Errorf("CompactedAt(30) = %d %v", at, ok)
	}
	if _, ok := got.CompactedAt(50); ok {
		t.Error("CompactedAt(50): the clean offset was compacted")
	}
	for offset, want := range map[int64]int64{0: 11, 5: 11, 39: 11, 40: 15, 79: 15} {
		if seq := got.StartSeq(offset); seq != want {
			t.Errorf("StartSeq(%d) = %d, want %d", offset, seq, want)
		}
	}
	if _, err := ParseCommit(c.Marshal(), 21); err == nil {
		t.Error("a commit landing after someone else's record was taken as whole")
	}
	for name, data := range map[string][]byte{
		"not a commit":         []byte(`{"gen":1}`),
		"bad json":             append(bytes.Clone(commitMagic), '{'),
		"generation 0":         (&Commit{Gen: 0, Prev: -1, First: 0}).Marshal(),
		"first after it":       (&Commit{Gen: 1, Prev: -1, First: 21}).Marshal(),
		"previous after first": (&Commit{Gen: 1, Prev: 5, First: 5}).Marshal(),
		"clean past cut":       (&Commit{Gen: 1, Prev: -1, Clean: 9, Cut: 8}).Marshal(),
		"spans out of order":   (&Commit{Gen: 1, Prev: -1, Clean: 9, Cut: 9, Compacted: []Span{{End: 5}, {End: 4}}}).Marshal(),
	} {
		if c, err := ParseCommit(data, 20); err == nil {
			t.Errorf("%s: parsed as %+v", name, c)
		}
	}
}

// TestOffsetMap: latest offsets per key, a fixed number of keys, and a
// reset that empties it.
func TestOffsetMap(t *testing.T) {
	m := NewOffsetMap(10 * slotBytes)
	for i := range 9 {
		if !m.Put([]byte{byte(i)}, int64(i)) {
			t.Fatalf("key %d did not fit in a map of 10 slots", i)
		}
	}
	if !m.Full() || m.Put([]byte{99}, 1) {
		t.Fatal("a tenth key fit in a map of 10 slots at 90% load")
	}
	if !m.Put([]byte{3}, 42) {
		t.Fatal("a known key could not move on when full")
	}
	if o, ok := m.Get([]byte{3}); !ok || o != 42 {
		t.Errorf("Get(3) = %d %v", o, ok)
	}
	if o, ok := m.Get([]byte{0}); !ok || o != 0 {
		t.Errorf("offset 0 is kept: Get(0) = %d %v", o, ok)
	}
	if _, ok := m.Get([]byte{99}); ok {
		t.Error("a key never put is found")
	}
	m.Reset()
	if m.Len() != 0 || m.Full() {
		t.Error("reset left keys")
	}
	if tiny := NewOffsetMap(0); !tiny.Put([]byte("a"), 1) || tiny.Put([]byte("b"), 2) {
		t.Error("the smallest map holds other than one key")
	}
}

// TestAddMark: marks stay within MaxMarks however many batches a generation
// has, ascending, and a seek lands at or before the batch it looks for.
func TestAddMark(t *testing.T) {
	c := &Commit{First: 100}
	const n = 3 * MaxMarks
	for i := range int64(n) {
		c.AddMark(i*10, 100+i)
	}
	if len(c.Marks) >= MaxMarks || len(c.Marks) < MaxMarks/4 {
		t.Fatalf("%d marks for %d batches", len(c.Marks), n)
	}
	for i := 1; i < len(c.Marks); i++ {
		if c.Marks[i].Seq <= c.Marks[i-1].Seq || c.Marks[i].Offset <= c.Marks[i-1].Offset {
			t.Fatalf("marks out of order at %d", i)
		}
	}
	for _, off := range []int64{0, 5, 12345, n*10 - 1} {
		seq := c.StartSeq(off)
		if batch := seq - 100; batch*10 > off || off-batch*10 > 10*16 {
			t.Fatalf("StartSeq(%d) = %d: too far from the batch holding it", off, seq)
		}
	}
}
