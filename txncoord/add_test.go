package txncoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAddPartitionsStates: from Empty or Complete* an add opens a
// transaction (persisted, then answered); adding what is already in an
// Ongoing one is answered at once without a write; Prepare* is
// CONCURRENT_TRANSACTIONS.
func TestAddPartitionsStates(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.holdPersist = true
	id := h.step(addPartsReq(3, p, tp("t", 1), tp("t", 0)))
	if !h.waiting(id) {
		t.Fatal("add answered before persisting")
	}
	h.release()
	h.ok(id)
	h.wantState("a", Ongoing)
	d, _ := h.c.Describe("a")
	if d.StartMillis != h.now.UnixMilli() || !slices.Equal(d.Partitions, []TopicPartition{tp("t", 0), tp("t", 1)}) {
		t.Fatalf("describe %+v", d)
	}
	n := len(h.records("a"))
	h.ok(h.step(addPartsReq(3, p, tp("t", 0))))
	if len(h.records("a")) != n {
		t.Fatal("an add of partitions already in wrote a record")
	}
	h.ok(h.step(addPartsReq(3, p, tp("u", 0))))
	if got := h.lastRecord("a"); got.StartMillis != d.StartMillis || len(got.Partitions) != 3 {
		t.Fatalf("second add moved the start or lost partitions: %+v", got)
	}
	h.holdMarkers = true
	h.end(3, p, true)
	h.wantCode(h.step(addPartsReq(3, p, tp("t", 0))), kerr.ConcurrentTransactions)
	h.holdMarkers = false
	h.collect()
	h.wantState("a", CompleteCommit)
	h.after(time.Second)
	h.ok(h.step(addPartsReq(3, p, tp("v", 0))))
	d, _ = h.c.Describe("a")
	if d.State != Ongoing || d.StartMillis != h.now.UnixMilli() || !slices.Equal(d.Partitions, []TopicPartition{tp("v", 0)}) {
		t.Fatalf("a new transaction after a commit: %+v", d)
	}
}

