package plog

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// txnFixture is one partition of a kafka-format topic over an embedded
// DIS, with a way to restart its gateway (a fresh tenant over the same
// DIS).
type txnFixture struct {
	t      *testing.T
	dis    disclient.API
	ctx    context.Context
	stop   context.CancelFunc
	ps     *Partition
	topic  string
	seqs   map[int64]int32 // the next sequence of each producer
	epochs map[int64]int16
}

func newTxnFixture(t *testing.T) *txnFixture {
	return newTxnFixtureOver(t, localDIS(t))
}

// newTxnFixtureOver is a txnFixture over dis, which may inject faults.
func newTxnFixtureOver(t *testing.T, dis disclient.API) *txnFixture {
	f := &txnFixture{t: t, dis: dis, topic: "tx", seqs: map[int64]int32{}, epochs: map[int64]int16{}}
	ctx := context.Background()
	hours := int32(24)
	if err := f.dis.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: f.topic, PartitionCount: 1, DataDuration: &hours}); err != nil {
		t.Fatal(err)
	}
	f.restart()
	return f
}

// restart drops the gateway's state and makes a fresh one over the same
// DIS, whose old timers write nothing more.
func (f *txnFixture) restart() {
	if f.stop != nil {
		f.stop()
	}
	tn := testTenant(f.t, testSettings{}, f.dis)
	f.ctx, f.stop = context.WithCancel(context.Background())
	f.t.Cleanup(f.stop)
	tn.d.Ctx = f.ctx
	f.ps = tn.Partition(testKey(f.topic, 0))
}

// batch is a batch of n records of producer pid at epoch and seq, with
// the transactional bit when txn.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, n int, txn bool) []byte {
	recs := make([]protocol.Record, n)
	for i := range recs {
		recs[i] = protocol.Record{Offset: int64(i), Timestamp: time.Now().UnixMilli(), Value: []byte("v")}
	}
	b, err := protocol.AppendBatch(nil, recs, protocol.CodecNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	if txn {
		be.PutUint16(b[21:], be.Uint16(b[21:])|0x10)
	}
	be.PutUint64(b[43:], uint64(pid))
	be.PutUint16(b[51:], uint16(epoch))
	be.PutUint32(b[53:], uint32(seq))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// produce writes a batch of n records of pid (plain when pid < 0) and
// returns its base offset or the error code.
func (f *txnFixture) produce(pid int64, n int, txn bool) (int64, int16) {
	f.t.Helper()
	op := NewAppend(true)
	var data []byte
	if pid < 0 {
		data = batchesOf(f.t, 1, n, 1)
	} else {
		epoch, seq := f.epochs[pid], f.seqs[pid]
		data = txnBatch(f.t, pid, epoch, seq, n, txn)
		op.ProducerID, op.Epoch, op.FirstSeq, op.LastSeq, op.Transactional = pid, epoch, seq, seq+int32(n)-1, txn
	}
	ts := time.Now().UnixMilli()
	op.Entries = []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(0), Data: data, Timestamp: &ts}}
	op.Bytes = len(data)
	dup, code := f.ps.Enqueue(f.ctx, op)
	if code != 0 {
		return 0, code
	}
	if dup != nil {
		// A retry of a batch already written: answered with its outcome.
		op = dup
	}
	<-op.Done()
	if op.ErrCode == 0 && pid >= 0 {
		f.seqs[pid] += int32(n)
	}
	return op.BaseOffset, op.ErrCode
}

func (f *txnFixture) mustProduce(pid int64, n int, txn bool) int64 {
	f.t.Helper()
	base, code := f.produce(pid, n, txn)
	if code != 0 {
		f.t.Fatalf("produce of %d: %v", pid, kerr.ErrorForCode(code))
	}
	return base
}

func (f *txnFixture) marker(pid int64, epoch int16, commit bool, coord int32) int16 {
	f.t.Helper()
	code, msg := f.ps.WriteMarker(f.ctx, Marker{ProducerID: pid, Epoch: epoch, Commit: commit, CoordinatorEpoch: coord})
	if code != 0 && msg == "" {
		f.t.Errorf("code %d without a message", code)
	}
	return code
}

