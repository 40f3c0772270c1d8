package txncoord

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTxnOffsetCommitV1: before version 5 the group must have joined with
// AddOffsetsToTxn; offsets are pending until the commit's markers are
// written, then committed to the group, later ones of a partition
// replacing earlier; an abort drops them.
func TestTxnOffsetCommitV1(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	off := func(part int32, o int64) Offset { return Offset{Topic: "t", Partition: part, Offset: o} }
	h.wantCode(h.step(txnCommitReq(3, p, "g", off(0, 1))), kerr.InvalidTxnState)
	h.ok(h.step(addOffsetsReq(3, p, "g")))
	h.wantState("a", Ongoing)
	h.wantCode(h.step(txnCommitReq(3, p, "other", off(0, 1))), kerr.InvalidTxnState)
	h.ok(h.step(txnCommitReq(3, p, "g", off(0, 1), off(1, 5))))
	h.ok(h.step(txnCommitReq(3, p, "g", off(0, 7))))
	if !h.c.PendingOffsets("g", "t", 0) || !h.c.PendingOffsets("g", "t", 1) || h.c.PendingOffsets("g", "t", 2) || h.c.PendingOffsets("x", "t", 0) {
		t.Fatal("PendingOffsets wrong while open")
	}
	h.wantCode(h.step(txnCommitReq(2, producer{"a", p.pid, p.epoch + 1}, "g", off(0, 1))), kerr.InvalidProducerEpoch)
	h.wantCode(h.step(txnCommitReq(3, producer{"a", p.pid, p.epoch + 1}, "g", off(0, 1))), kerr.ProducerFenced)
	h.ok(h.step(addPartsReq(3, p, tp("t", 9))))
	h.holdMarkers, h.holdCommits = true, true
	h.ok(h.step(endReq(3, p, true)))
	if len(h.commits) != 0 {
		t.Fatal("offsets committed before the markers")
	}
	if !h.c.PendingOffsets("g", "t", 0) {
		t.Fatal("offsets not pending while prepared")
	}
	h.wantCode(h.step(txnCommitReq(3, p, "g", off(0, 1))), kerr.ConcurrentTransactions)
	h.writeMarkers(0)
	h.collect()
	if len(h.commits) != 1 {
		t.Fatalf("commits %+v", h.commits)
	}
	h.wantState("a", PrepareCommit)
	cm := h.commits[0]
	if cm.Group != "g" || cm.ProducerID != p.pid || cm.Epoch != p.epoch || !slices.Equal(cm.Offsets, []Offset{off(0, 7), off(1, 5)}) {
		t.Fatalf("commit %+v", cm)
	}
	h.failCommits = 1
	h.commitAll()
	h.collect()
	if len(h.commits) != 0 || h.nextTick.IsZero() {
		t.Fatalf("a failed commit is not waiting for its retry: %+v next %v", h.commits, h.nextTick)
	}
	h.after(minBackoff)
	if len(h.commits) != 1 {
		t.Fatalf("commit not retried: %+v", h.commits)
	}
	h.holdCommits = false
	h.collect()
	h.wantState("a", CompleteCommit)
	if h.c.PendingOffsets("g", "t", 0) || !slices.Equal(h.committed["g"], []Offset{off(0, 7), off(1, 5)}) {
		t.Fatalf("after commit: pending %v committed %+v", h.c.PendingOffsets("g", "t", 0), h.committed["g"])
	}

	h.ok(h.step(addOffsetsReq(3, p, "g")))
	h.ok(h.step(txnCommitReq(3, p, "g", off(3, 1))))
	h.ok(h.step(endReq(3, p, false)))
	if h.c.PendingOffsets("g", "t", 3) || len(h.committed["g"]) != 2 {
		t.Fatal("aborted offsets pending or committed")
	}
}

// TestTxnOffsetCommitV2: version 5 adds the group implicitly and marks the
// id version 2; the pending offsets cap refuses growth.
func TestTxnOffsetCommitV2(t *testing.T) {
	h := newHarness(t, Config{MaxPendingOffsets: 2})
	p := h.initID("a")
	h.ok(h.step(txnCommitReq(5, p, "g", Offset{Topic: "t", Partition: 0, Offset: 3})))
	rec := h.lastRecord("a")
	if rec.State != Ongoing || !rec.Version2 || !slices.Equal(rec.Groups, []string{"g"}) || rec.StartMillis != h.now.UnixMilli() {
		t.Fatalf("record %+v", rec)
	}
	h.ok(h.step(txnCommitReq(5, p, "h", Offset{Topic: "t", Partition: 0, Offset: 4})))
	h.wantCode(h.step(txnCommitReq(5, p, "h", Offset{Topic: "t", Partition: 1, Offset: 4})), kerr.InvalidRequest)
	h.ok(h.step(txnCommitReq(5, p, "h", Offset{Topic: "t", Partition: 0, Offset: 5})))
	r := h.end(5, p, true)
	if r.ErrorCode != 0 {
		t.Fatalf("EndTxn %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if !slices.Equal(h.committed["h"], []Offset{{Topic: "t", Partition: 0, Offset: 5}}) || len(h.committed["g"]) != 1 {
		t.Fatalf("committed %+v", h.committed)
	}
}