// TestAddErrors: unknown id, wrong producer id, stale epoch (by version),
// partitions not coordinated here, bad partitions.
func TestAddErrors(t *testing.T) {
	h := newHarness(t, Config{PartitionOf: func(id string) int32 {
		if id == "far" {
			return 7
		}
		return 0
	}})
	p := h.initID("a")
	h.wantCode(h.step(addPartsReq(3, producer{"nobody", 1, 0}, tp("t", 0))), kerr.InvalidProducerIDMapping)
	h.wantCode(h.step(addPartsReq(3, producer{"a", p.pid + 1, p.epoch}, tp("t", 0))), kerr.InvalidProducerIDMapping)
	stale := producer{"a", p.pid, p.epoch - 1}
	h.wantCode(h.step(addPartsReq(1, stale, tp("t", 0))), kerr.InvalidProducerEpoch)
	h.wantCode(h.step(addPartsReq(2, stale, tp("t", 0))), kerr.ProducerFenced)
	h.wantCode(h.step(addOffsetsReq(1, stale, "g")), kerr.InvalidProducerEpoch)
	h.wantCode(h.step(addOffsetsReq(2, stale, "g")), kerr.ProducerFenced)
	h.wantCode(h.step(addPartsReq(3, producer{"far", 1, 0}, tp("t", 0))), kerr.NotCoordinator)
	h.wantCode(h.step(initReq(4, "far", testTimeout, -1, -1)), kerr.NotCoordinator)
	h.wantCode(h.step(endReq(3, producer{"far", 1, 0}, true)), kerr.NotCoordinator)
	h.wantCode(h.step(addOffsetsReq(3, p, "")), kerr.InvalidRequest)

	id := h.step(addPartsReq(3, p, tp("t", 0), tp("", 1), tp("u", -1)))
	codes := h.codes(id)
	want := []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if !slices.Equal(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	h.wantState("a", Empty)
	if err := h.c.Step(h.now, 99, kmsg.NewPtrProduceRequest()); err == nil {
		t.Fatal("stepping a Produce request did not fail")
	}
}

// TestConcurrentBeforeFencing: while a state write is in flight every
// request of the id is CONCURRENT_TRANSACTIONS, even one whose epoch is
// stale or whose producer id is wrong, so a client never fences itself
// retrying.
func TestConcurrentBeforeFencing(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.initID("a")
	h.holdPersist = true
	first := h.step(addPartsReq(3, p, tp("t", 0)))
	stale := producer{"a", p.pid, p.epoch - 1}
	wrong := producer{"a", p.pid + 5, p.epoch}
	reqs := []kmsg.Request{
		addPartsReq(3, stale, tp("t", 1)),
		addPartsReq(3, wrong, tp("t", 1)),
		addOffsetsReq(3, stale, "g"),
		endReq(3, stale, true),
		endReq(5, wrong, false),
		initReq(4, "a", testTimeout, p.pid, p.epoch+3),
		initReq(4, "a", testTimeout, -1, -1),
		txnCommitReq(5, stale, "g", Offset{Topic: "t", Partition: 0, Offset: 5}),
		batchReq(stale, false, tp("t", 1)),
	}
	for _, r := range reqs {
		h.wantCode(h.step(r), kerr.ConcurrentTransactions)
	}
	h.release()
	h.ok(first)
	h.wantCode(h.step(addPartsReq(3, stale, tp("t", 1))), kerr.ProducerFenced)
}

// TestBatchedAdd: v4+ AddPartitionsToTxn from partition owners: verify
// answers per partition without changing anything; a non-verify add
// opens the transaction for a version 2 producer; each transaction of a
// batch is answered on its own, and the batch once all are.
func TestBatchedAdd(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.initID("a")
	b := h.initID("b")
	h.wantCode(h.step(batchReq(a, true, tp("t", 0))), kerr.InvalidTxnState)
	h.ok(h.step(batchReq(a, false, tp("t", 0))))
	if !h.c.txns["a"].rec.Version2 {
		t.Fatal("an implicit add did not mark the id version 2")
	}
	id := h.step(batchReq(a, true, tp("t", 0), tp("t", 1)))
	if got := h.codes(id); !slices.Equal(got, []int16{0, kerr.InvalidTxnState.Code}) {
		t.Fatalf("verify codes %v", got)
	}
	h.wantCode(h.step(batchReq(producer{"a", a.pid, a.epoch + 1}, true, tp("t", 0))), kerr.ProducerFenced)
	h.wantCode(h.step(batchReq(producer{"a", a.pid + 1, a.epoch}, true, tp("t", 0))), kerr.InvalidProducerIDMapping)
	h.wantCode(h.step(batchReq(producer{"zz", 1, 0}, true, tp("t", 0))), kerr.InvalidProducerIDMapping)

	// A verify while a write is in flight sees the durable state.
	h.holdPersist = true
	add := h.step(batchReq(a, false, tp("t", 2)))
	h.wantCode(h.step(batchReq(a, true, tp("t", 2))), kerr.InvalidTxnState)
	h.release()
	h.ok(add)
	h.ok(h.step(batchReq(a, true, tp("t", 2))))

	// Two transactions in one batch, one waiting for its write.
	r := batchReq(a, true, tp("t", 0))
	r.Transactions = append(r.Transactions, batchReq(b, false, tp("x", 0)).Transactions...)
	h.holdPersist = true
	id = h.step(r)
	if !h.waiting(id) {
		t.Fatal("batch answered before b's write")
	}
	h.release()
	resp := h.answer(id).(*kmsg.AddPartitionsToTxnResponse)
	if len(resp.Transactions) != 2 || resp.Transactions[0].TransactionalID != "a" || resp.Transactions[1].TransactionalID != "b" {
		t.Fatalf("batch answer %+v", resp.Transactions)
	}
	h.ok(id)

	// Prepared: verify is CONCURRENT_TRANSACTIONS at the epoch the
	// producer has (the same under version 1, the bumped one under
	// version 2), fenced at the epoch before the bump.
	h.holdMarkers = true
	h.end(3, b, false)
	h.wantCode(h.step(batchReq(b, true, tp("x", 0))), kerr.ConcurrentTransactions)
	h.end(5, a, true)
	h.wantCode(h.step(batchReq(a, true, tp("t", 0))), kerr.ProducerFenced)
	h.wantCode(h.step(batchReq(producer{"a", a.pid, a.epoch + 1}, true, tp("t", 0))), kerr.ConcurrentTransactions)
}

// TestPartitionCap: a transaction holds at most MaxPartitions.
func TestPartitionCap(t *testing.T) {
	h := newHarness(t, Config{MaxPartitions: 2})
	p := h.initID("a")
	h.ok(h.step(addPartsReq(3, p, tp("t", 0), tp("t", 1))))
	h.wantCode(h.step(addPartsReq(3, p, tp("t", 2))), kerr.InvalidRequest)
	if d, _ := h.c.Describe("a"); len(d.Partitions) != 2 {
		t.Fatalf("partitions %v", d.Partitions)
	}
}
