package txncoord

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestEndTxnV1: commit under version 1: answered once PrepareCommit is
// persisted, markers (commit, same epoch) to every partition, then
// CompleteCommit with the transaction cleared. Retries: a commit while
// prepared is CONCURRENT_TRANSACTIONS, an abort INVALID_TXN_STATE; once
// complete a commit succeeds again and an abort is INVALID_TXN_STATE.
func TestEndTxnV1(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.ok(h.step(addPartsReq(3, p, tp("t", 0), tp("t", 1))))
	h.holdPersist, h.holdMarkers = true, true
	id := h.step(endReq(3, p, true))
	if !h.waiting(id) || len(h.markersFor("a")) != 0 {
		t.Fatal("EndTxn answered or markers sent before PrepareCommit persisted")
	}
	h.wantCode(h.step(endReq(3, p, true)), kerr.ConcurrentTransactions)
	h.release()
	h.ok(id)
	h.wantState("a", PrepareCommit)
	ms := h.markersFor("a")
	if len(ms) != 1 || !ms[0].Commit || ms[0].Epoch != p.epoch || ms[0].ProducerID != p.pid || ms[0].CoordinatorEpoch != 1 {
		t.Fatalf("markers %+v", ms)
	}
	h.wantCode(h.step(endReq(3, p, true)), kerr.ConcurrentTransactions)
	h.wantCode(h.step(endReq(3, p, false)), kerr.InvalidTxnState)
	h.holdMarkers = false
	h.collect()
	h.wantState("a", CompleteCommit)
	rec := h.lastRecord("a")
	if rec.Epoch != p.epoch || len(rec.Partitions) != 0 || rec.StartMillis != -1 || rec.Groups != nil || rec.PendingOffsets != nil {
		t.Fatalf("complete record %+v", rec)
	}
	h.ok(h.step(endReq(3, p, true)))
	h.wantCode(h.step(endReq(3, p, false)), kerr.InvalidTxnState)
	h.wantCode(h.step(endReq(3, producer{"a", p.pid, p.epoch + 1}, true)), kerr.ProducerFenced)
	h.wantCode(h.step(endReq(1, producer{"a", p.pid, p.epoch + 1}, true)), kerr.InvalidProducerEpoch)
	h.wantCode(h.step(endReq(3, producer{"a", p.pid + 1, p.epoch}, true)), kerr.InvalidProducerIDMapping)
	h.wantCode(h.step(endReq(3, producer{"nope", 1, 0}, true)), kerr.InvalidProducerIDMapping)
	wantStates(t, h.states("a"), Empty, Ongoing, PrepareCommit, CompleteCommit)
	if len(h.ended) != 1 || h.ended[0] != (Ended{TxnID: "a", Commit: true}) {
		t.Fatalf("ended %+v, want the one commit", h.ended)
	}

	// Abort mirrors it.
	h.ok(h.step(addPartsReq(3, p, tp("t", 0))))
	h.ok(h.step(endReq(3, p, false)))
	h.wantState("a", CompleteAbort)
	h.ok(h.step(endReq(3, p, false)))
	h.wantCode(h.step(endReq(3, p, true)), kerr.InvalidTxnState)
	if ms := h.markersFor("a"); len(ms) != 2 || ms[1].Commit {
		t.Fatalf("abort markers %+v", ms)
	}
	if len(h.ended) != 2 || h.ended[1] != (Ended{TxnID: "a"}) {
		t.Fatalf("ended %+v, want the commit then the abort", h.ended)
	}
	// Empty under version 1 has nothing to end.
	q := h.initID("a")
	h.wantCode(h.step(endReq(3, q, false)), kerr.InvalidTxnState)
	h.wantCode(h.step(endReq(3, q, true)), kerr.InvalidTxnState)
	h.allAnswered()
}

