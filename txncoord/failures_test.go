package txncoord

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestPersistFailure: a failed write leaves the state as it was and
// answers the request COORDINATOR_NOT_AVAILABLE; a new id whose first
// write fails is not held at all.
func TestPersistFailure(t *testing.T) {
	h := newHarness(t, Config{})
	h.failPersist = 1
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.CoordinatorNotAvailable)
	if h.state("a") != -1 || len(h.c.txns) != 0 {
		t.Fatal("an id whose first write failed is held")
	}
	p := h.initID("a")
	h.failPersist = 1
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.CoordinatorNotAvailable)
	if d, _ := h.c.Describe("a"); d.Epoch != p.epoch {
		t.Fatalf("epoch moved on a failed write: %d", d.Epoch)
	}
	h.failPersist = 1
	h.wantCode(h.step(addPartsReq(3, p, tp("t", 0))), kerr.CoordinatorNotAvailable)
	h.wantState("a", Empty)
	h.ok(h.step(addPartsReq(3, p, tp("t", 0))))
	h.failPersist = 1
	h.wantCode(h.step(endReq(3, p, true)), kerr.CoordinatorNotAvailable)
	h.wantState("a", Ongoing)
	if len(h.markersFor("a")) != 0 {
		t.Fatal("markers after a failed PrepareCommit")
	}
	h.failPersist = 1
	r := h.end(5, p, true)
	if r.ErrorCode != kerr.CoordinatorNotAvailable.Code || r.ProducerID != -1 {
		t.Fatalf("failed v5 EndTxn %+v", r)
	}
	if d, _ := h.c.Describe("a"); d.Epoch != p.epoch || d.State != Ongoing {
		t.Fatalf("state after failed v5 EndTxn %+v", d)
	}
	// An InitProducerId abort whose write fails answers the failure; the
	// producer is not fenced.
	h.failPersist = 1
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.CoordinatorNotAvailable)
	h.wantState("a", Ongoing)
	h.ok(h.step(addPartsReq(3, p, tp("t", 1))))

	// Complete's write fails: retried after the backoff.
	h.holdPersist = true
	id := h.step(endReq(3, p, true))
	h.persistAll() // PrepareCommit
	h.collect()
	h.ok(id)
	h.failPersist = 1
	h.persistAll() // CompleteCommit
	h.holdPersist = false
	h.collect()
	h.wantState("a", PrepareCommit)
	if h.nextTick.IsZero() {
		t.Fatal("no retry of the failed Complete write")
	}
	h.after(minBackoff)
	h.wantState("a", CompleteCommit)
	h.allAnswered()
}

// TestTimeoutPersistFailure: the coordinator's own abort of a timed-out
// transaction is retried with a backoff when its write fails.
func TestTimeoutPersistFailure(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.ok(h.step(addPartsReq(3, p, tp("t", 0))))
	h.failPersist = 2
	h.at(t0.Add(testTimeout * time.Millisecond))
	h.wantState("a", Ongoing)
	if want := h.now.Add(minBackoff); !h.nextTick.Equal(want) {
		t.Fatalf("NextTick %v, want %v", h.nextTick, want)
	}
	h.after(minBackoff)
	h.wantState("a", Ongoing)
	if want := h.now.Add(2 * minBackoff); !h.nextTick.Equal(want) {
		t.Fatalf("NextTick %v, want %v (doubled)", h.nextTick, want)
	}
	h.after(2 * minBackoff)
	h.wantState("a", CompleteAbort)
}