func (f *txnFixture) lso() int64 {
	f.t.Helper()
	lso, err := f.ps.LastStableOffset(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return lso
}

func (f *txnFixture) next() int64 {
	f.t.Helper()
	n, err := f.ps.Next(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// Opening, committing and aborting; the LSO; INVALID_TXN_STATE; fencing of
// data and markers by epoch and coordinator epoch; idempotent markers.
func TestTxnOpenCommitAbort(t *testing.T) {
	f := newTxnFixture(t)
	if got := f.lso(); got != 0 {
		t.Fatalf("empty partition's LSO %d", got)
	}
	// A marker of a producer with no state writes nothing.
	if code := f.marker(9, 0, true, 0); code != 0 || f.next() != 0 {
		t.Fatalf("marker of an unknown producer: %v, next %d", kerr.ErrorForCode(code), f.next())
	}
	first := f.mustProduce(1, 3, true)
	f.mustProduce(-1, 2, false)
	if got := f.lso(); got != first {
		t.Fatalf("LSO %d, want the open transaction's first offset %d", got, first)
	}
	if snap := f.ps.OpenTransactions(); !reflect.DeepEqual(snap, map[int64]int64{1: first}) {
		t.Fatalf("open %v", snap)
	}
	if _, code := f.produce(1, 1, false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("plain batch mid-transaction: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	f.mustProduce(1, 1, true)
	if code := f.marker(1, 0, true, 5); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	hw := f.next()
	if got := f.lso(); got != hw {
		t.Fatalf("LSO after commit %d, want the high watermark %d", got, hw)
	}
	// A retried marker writes nothing.
	if code := f.marker(1, 0, true, 5); code != 0 || f.next() != hw {
		t.Fatalf("retried marker: %v, next %d want %d", kerr.ErrorForCode(code), f.next(), hw)
	}
	// Coordinator epoch fencing.
	if code := f.marker(1, 0, false, 4); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("older coordinator: %v", kerr.ErrorForCode(code))
	}
	// An aborted transaction.
	abFirst := f.mustProduce(1, 2, true)
	f.mustProduce(2, 1, true)
	if code := f.marker(1, 1, false, 5); code != 0 { // version 2: the bumped epoch
		t.Fatal(kerr.ErrorForCode(code))
	}
	markerAt := f.next() - 1
	want := []Aborted{{ProducerID: 1, FirstOffset: abFirst, LastOffset: markerAt}}
	if got := f.ps.AbortedIn(0, f.next()); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if got := f.ps.AbortedIn(markerAt+1, markerAt+5); len(got) != 0 {
		t.Fatalf("aborted after the marker: %+v", got)
	}
	if got := f.ps.AbortedIn(0, abFirst); len(got) != 0 {
		t.Fatalf("aborted before the transaction: %+v", got)
	}
	// Producer 2's transaction holds the LSO.
	if got := f.lso(); got != abFirst+2 {
		t.Fatalf("LSO %d, want producer 2's first offset %d", got, abFirst+2)
	}
	// Data and markers of the old epoch are fenced.
	if _, code := f.produce(1, 1, true); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("data of the fenced epoch: %v", kerr.ErrorForCode(code))
	}
	if code := f.marker(1, 0, true, 6); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker of the fenced epoch: %v", kerr.ErrorForCode(code))
	}
	// The new epoch starts at sequence 0.
	f.epochs[1], f.seqs[1] = 1, 0
	f.mustProduce(1, 1, true)
	snaps := f.ps.ActiveProducers(time.Now())
	if len(snaps) != 2 || snaps[0].CoordinatorEpoch != 5 || snaps[0].TxnStartOffset != f.next()-1 || snaps[1].TxnStartOffset != abFirst+2 {
		t.Fatalf("producers %+v", snaps)
	}
}

// read_committed stops below the LSO, never returns a batch straddling
// it, and lists the aborted transactions; read_uncommitted reads on and
// lists none. A read_committed fetch waiting wakes when a marker lands.
func TestTxnFetchIsolation(t *testing.T) {
	f := newTxnFixture(t)
	f.mustProduce(-1, 1, false)
	ab := f.mustProduce(1, 2, true)
	if f.marker(1, 0, false, 0) != 0 {
		t.Fatal("abort")
	}
	f.mustProduce(-1, 1, false)
	open := f.mustProduce(2, 1, true)
	f.mustProduce(-1, 1, false)
	fetch := func(committed bool, wait time.Duration) *FetchPart {
		p := &FetchPart{Partition: f.ps, Kafka: true, Offset: 0, Limit: 1 << 20, Committed: committed, LastStableOffset: -1}
		f.ps.t.Fetch(f.ctx, []*FetchPart{p}, time.Now().Add(wait), 1, 1<<20, nil)
		return p
	}
	p := fetch(true, 0)
	if p.LastStableOffset != open || len(p.Batches) == 0 || p.Batches[len(p.Batches)-1].last >= open {
		t.Fatalf("read_committed: LSO %d, %d batches", p.LastStableOffset, len(p.Batches))
	}
	if len(p.Aborted) != 1 || p.Aborted[0].FirstOffset != ab || p.Aborted[0].ProducerID != 1 {
		t.Fatalf("aborted %+v", p.Aborted)
	}
	u := fetch(false, 0)
	if u.LastStableOffset != open || u.Batches[len(u.Batches)-1].last != f.next()-1 || len(u.Aborted) != 0 {
		t.Fatalf("read_uncommitted: LSO %d, last %d, aborted %+v", u.LastStableOffset, u.Batches[len(u.Batches)-1].last, u.Aborted)
	}
	// Waiting at the LSO, woken by the commit.
	done := make(chan *FetchPart)
	go func() {
		p := &FetchPart{Partition: f.ps, Kafka: true, Offset: open, Limit: 1 << 20, Committed: true, LastStableOffset: -1}
		f.ps.t.Fetch(f.ctx, []*FetchPart{p}, time.Now().Add(10*time.Second), 1, 1<<20, nil)
		done <- p
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if f.marker(2, 0, true, 0) != 0 {
		t.Fatal("commit")
	}
	w := <-done
	if time.Since(start) > 5*time.Second || len(w.Batches) == 0 || w.Batches[0].base != open || w.LastStableOffset != f.next() {
		t.Fatalf("woken fetch: %d batches, LSO %d, after %v", len(w.Batches), w.LastStableOffset, time.Since(start))
	}
}

// txnModel is what the partition's transaction state must be.
type txnModel struct {
	open    map[int64]int64
	aborted []Aborted
}

// A restart, at random points of random interleavings of producers'
// transactional and plain batches, commits and aborts, with snapshots
// written or not, rebuilds exactly the LSO, open transactions and aborted
// list a model holds; DeleteRecords trims the aborted list, also after a
// restart.
func TestTxnRecoveryRandomized(t *testing.T) {
	restarts, fromSnapshot := 0, 0
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		f := newTxnFixture(t)
		f.topic = "tx"
		m := txnModel{open: map[int64]int64{}}
		coord := map[int64]int32{}
		check := func(when string) {
			t.Helper()
			lso := f.next()
			for _, first := range m.open {
				lso = min(lso, first)
			}
			if got := f.lso(); got != lso {
				t.Fatalf("seed %d %s: LSO %d, want %d", seed, when, got, lso)
			}
			if got := f.ps.OpenTransactions(); !reflect.DeepEqual(got, m.open) {
				t.Fatalf("seed %d %s: open %v, want %v", seed, when, got, m.open)
			}
			got := f.ps.AbortedIn(0, 1<<62)
			want := abortedIn(m.aborted, 0, 1<<62)
			if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("seed %d %s: aborted %+v, want %+v", seed, when, got, want)
			}
		}
		for step := range 150 {
			pid := int64(rng.IntN(3) + 1)
			switch r := rng.IntN(100); {
			case r < 40:
				base := f.mustProduce(pid, rng.IntN(3)+1, true)
				if _, ok := m.open[pid]; !ok {
					m.open[pid] = base
				}
			case r < 50:
				f.mustProduce(-1, 1, false)
			case r < 75:
				commit := rng.IntN(2) == 0
				if code := f.marker(pid, f.epochs[pid], commit, coord[pid]); code != 0 {
					t.Fatalf("seed %d step %d: marker %v", seed, step, kerr.ErrorForCode(code))
				}
				if first, ok := m.open[pid]; ok {
					delete(m.open, pid)
					if !commit {
						m.aborted = append(m.aborted, Aborted{ProducerID: pid, FirstOffset: first, LastOffset: f.next() - 1})
					}
				}
			case r < 85:
				if err := f.ps.writeTxnSnapshot(f.ctx); err != nil {
					t.Fatal(err)
				}
			case r < 90:
				f.ps.writeWatermark(f.ctx)
			case r < 93 && len(m.aborted) > 0:
				// DeleteRecords past the first aborted transaction.
				to := m.aborted[0].LastOffset + 1
				if _, err := f.ps.DeleteBefore(f.ctx, 0, to); err != nil {
					t.Fatal(err)
				}
				var kept []Aborted
				for _, a := range m.aborted {
					if a.LastOffset >= to {
						kept = append(kept, a)
					}
				}
				m.aborted = kept
			default:
				check("before a restart")
				f.restart()
				check("after a restart")
				restarts++
				// Under the lock: the restarted partition's scheduled
				// snapshot may be writing the pointer meanwhile.
				f.ps.mu.Lock()
				if f.ps.txn.ptr.Seq >= 0 {
					fromSnapshot++
				}
				f.ps.mu.Unlock()
			}
		}
		check("at the end")
		f.restart()
		check("after the last restart")
	}
	if restarts < 5 || fromSnapshot == 0 {
		t.Fatalf("%d restarts, %d from a snapshot: the test exercised too little", restarts, fromSnapshot)
	}
}

// snapshotFaultDIS fails every watermark checkpoint that points at a
// snapshot record with err, and counts those.
type snapshotFaultDIS struct {
	disclient.API
	err   error
	calls atomic.Int32
}

func (d *snapshotFaultDIS) CommitCheckpoint(ctx context.Context, req *disclient.CommitCheckpointRequest) error {
	if strings.Contains(req.Metadata, `"seq":-1`) || !strings.Contains(req.Metadata, `"seq"`) {
		return d.API.CommitCheckpoint(ctx, req)
	}
	d.calls.Add(1)
	return d.err
}

// A snapshot write that fails is tried again txnSnapshotInterval later,
// not at once; one that finds the partition's stream gone (the topic was
// deleted) is not tried again, and the state, open transaction and all,
// no longer keeps the partition from eviction.
func TestTxnSnapshotFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		tries int32
		evict bool
	}{
		{"transient", errInjected, 1, false},
		{"stream gone", &disclient.Error{Status: 400, Code: disclient.CodeStreamNotFound, Message: "Stream does not exist."}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dis := &snapshotFaultDIS{API: localDIS(t), err: tc.err}
			f := newTxnFixtureOver(t, dis)
			// The first snapshot is written at once, and fails.
			f.mustProduce(7, 1, true)
			time.Sleep(txnSnapshotInterval / 2)
			if n := dis.calls.Load(); n != tc.tries {
				t.Errorf("%d snapshot writes in %v, want %d", n, txnSnapshotInterval/2, tc.tries)
			}
			if evicted := f.ps.t.EvictIdle(time.Now().Add(time.Minute)); evicted != tc.evict {
				t.Errorf("the partition evicted: %v, want %v", evicted, tc.evict)
			}
		})
	}
}

