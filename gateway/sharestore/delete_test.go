package sharestore

import (
	"context"
	"reflect"
	"testing"
)

// TestDelete: a deleted share-partition loads as none, at its owner and
// at every later one, compacted or not, while its neighbours stay; one
// started again under the same key after it loads as the new state.
func TestDelete(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	k2 := Key{Group: "g", Topic: "t", Partition: 4}
	p1 := newShare(t, lp, k1)
	acquire(t, p1, t0, "a", 5)
	durable(t, lp, k1, p1)
	acquire(t, p1, t0, "a", 2)
	flush(t, lp, k1, p1)
	want2 := durable(t, lp, k2, newShare(t, lp, k2))

	if err := lp.Delete(context.Background(), k1); err != nil {
		t.Fatal(err)
	}
	gone := func(lp *LogPartition) {
		t.Helper()
		if _, ok, err := lp.Load(k1); ok || err != nil {
			t.Fatalf("a deleted share-partition loaded: %t, %v", ok, err)
		}
		if got := lp.Keys(); !reflect.DeepEqual(got, []Key{k2}) {
			t.Fatalf("keys %+v", got)
		}
		same(t, loaded(t, lp, k2), want2)
	}
	gone(lp)
	gone(take(t, log))
	log.compact(0)
	gone(take(t, log))

	lp = take(t, log)
	p1 = newShare(t, lp, k1)
	acquire(t, p1, t0, "b", 3)
	want1 := durable(t, lp, k1, p1)
	same(t, loaded(t, take(t, log), k1), want1)
	log.compact(0)
	same(t, loaded(t, take(t, log), k1), want1)
}

// TestDeleteFencesFormerOwner: what a former owner still writes of a
// share-partition after a later owner deleted it is ignored, also once
// compaction dropped the load record that fenced it; and the tombstones
// of the former owner's keys, which a load skips as written below the
// fence, are not what the deletion relies on.
func TestDeleteFencesFormerOwner(t *testing.T) {
	log := &memLog{}
	old := take(t, log)
	p := newShare(t, old, k1)
	acquire(t, p, t0, "a", 4)
	flush(t, old, k1, p)

	lp := take(t, log)
	if err := lp.Delete(context.Background(), k1); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := take(t, log).Load(k1); ok {
		t.Fatal("the former owner's records outlived the deletion")
	}
	acquire(t, p, t0, "a", 2)
	flush(t, old, k1, p)   // late updates
	durable(t, old, k1, p) // a late snapshot
	for range 2 {
		if _, ok, _ := take(t, log).Load(k1); ok {
			t.Fatal("a former owner's late write brought a deleted share-partition back")
		}
		log.compact(0)
	}
}

// TestDeleteFails: a deletion whose record is not written deletes
// nothing.
func TestDeleteFails(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	want := durable(t, lp, k1, newShare(t, lp, k1))
	log.fail = 1
	if err := lp.Delete(context.Background(), k1); err == nil {
		t.Fatal("a failed deletion reported success")
	}
	same(t, loaded(t, lp, k1), want)
	same(t, loaded(t, take(t, log), k1), want)
}

// TestDeletionKey: a deletion record's key reads back as one, and one
// with bytes after the epoch is refused.
func TestDeletionKey(t *testing.T) {
	pk, err := parseKey(deletionKey(k1, 7))
	if err != nil || !pk.deletion || pk.snapshot || pk.k != k1 || pk.epoch != 7 {
		t.Fatalf("%+v, %v", pk, err)
	}
	if pk, err := parseKey(append(deletionKey(k1, 7), 0)); err == nil {
		t.Fatalf("parsed %+v", pk)
	}
}