// TestMarkerRetry: a retriable marker error is asked again after 100ms,
// doubling to 5s, only for the partitions not written; a deleted topic
// counts as written; a fenced answer stops the markers and the id stays
// prepared.
func TestMarkerRetry(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.ok(h.step(addPartsReq(3, p, tp("t", 0), tp("t", 1), tp("gone", 0))))
	h.holdMarkers = true
	h.ok(h.step(endReq(3, p, true)))
	m := h.markers[0]
	h.markers = nil
	h.c.MarkersWritten(h.now, m.Seq, []MarkerResult{
		{tp("t", 0), 0},
		{tp("t", 1), kerr.NotLeaderForPartition.Code},
		{tp("gone", 0), kerr.UnknownTopicOrPartition.Code},
	})
	h.collect()
	if len(h.markers) != 0 || !h.nextTick.Equal(h.now.Add(100*time.Millisecond)) {
		t.Fatalf("markers %+v next %v", h.markers, h.nextTick)
	}
	// A late duplicate report of the same seq changes nothing.
	h.c.MarkersWritten(h.now, m.Seq, []MarkerResult{{tp("t", 1), 0}})
	h.collect()
	wait := 100 * time.Millisecond
	for range 8 {
		h.after(wait)
		if len(h.markers) != 1 || len(h.markers[0].Partitions) != 1 || h.markers[0].Partitions[0] != tp("t", 1) {
			t.Fatalf("retry %+v", h.markers)
		}
		h.writeMarkers(kerr.RequestTimedOut.Code)
		h.collect()
		wait = min(2*wait, 5*time.Second)
		if !h.nextTick.Equal(h.now.Add(wait)) {
			t.Fatalf("next %v, want in %v", h.nextTick, wait)
		}
	}
	// No answer for a partition is a failure too.
	h.after(wait)
	h.c.MarkersWritten(h.now, h.markers[0].Seq, nil)
	h.markers = nil
	h.collect()
	h.after(5 * time.Second)
	h.writeMarkers(0)
	h.collect()
	h.wantState("a", CompleteCommit)

	// Fenced: stop.
	h.ok(h.step(addPartsReq(3, p, tp("t", 0))))
	h.ok(h.step(endReq(3, p, false)))
	h.writeMarkers(kerr.TransactionCoordinatorFenced.Code)
	h.collect()
	h.after(time.Minute)
	if len(h.markers) != 0 {
		t.Fatal("markers sent again after a fenced answer")
	}
	h.wantState("a", PrepareAbort)
	h.wantCode(h.step(endReq(3, p, false)), kerr.ConcurrentTransactions)
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.ConcurrentTransactions)
}

// TestUnload: requests waiting on a write are answered NOT_COORDINATOR,
// reports of what was in flight are ignored, queued work is dropped, and
// the ids are no longer held.
func TestUnload(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	q := h.initID("b")
	h.ok(h.step(addPartsReq(3, q, tp("t", 0))))
	h.holdMarkers = true
	h.ok(h.step(endReq(3, q, true)))
	h.holdPersist = true
	waiting := h.step(addPartsReq(3, p, tp("t", 0)))
	persist := h.persists[0]
	h.c.Unload(0)
	h.collect()
	h.wantCode(waiting, kerr.NotCoordinator)
	if h.c.Loaded(0) || h.state("a") != -1 || h.state("b") != -1 || !h.nextTick.IsZero() {
		t.Fatal("the partition's ids are still held")
	}
	h.c.Persisted(h.now, persist.Seq, true)
	h.c.MarkersWritten(h.now, h.markers[0].Seq, []MarkerResult{{tp("t", 0), 0}})
	h.persists, h.markers = nil, nil
	h.collect()
	h.wantCode(h.step(addPartsReq(3, p, tp("t", 0))), kerr.NotCoordinator)
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.NotCoordinator)
	h.allAnswered()

	// Work queued but not yet taken with Ready is dropped too.
	h2 := newHarness(t, Config{})
	h2.holdPersist = true
	if err := h2.c.Step(h2.now, 1, initReq(4, "x", testTimeout, -1, -1)); err != nil {
		t.Fatal(err)
	}
	h2.c.Unload(0)
	if rd := h2.c.Ready(); len(rd.Persist) != 0 || len(rd.Responses) != 1 {
		t.Fatalf("after Unload: %+v", rd)
	}
	h2.c.Unload(0)
	if rd := h2.c.Ready(); len(rd.Responses) != 0 {
		t.Fatal("unloading twice answered again")
	}
}