// switchedSnapshotDIS fails snapshot checkpoints as snapshotFaultDIS does
// while failing is set, and passes them through otherwise.
type switchedSnapshotDIS struct {
	snapshotFaultDIS
	failing atomic.Bool
}

func (d *switchedSnapshotDIS) CommitCheckpoint(ctx context.Context, req *disclient.CommitCheckpointRequest) error {
	if d.failing.Load() {
		return d.snapshotFaultDIS.CommitCheckpoint(ctx, req)
	}
	return d.API.CommitCheckpoint(ctx, req)
}

// A refresh of a snapshot about to outlive its record that fails is made
// by the write tried again txnSnapshotInterval later, though the state did
// not change meanwhile.
func TestTxnSnapshotRefreshRetried(t *testing.T) {
	t.Parallel()
	dis := &switchedSnapshotDIS{snapshotFaultDIS: snapshotFaultDIS{API: localDIS(t), err: errInjected}}
	f := newTxnFixtureOver(t, dis)
	f.mustProduce(7, 1, true)
	written := func() time.Time {
		f.ps.mu.Lock()
		defer f.ps.mu.Unlock()
		return f.ps.txnSnapAt
	}
	for deadline := time.Now().Add(10 * time.Second); written().IsZero(); {
		if time.Now().After(deadline) {
			t.Fatal("the first snapshot was not written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The snapshot is due for its refresh, which fails.
	f.ps.mu.Lock()
	f.ps.txnSnapAt = time.Now().Add(-txnSnapshotRefresh - time.Minute)
	f.ps.mu.Unlock()
	dis.failing.Store(true)
	if err := f.ps.writeTxnSnapshot(f.ctx); err == nil {
		t.Fatal("the refresh was written through a failing DIS")
	}
	f.ps.txnSnapshotFailed(errInjected, "refresh failed")
	dis.failing.Store(false)
	began := time.Now()
	for written().Before(began) {
		if time.Since(began) > 3*txnSnapshotInterval {
			t.Fatalf("the failed refresh was not made again within %v", 3*txnSnapshotInterval)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
