package authz

import (
	"errors"
	"testing"
)

func TestChainTakesNewerVersionsOnly(t *testing.T) {
	a := NewSet([]Binding{allow(ResourceTopic, "a", PatternLiteral, "User:x", OpRead)})
	b := NewSet([]Binding{allow(ResourceTopic, "b", PatternLiteral, "User:x", OpRead)})
	c := a.With(b.Bindings()...)
	rec := func(v int64, s *Set) []byte {
		data, err := encodeSnapshot(testKey, v, 1, s)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	ch := newChain(testKey)
	steps := []struct {
		data []byte
		took bool
		len  int
	}{
		{rec(1, a), true, 1},
		{rec(2, b), true, 1},
		{rec(2, a), false, 1}, // lost the race for version 2
		{rec(3, c), true, 2},
	}
	for i, st := range steps {
		took, err := ch.feed(int64(i), st.data)
		if err != nil || took != st.took || ch.set.Len() != st.len || ch.at != int64(i) && took {
			t.Fatalf("step %d: took %v (%v), %d bindings; want took %v, %d", i, took, err, ch.set.Len(), st.took, st.len)
		}
	}
	if ch.version != 3 || ch.at != 3 {
		t.Errorf("version %d at %d, want 3 at 3", ch.version, ch.at)
	}
	if took, err := ch.feed(4, []byte("{not json")); took || !errors.Is(err, errBadSnapshot) {
		t.Errorf("bad record: took %v, err %v", took, err)
	}
	if ch.version != 3 {
		t.Errorf("a bad record changed the version to %d", ch.version)
	}
}

func TestEmptySnapshotRoundTrips(t *testing.T) {
	data, err := encodeSnapshot(testKey, 7, 1, NewSet(nil))
	if err != nil {
		t.Fatal(err)
	}
	ch := newChain(testKey)
	ch.set = NewSet([]Binding{allow(ResourceTopic, "a", PatternLiteral, "User:x", OpRead)})
	if took, err := ch.feed(0, data); !took || err != nil || ch.set.Len() != 0 {
		t.Errorf("empty snapshot: took %v, err %v, %d bindings left", took, err, ch.set.Len())
	}
}
