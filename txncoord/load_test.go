package txncoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// reload is a crash: a fresh coordinator loads what h's coordinator
// persisted (through Encode and Decode), at coordinator epoch 2.
func (h *harness) reload() {
	h.t.Helper()
	var recs []Record
	for _, r := range h.log[0] {
		d, err := Decode(r.Encode())
		if err != nil {
			h.t.Fatalf("decoding a persisted record: %v", err)
		}
		recs = append(recs, d)
	}
	h.c = New(h.cfg)
	h.persists, h.markers, h.commits = nil, nil, nil
	h.c.Load(h.now, 0, 2, recs)
	h.collect()
}

// TestLoadPrepared: after a crash with a commit prepared, the new
// coordinator sends the markers again with its coordinator epoch, commits
// the offsets and completes; ongoing transactions keep their timeout, and
// idle ids are idle.
func TestLoadPrepared(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.initID("a")
	b := h.initID("b")
	c := h.initID("c")
	h.ok(h.step(addPartsReq(3, a, tp("t", 0), tp("t", 1))))
	h.ok(h.step(txnCommitReq(5, a, "g", Offset{Topic: "t", Partition: 0, Offset: 42})))
	h.ok(h.step(batchReq(b, false, tp("u", 0))))
	h.holdMarkers = true
	h.ok(h.step(endReq(3, a, true)))
	h.after(10 * time.Second)

	h.holdMarkers = false
	h.reload()
	h.wantState("a", CompleteCommit)
	ms := h.markersFor("a")
	last := ms[len(ms)-1]
	if !last.Commit || last.CoordinatorEpoch != 2 || last.Epoch != a.epoch || len(last.Partitions) != 2 {
		t.Fatalf("markers after the reload %+v", last)
	}
	if !slices.Equal(h.committed["g"], []Offset{{Topic: "t", Partition: 0, Offset: 42}}) {
		t.Fatalf("committed %+v", h.committed)
	}
	if rec := h.lastRecord("a"); rec.CoordinatorEpoch != 2 {
		t.Fatalf("record after the reload has coordinator epoch %d", rec.CoordinatorEpoch)
	}
	h.wantState("b", Ongoing)
	h.wantState("c", Empty)
	if want := t0.Add(testTimeout * time.Millisecond); !h.nextTick.Equal(want) {
		t.Fatalf("NextTick %v, want b's timeout %v", h.nextTick, want)
	}
	h.at(t0.Add(testTimeout * time.Millisecond))
	h.wantState("b", CompleteAbort)
	h.ok(h.step(addPartsReq(3, c, tp("t", 0))))
	h.allAnswered()
}

// TestLoadPastTimeout: an ongoing transaction found past its timeout is
// aborted at once.
func TestLoadPastTimeout(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.initID("a")
	h.ok(h.step(addPartsReq(3, a, tp("t", 0))))
	h.now = h.now.Add(2 * time.Minute)
	h.reload()
	h.wantState("a", CompleteAbort)
}

// TestLoadEpochs: records of a lower coordinator epoch after a higher one
// are a fenced coordinator's and skipped; a Dead record forgets the id;
// records of other partitions are skipped.
func TestLoadEpochs(t *testing.T) {
	c := New(Config{PartitionOf: func(id string) int32 {
		if id == "other" {
			return 1
		}
		return 0
	}})
	rec := func(id string, epoch int16, st State, ce int32) Record {
		return Record{TxnID: id, ProducerID: 7, Epoch: epoch, LastProducerID: -1, LastEpoch: -1, NextProducerID: -1,
			TimeoutMillis: testTimeout, State: st, StartMillis: -1, UpdateMillis: t0.UnixMilli(), CoordinatorEpoch: ce}
	}
	c.Load(t0, 0, 6, []Record{
		rec("a", 1, Empty, 3),
		rec("a", 2, Empty, 5),
		rec("a", 9, Empty, 4), // a fenced coordinator's
		rec("b", 1, Empty, 5),
		rec("b", 1, Dead, 5),
		rec("other", 1, Empty, 5),
	})
	if d, ok := c.Describe("a"); !ok || d.Epoch != 2 {
		t.Fatalf("a %+v %v", d, ok)
	}
	if _, ok := c.Describe("b"); ok {
		t.Fatal("b survived its tombstone")
	}
	if _, ok := c.Describe("other"); ok {
		t.Fatal("a record of another partition was loaded")
	}
	if !c.Loaded(0) || c.Loaded(1) {
		t.Fatal("Loaded")
	}
	if rd := c.Ready(); len(rd.Persist) != 0 || len(rd.Markers) != 0 {
		t.Fatalf("loading idle ids asked for work: %+v", rd)
	}
}

// TestExpiry: an idle id is tombstoned IDExpiration after its last change
// and forgotten once the tombstone is persisted; an open transaction is
// not expired; a failed tombstone is retried.
func TestExpiry(t *testing.T) {
	h := newHarness(t, Config{IDExpiration: time.Hour, MaxTimeout: 2 * time.Hour})
	h.initID("a")
	b := h.step(initReq(4, "b", int32(2*time.Hour/time.Millisecond), -1, -1))
	h.ok(b)
	d, _ := h.c.Describe("b")
	h.ok(h.step(addPartsReq(3, producer{"b", d.ProducerID, d.Epoch}, tp("t", 0))))
	if !h.nextTick.Equal(t0.Add(time.Hour)) {
		t.Fatalf("NextTick %v", h.nextTick)
	}
	h.failPersist = 1
	h.at(t0.Add(time.Hour))
	h.wantState("a", Empty)
	h.after(minBackoff)
	if h.state("a") != -1 {
		t.Fatal("a not forgotten")
	}
	if recs := h.records("a"); recs[len(recs)-1].State != Dead {
		t.Fatalf("no tombstone: %+v", recs)
	}
	h.wantState("b", Ongoing)
	h.wantCode(h.step(addPartsReq(3, producer{"a", 1, 0}, tp("t", 0))), kerr.InvalidProducerIDMapping)
	// A new InitProducerId starts it over.
	if p := h.initID("a"); p.epoch != 0 || p.pid == 1 {
		t.Fatalf("after expiry %+v", p)
	}
}

// TestMaxIDs: past MaxIDs a new transactional id is refused with
// COORDINATOR_NOT_AVAILABLE, a known one is still served, and a slot
// freed by an expired id takes a new one.
func TestMaxIDs(t *testing.T) {
	h := newHarness(t, Config{IDExpiration: time.Hour, MaxIDs: 2})
	h.initID("a")
	h.initID("b")
	h.wantCode(h.step(initReq(5, "c", testTimeout, -1, -1)), kerr.CoordinatorNotAvailable)
	h.after(30 * time.Minute)
	if p := h.initID("b"); p.epoch != 1 {
		t.Fatalf("a known id past the cap: %+v, want its epoch bumped", p)
	}
	h.at(t0.Add(time.Hour)) // a expires; b, touched later, does not
	if h.state("a") != -1 || h.state("b") == -1 {
		t.Fatalf("a %v, b %v: want a forgotten and b kept", h.state("a"), h.state("b"))
	}
	h.initID("c")
	h.wantCode(h.step(initReq(5, "d", testTimeout, -1, -1)), kerr.CoordinatorNotAvailable)
}
