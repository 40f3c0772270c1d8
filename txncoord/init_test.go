package txncoord

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInitNew: a new id gets a new producer id at epoch 0, answered only
// once its Empty record is persisted.
func TestInitNew(t *testing.T) {
	h := newHarness(t, Config{})
	h.holdPersist = true
	id := h.step(initReq(4, "a", testTimeout, -1, -1))
	if !h.waiting(id) || len(h.persists) != 1 {
		t.Fatalf("answered before persisting (persists %d)", len(h.persists))
	}
	if h.state("a") != -1 {
		t.Fatal("an id not yet persisted is described")
	}
	h.release()
	r := h.answer(id).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 || r.ProducerID != 1 || r.ProducerEpoch != 0 {
		t.Fatalf("answer %+v", r)
	}
	rec := h.lastRecord("a")
	if rec.State != Empty || rec.ProducerID != 1 || rec.Epoch != 0 || rec.TimeoutMillis != testTimeout || rec.StartMillis != -1 {
		t.Fatalf("record %+v", rec)
	}
}

// TestInitTimeout: a timeout of zero, negative or over MaxTimeout is
// refused; an empty id is an invalid request.
func TestInitTimeout(t *testing.T) {
	h := newHarness(t, Config{MaxTimeout: time.Minute})
	for _, ms := range []int32{0, -1, 60001} {
		h.wantCode(h.step(initReq(4, "a", ms, -1, -1)), kerr.InvalidTransactionTimeout)
	}
	h.ok(h.step(initReq(4, "a", 60000, -1, -1)))
	h.wantCode(h.step(initReq(4, "", 1000, -1, -1)), kerr.InvalidRequest)
	r := initReq(4, "a", 1000, -1, -1)
	r.TransactionalID = nil
	h.wantCode(h.step(r), kerr.InvalidRequest)
}

// TestInitBumpsEpoch: each InitProducerId of an idle id bumps the epoch;
// at 32766 it moves to a new producer id at epoch 0.
func TestInitBumpsEpoch(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	q := h.initID("a")
	if q.pid != p.pid || q.epoch != p.epoch+1 {
		t.Fatalf("second init %+v after %+v", q, p)
	}
	h.c.txns["a"].rec.Epoch = exhaustedEpoch - 1
	q = h.initID("a")
	if q.pid != p.pid || q.epoch != exhaustedEpoch {
		t.Fatalf("init before exhaustion %+v", q)
	}
	r := h.initID("a")
	if r.pid == p.pid || r.epoch != 0 {
		t.Fatalf("init at an exhausted epoch %+v, want a new producer id at 0", r)
	}
	rec := h.lastRecord("a")
	if rec.LastProducerID != p.pid || rec.LastEpoch != -1 {
		t.Fatalf("record after rotation %+v", rec)
	}
	// The old producer is fenced.
	h.wantCode(h.step(addPartsReq(3, q, tp("t", 0))), kerr.InvalidProducerIDMapping)
}

// TestInitAbortsOngoing: InitProducerId for an id with a transaction open
// aborts it, fencing the old producer with a bumped epoch, and answers
// CONCURRENT_TRANSACTIONS; asked again once the abort completed, it bumps
// once more.
func TestInitAbortsOngoing(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.ok(h.step(addPartsReq(3, p, tp("t", 0), tp("t", 1))))
	h.holdMarkers = true
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.ConcurrentTransactions)
	h.wantState("a", PrepareAbort)
	ms := h.markersFor("a")
	if len(ms) != 1 || ms[0].Commit || ms[0].Epoch != p.epoch+1 || ms[0].ProducerID != p.pid || len(ms[0].Partitions) != 2 {
		t.Fatalf("markers %+v", ms)
	}
	// Prepared: asked again, still concurrent; the old producer is fenced.
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.ConcurrentTransactions)
	h.wantCode(h.step(endReq(3, p, true)), kerr.ProducerFenced)
	h.holdMarkers = false
	h.collect()
	h.wantState("a", CompleteAbort)
	q := h.initID("a")
	if q.epoch != p.epoch+2 {
		t.Fatalf("epoch after the abort %d, want %d", q.epoch, p.epoch+2)
	}
	wantStates(t, h.states("a"), Empty, Ongoing, PrepareAbort, CompleteAbort, Empty)
}

// TestInitKIP360: a producer carrying its id and epoch gets a bump when it
// is current, the same answer again when it retries the bump, and is
// fenced otherwise (INVALID_PRODUCER_EPOCH before v4).
func TestInitKIP360(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	r := h.answer(h.step(initReq(4, "a", testTimeout, p.pid, p.epoch))).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 || r.ProducerID != p.pid || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("recovery %+v", r)
	}
	// The answer was lost; the retry gets the same epoch.
	r2 := h.answer(h.step(initReq(4, "a", testTimeout, p.pid, p.epoch))).(*kmsg.InitProducerIDResponse)
	if r2.ErrorCode != 0 || r2.ProducerEpoch != r.ProducerEpoch {
		t.Fatalf("retry %+v, want epoch %d", r2, r.ProducerEpoch)
	}
	h.wantCode(h.step(initReq(4, "a", testTimeout, p.pid, p.epoch+5)), kerr.ProducerFenced)
	h.wantCode(h.step(initReq(3, "a", testTimeout, p.pid, p.epoch+5)), kerr.InvalidProducerEpoch)
	h.wantCode(h.step(initReq(4, "a", testTimeout, p.pid+10, 0)), kerr.ProducerFenced)
	h.wantCode(h.step(initReq(4, "a", testTimeout, p.pid, -1)), kerr.InvalidRequest)
	// A fresh producer (no id) bumps and forgets the last epoch: the
	// earlier producer's retry is fenced now.
	q := h.initID("a")
	h.wantCode(h.step(initReq(4, "a", testTimeout, p.pid, p.epoch)), kerr.ProducerFenced)

	// At exhaustion, recovery moves to a new producer id; a retry with the
	// old id and exhausted epoch gets it again.
	h.c.txns["a"].rec.Epoch = exhaustedEpoch
	r3 := h.answer(h.step(initReq(4, "a", testTimeout, q.pid, exhaustedEpoch))).(*kmsg.InitProducerIDResponse)
	if r3.ErrorCode != 0 || r3.ProducerID == q.pid || r3.ProducerEpoch != 0 {
		t.Fatalf("recovery at exhaustion %+v", r3)
	}
	r4 := h.answer(h.step(initReq(4, "a", testTimeout, q.pid, exhaustedEpoch))).(*kmsg.InitProducerIDResponse)
	if r4.ErrorCode != 0 || r4.ProducerID != r3.ProducerID || r4.ProducerEpoch != 0 {
		t.Fatalf("retry of the rotation %+v, want %+v", r4, r3)
	}
}

// TestInitPrepared: while an end is being delivered, InitProducerId is
// CONCURRENT_TRANSACTIONS.
func TestInitPrepared(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.ok(h.step(addPartsReq(3, p, tp("t", 0))))
	h.holdMarkers = true
	if r := h.end(3, p, true); r.ErrorCode != 0 {
		t.Fatalf("EndTxn %v", kerr.ErrorForCode(r.ErrorCode))
	}
	h.wantCode(h.step(initReq(4, "a", testTimeout, -1, -1)), kerr.ConcurrentTransactions)
	h.wantCode(h.step(initReq(4, "a", testTimeout, p.pid, p.epoch)), kerr.ConcurrentTransactions)
}