// TestEndTxnV2: every EndTxn v5 bumps the epoch, answers the new one, and
// writes markers with it; a retry with the epoch before is CONCURRENT
// while prepared and succeeds once complete with the current epoch; the
// old epoch is fenced for everything else.
func TestEndTxnV2(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.ok(h.step(batchReq(p, false, tp("t", 0))))
	h.holdMarkers = true
	r := h.end(5, p, true)
	if r.ErrorCode != 0 || r.ProducerID != p.pid || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("EndTxn v5 %+v", r)
	}
	ms := h.markersFor("a")
	if len(ms) != 1 || ms[0].Epoch != p.epoch+1 || !ms[0].Commit {
		t.Fatalf("markers %+v", ms)
	}
	h.wantCode(h.step(endReq(5, p, true)), kerr.ConcurrentTransactions)
	h.wantCode(h.step(endReq(5, p, false)), kerr.InvalidTxnState)
	h.wantCode(h.step(endReq(5, producer{"a", p.pid, p.epoch + 1}, true)), kerr.ProducerFenced)
	h.holdMarkers = false
	h.collect()
	h.wantState("a", CompleteCommit)
	r = h.end(5, p, true)
	if r.ErrorCode != 0 || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("retry after complete %+v", r)
	}
	h.wantCode(h.step(endReq(5, p, false)), kerr.InvalidTxnState)
	h.wantCode(h.step(batchReq(p, false, tp("t", 0))), kerr.ProducerFenced)
	rec := h.lastRecord("a")
	if rec.LastEpoch != p.epoch || rec.Epoch != p.epoch+1 || !rec.Version2 {
		t.Fatalf("complete record %+v", rec)
	}

	// The next transaction at the new epoch.
	p.epoch++
	h.ok(h.step(batchReq(p, false, tp("t", 1))))
	r = h.end(5, p, false)
	if r.ErrorCode != 0 || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("second EndTxn %+v", r)
	}
	h.wantState("a", CompleteAbort)
	// A commit with the current epoch of a transaction never opened is
	// invalid; an abort of it succeeds and bumps.
	p.epoch++
	h.wantCode(h.step(endReq(5, p, true)), kerr.InvalidTxnState)
	r = h.end(5, p, false)
	if r.ErrorCode != 0 || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("abort of an empty transaction %+v", r)
	}
	h.allAnswered()
}

// TestEndTxnV2Empty: right after InitProducerId, a version 2 abort
// succeeds with a bump and no markers; a commit is INVALID_TXN_STATE.
func TestEndTxnV2Empty(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.wantCode(h.step(endReq(5, p, true)), kerr.InvalidTxnState)
	r := h.end(5, p, false)
	if r.ErrorCode != 0 || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("empty abort %+v", r)
	}
	if len(h.markersFor("a")) != 0 {
		t.Fatal("markers for an empty transaction")
	}
	wantStates(t, h.states("a"), Empty, PrepareAbort, CompleteAbort)
	// Retried: answered as before.
	r = h.end(5, p, false)
	if r.ErrorCode != 0 || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("retry of the empty abort %+v", r)
	}
}

// TestEndTxnV2Exhaustion: a version 2 EndTxn at epoch 32766 writes markers
// at 32767 and moves the id to a new producer id at epoch 0, which the
// answer gives; a retry with the old producer id and epoch is answered
// with the new one.
func TestEndTxnV2Exhaustion(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.c.txns["a"].rec.Epoch = exhaustedEpoch
	p.epoch = exhaustedEpoch
	h.ok(h.step(batchReq(p, false, tp("t", 0))))
	h.holdMarkers = true
	r := h.end(5, p, true)
	if r.ErrorCode != 0 || r.ProducerID == p.pid || r.ProducerEpoch != 0 {
		t.Fatalf("EndTxn at exhaustion %+v", r)
	}
	next := producer{"a", r.ProducerID, 0}
	ms := h.markersFor("a")
	if len(ms) != 1 || ms[0].ProducerID != p.pid || ms[0].Epoch != exhaustedEpoch+1 {
		t.Fatalf("markers %+v", ms)
	}
	// The new producer asking before the end completed waits.
	h.wantCode(h.step(batchReq(next, false, tp("t", 0))), kerr.ConcurrentTransactions)
	h.holdMarkers = false
	h.collect()
	d, _ := h.c.Describe("a")
	if d.State != CompleteCommit || d.ProducerID != next.pid || d.Epoch != 0 {
		t.Fatalf("after completion %+v", d)
	}
	rec := h.lastRecord("a")
	if rec.LastProducerID != p.pid || rec.NextProducerID != -1 {
		t.Fatalf("record %+v", rec)
	}
	r = h.end(5, p, true)
	if r.ErrorCode != 0 || r.ProducerID != next.pid || r.ProducerEpoch != 0 {
		t.Fatalf("retry across the overflow %+v", r)
	}
	h.ok(h.step(batchReq(next, false, tp("t", 0))))
	r = h.end(5, next, true)
	if r.ErrorCode != 0 || r.ProducerID != next.pid || r.ProducerEpoch != 1 {
		t.Fatalf("EndTxn with the new producer id %+v", r)
	}
}

