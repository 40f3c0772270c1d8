package plog

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A marker another gateway wrote after this one recovered the partition
// (the old owner's write still in flight at an ownership move) ends the
// transaction here too, once this gateway's next write finds it: the last
// stable offset does not stay where the transaction began.
func TestMarkerWrittenElsewhereEndsTransaction(t *testing.T) {
	old := newTxnFixture(t)
	base := old.mustProduce(1, 2, true)
	owner := &txnFixture{t: t, dis: old.dis, topic: old.topic, seqs: map[int64]int32{}, epochs: map[int64]int16{}}
	owner.restart()
	if lso := owner.lso(); lso != base {
		t.Fatalf("the new owner's last stable offset %d, want %d where the open transaction begins", lso, base)
	}
	if code := old.marker(1, 0, true, 1); code != 0 {
		t.Fatalf("the old owner's late marker: %v", kerr.ErrorForCode(code))
	}
	owner.mustProduce(-1, 1, false)
	if lso, next := owner.lso(), owner.next(); lso != next {
		t.Fatalf("after a write past the other gateway's marker: last stable offset %d, next offset %d; want them equal", lso, next)
	}
}

// A state made while another gateway led the partition is never written
// from, and is dropped when the partition comes here, so that it is
// recovered afresh from what its owner wrote.
func TestBorrowedStateDroppedWhenPartitionComesHere(t *testing.T) {
	f := newTxnFixture(t)
	f.mustProduce(-1, 1, false)
	tn := testTenant(t, testSettings{}, f.dis)
	owned := false
	tn.d.Owns = func(string, int32) bool { return owned }
	borrowed := tn.Partition(testKey(f.topic, 0))
	if !borrowed.borrowed {
		t.Fatal("a state made while another gateway leads the partition is not borrowed")
	}
	owned = true
	if !tn.ReleaseMoved(tn.d.Owns) {
		t.Fatal("an idle borrowed state was not released")
	}
	if again := tn.Partition(testKey(f.topic, 0)); again == borrowed || again.borrowed {
		t.Fatal("the partition that came here kept its borrowed state")
	}
}

// On a partition nobody writes again, the late marker is found by the
// catch-up a recovery that found transactions open schedules: the last
// stable offset moves on without another write here.
func TestCatchUpFindsLateMarker(t *testing.T) {
	old := newTxnFixture(t)
	base := old.mustProduce(1, 2, true)
	owner := &txnFixture{t: t, dis: old.dis, topic: old.topic, seqs: map[int64]int32{}, epochs: map[int64]int16{}}
	owner.restart()
	if lso := owner.lso(); lso != base {
		t.Fatalf("the new owner's last stable offset %d, want %d", lso, base)
	}
	if err := owner.ps.catchUp(owner.ctx); err != nil {
		t.Fatalf("a catch-up with nothing new: %v", err)
	}
	if lso := owner.lso(); lso != base {
		t.Fatalf("a catch-up with nothing new moved the last stable offset to %d", lso)
	}
	if code := old.marker(1, 0, true, 1); code != 0 {
		t.Fatalf("the old owner's late marker: %v", kerr.ErrorForCode(code))
	}
	if err := owner.ps.catchUp(owner.ctx); err != nil {
		t.Fatal(err)
	}
	if lso, next := owner.lso(), owner.next(); lso != next || next != base+3 {
		t.Fatalf("after the catch-up: last stable offset %d, next offset %d; want both %d", lso, next, base+3)
	}
	owner.mustProduce(-1, 1, false)
	if next := owner.next(); next != base+4 {
		t.Fatalf("a write after the catch-up: next offset %d, want %d", next, base+4)
	}
}