// TestTimeout: an Ongoing transaction past its timeout is aborted by the
// coordinator with a bumped epoch, fencing its producer; also one with no
// partitions (offsets only) and one whose partitions never got data.
func TestTimeout(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.initID("a")
	b := h.initID("b")
	c := h.initID("c")
	h.ok(h.step(addPartsReq(3, a, tp("t", 0))))
	h.ok(h.step(addOffsetsReq(3, b, "g")))
	h.ok(h.step(txnCommitReq(3, b, "g", Offset{Topic: "t", Partition: 0, Offset: 10})))
	if !h.c.PendingOffsets("g", "t", 0) {
		t.Fatal("offsets not pending")
	}
	h.after(30 * time.Second)
	h.ok(h.step(batchReq(c, false, tp("t", 1))))
	deadline := t0.Add(testTimeout * time.Millisecond)
	if !h.nextTick.Equal(deadline) {
		t.Fatalf("NextTick %v, want the timeout %v", h.nextTick, deadline)
	}
	h.at(deadline)
	h.wantState("a", CompleteAbort)
	h.wantState("b", CompleteAbort)
	h.wantState("c", Ongoing)
	if h.c.PendingOffsets("g", "t", 0) || len(h.committed["g"]) != 0 {
		t.Fatal("a timed-out transaction's offsets are still pending or were committed")
	}
	if ms := h.markersFor("a"); len(ms) != 1 || ms[0].Commit || ms[0].Epoch != a.epoch+1 {
		t.Fatalf("timeout markers %+v", ms)
	}
	if len(h.markersFor("b")) != 0 {
		t.Fatal("markers for a transaction with no partitions")
	}
	h.wantCode(h.step(endReq(3, a, true)), kerr.ProducerFenced)
	h.wantCode(h.step(endReq(5, b, false)), kerr.ProducerFenced)
	h.at(deadline.Add(30 * time.Second))
	h.wantState("c", CompleteAbort)
	if ms := h.markersFor("c"); len(ms) != 1 || ms[0].Epoch != c.epoch+1 {
		t.Fatalf("markers of c %+v", ms)
	}
	h.wantCode(h.step(endReq(5, c, true)), kerr.ProducerFenced)
	// The fenced producer starts over with InitProducerId.
	q := h.initID("a")
	if q.epoch != a.epoch+2 {
		t.Fatalf("epoch after the fence %d", q.epoch)
	}
}

// TestVersion2Flag: the id runs under version 2 from a request only such
// a producer sends, and InitProducerId resets it; a version 1 EndTxn
// after it keeps the epoch.
func TestVersion2Flag(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.ok(h.step(txnCommitReq(5, p, "g", Offset{Topic: "t", Offset: 1})))
	if !h.lastRecord("a").Version2 {
		t.Fatal("TxnOffsetCommit v5 did not mark the id version 2")
	}
	r := h.end(5, p, true)
	if r.ErrorCode != 0 || r.ProducerEpoch != p.epoch+1 {
		t.Fatalf("EndTxn v5 %+v", r)
	}
	q := h.initID("a")
	if h.lastRecord("a").Version2 {
		t.Fatal("InitProducerId kept version 2")
	}
	h.ok(h.step(addPartsReq(3, q, tp("t", 0))))
	h.ok(h.step(endReq(3, q, false)))
	if rec := h.lastRecord("a"); rec.Epoch != q.epoch || rec.Version2 {
		t.Fatalf("version 1 end %+v", rec)
	}
	// Under version 1 a retry with the epoch before is fenced, not a retry.
	h.wantCode(h.step(endReq(3, producer{"a", q.pid, q.epoch - 1}, false)), kerr.ProducerFenced)
}
