package plog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/sharestore"
)

// memShares is ShareStates in memory: each key's records since its last
// snapshot, the current token, and a way to hold or fail writes.
type memShares struct {
	mu      sync.Mutex
	recs    map[sharestore.Key][]sharestate.Record
	tokens  map[sharestore.Key]uint64
	next    uint64
	fail    error         // returned by Persist while set
	hold    chan struct{} // Persist waits for it while set
	written int
}

func newMemShares() *memShares {
	return &memShares{recs: map[sharestore.Key][]sharestate.Record{}, tokens: map[sharestore.Key]uint64{}}
}

func (m *memShares) Take(_ context.Context, k sharestore.Key) (*sharestate.Partition, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	m.tokens[k] = m.next
	recs := m.recs[k]
	if len(recs) == 0 {
		return nil, m.next, false, nil
	}
	p, err := sharestate.Load(sharestate.Config{}, recs[0], recs[1:]...)
	return p, m.next, true, err
}

func (m *memShares) Persist(ctx context.Context, k sharestore.Key, token uint64, rec sharestate.Record) error {
	m.mu.Lock()
	hold := m.hold
	m.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.fail != nil:
		return m.fail
	case m.tokens[k] != token:
		return ErrShareFenced
	case rec.Snapshot:
		m.recs[k] = []sharestate.Record{rec}
	default:
		m.recs[k] = append(m.recs[k], rec)
	}
	m.written++
	return nil
}

func (m *memShares) Start(_ context.Context, k sharestore.Key) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if recs := m.recs[k]; len(recs) > 0 {
		return recs[len(recs)-1].Start, true, nil
	}
	return 0, false, nil
}

func (m *memShares) Delete(_ context.Context, k sharestore.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, k)
	delete(m.tokens, k)
	return nil
}

func (m *memShares) Keys(_ context.Context, group string) ([]sharestore.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sharestore.Key
	for k := range m.recs {
		if k.Group == group {
			out = append(out, k)
		}
	}
	return out, nil
}

// shareFixture is one kafka-format partition holding 30 records in three
// batches, and a share group reading it through the partition log.
type shareFixture struct {
	t      *testing.T
	dis    disclient.API
	shares *memShares
	ps     *Partition
}

const shareTopic = "sq"

func newShareFixture(t *testing.T) *shareFixture {
	f := &shareFixture{t: t, dis: localDIS(t), shares: newMemShares()}
	hours := int32(24)
	if err := f.dis.CreateStream(context.Background(), &disclient.CreateStreamRequest{StreamName: shareTopic, PartitionCount: 1, DataDuration: &hours}); err != nil {
		t.Fatal(err)
	}
	f.restart()
	for range 3 {
		op := NewAppend(true)
		data := batchesOf(t, 1, 10, 8)
		ts := time.Now().UnixMilli()
		op.Entries = []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(0), Data: data, Timestamp: &ts}}
		op.Bytes = len(data)
		if _, code := f.ps.Enqueue(context.Background(), op); code != 0 {
			t.Fatalf("enqueue: %d", code)
		}
		<-op.Done()
		if op.ErrCode != 0 {
			t.Fatalf("produce: %d %s", op.ErrCode, op.ErrMsg)
		}
	}
	return f
}

// restart is a fresh gateway over the same DIS and share state.
func (f *shareFixture) restart() {
	tn := testTenant(f.t, testSettings{}, f.dis)
	tn.d.Shares = f.shares
	f.ps = tn.Partition(testKey(shareTopic, 0))
}

var startEarliest = func(context.Context) (int64, error) { return 0, nil }

// acquire reads from where the share-partition says and acquires for
// member.
func (f *shareFixture) acquire(member string, maxRecords int, lock time.Duration) []sharestate.AcquiredRecords {
	f.t.Helper()
	ctx := context.Background()
	off, ok, _, code := f.ps.ShareFetchOffset(ctx, "g", startEarliest)
	if code != 0 || !ok {
		f.t.Fatalf("fetch offset: %d %v code %d", off, ok, code)
	}
	part := &FetchPart{Partition: f.ps, Kafka: true, Offset: off, Limit: 1 << 20, Earliest: 0, Next: 3, HighWatermark: -1, LogStartOffset: -1, LastStableOffset: -1}
	f.ps.t.Fetch(ctx, []*FetchPart{part}, time.Now().Add(5*time.Second), 1, 1<<20, nil)
	var ranges []sharestate.Range
	for i := range part.Batches {
		ranges = append(ranges, sharestate.Range{First: part.Batches[i].base, Last: part.Batches[i].last})
	}
	got, code := f.ps.ShareAcquire("g", sharestate.AcquireRequest{Member: member, From: off, Batches: ranges, MaxRecords: maxRecords, Lock: lock})
	if code != 0 {
		f.t.Fatalf("acquire: code %d", code)
	}
	return got
}

func (f *shareFixture) ack(member string, first, last int64, typ sharestate.AckType) ([]int16, int16) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return f.ps.ShareAcknowledge(ctx, "g", sharestate.AckRequest{Member: member, Ranges: []sharestate.AckRange{{First: first, Last: last, Types: []sharestate.AckType{typ}}}})
}

func TestShareAckAnsweredOnceDurable(t *testing.T) {
	f := newShareFixture(t)
	got := f.acquire("m1", 10, 0)
	if len(got) != 1 || got[0].First != 0 || got[0].Last != 9 || got[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v, want offsets 0-9 once", got)
	}
	hold := make(chan struct{})
	f.shares.mu.Lock()
	f.shares.hold = hold
	f.shares.mu.Unlock()
	answered := make(chan []int16, 1)
	go func() {
		codes, _ := f.ack("m1", 0, 9, sharestate.Accept)
		answered <- codes
	}()
	select {
	case codes := <-answered:
		t.Fatalf("acknowledgement answered %v before its state was durable", codes)
	case <-time.After(200 * time.Millisecond):
	}
	f.shares.mu.Lock()
	f.shares.hold = nil
	f.shares.mu.Unlock()
	close(hold)
	if codes := <-answered; len(codes) != 1 || codes[0] != 0 {
		t.Fatalf("acknowledgement answered %v, want [0]", codes)
	}
	// A new gateway loads the durable state: 0-9 done, the rest new.
	f.restart()
	start, found, code := f.ps.ShareStartOffset(context.Background(), "g")
	if code != 0 || !found || start != 10 {
		t.Fatalf("start offset after restart: %d %v %d, want 10", start, found, code)
	}
	if got := f.acquire("m2", 100, 0); len(got) != 1 || got[0].First != 10 || got[0].Last != 29 {
		t.Fatalf("after restart acquired %+v, want 10-29", got)
	}
}

func TestShareWriteFailureRedelivers(t *testing.T) {
	f := newShareFixture(t)
	f.acquire("m1", 10, 0)
	f.shares.mu.Lock()
	f.shares.fail = errors.New("DIS down")
	f.shares.mu.Unlock()
	codes, code := f.ack("m1", 0, 9, sharestate.Accept)
	if code == 0 && (len(codes) != 1 || codes[0] == 0) {
		t.Fatalf("acknowledgement whose write failed answered %v / %d", codes, code)
	}
	f.shares.mu.Lock()
	f.shares.fail = nil
	f.shares.mu.Unlock()
	// The room was dropped; reloaded, it hands 0-9 out again, delivered
	// twice if the acquisition had landed, once if not.
	got := f.acquire("m2", 10, 0)
	if len(got) != 1 || got[0].First != 0 || got[0].Last != 9 {
		t.Fatalf("after a failed write acquired %+v, want 0-9 again", got)
	}
}

func TestShareFencedHolderStops(t *testing.T) {
	f := newShareFixture(t)
	f.acquire("m1", 10, 0)
	old := f.ps
	f.restart() // another gateway takes the share-partition
	f.acquire("m2", 5, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	codes, code := old.ShareAcknowledge(ctx, "g", sharestate.AckRequest{Member: "m1", Ranges: []sharestate.AckRange{{First: 0, Last: 9, Types: []sharestate.AckType{sharestate.Accept}}}})
	// Refused either way: NOT_LEADER_OR_FOLLOWER when its write is
	// fenced, INVALID_RECORD_STATE when an earlier write was and the
	// room is gone.
	if code == 0 && (len(codes) != 1 || codes[0] == 0) {
		t.Fatalf("the fenced holder's acknowledgement got %v / %d, want it refused", codes, code)
	}
	if start, _, _ := f.ps.ShareStartOffset(context.Background(), "g"); start != 0 {
		t.Fatalf("a fenced holder's write moved the start offset to %d", start)
	}
}

func TestShareLockExpiryWakesAndRedelivers(t *testing.T) {
	f := newShareFixture(t)
	f.acquire("m1", 30, time.Second)
	_, ok, avail, _ := f.ps.ShareFetchOffset(context.Background(), "g", startEarliest)
	if !ok {
		t.Fatal("nothing to read with room left under the in-flight cap")
	}
	select {
	case <-avail:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up when the locks expired")
	}
	var got []sharestate.AcquiredRecords
	for n := int64(0); n < 30; {
		more := f.acquire("m2", 30, 0)
		if len(more) == 0 {
			t.Fatalf("after the lock expired acquired %+v, then nothing", got)
		}
		for _, a := range more {
			n += a.Last - a.First + 1
		}
		got = append(got, more...)
	}
	for _, a := range got {
		if a.DeliveryCount != 2 {
			t.Fatalf("after the lock expired acquired %+v, want 0-29 delivered a second time", got)
		}
	}
}

func TestShareReleaseMemberAndReset(t *testing.T) {
	f := newShareFixture(t)
	f.acquire("m1", 30, 0)
	if code := f.ps.ShareResetStart(context.Background(), "g", 20); code != kerr.InvalidRequest.Code {
		t.Fatalf("reset while records are acquired: %d, want INVALID_REQUEST", code)
	}
	f.ps.t.ReleaseShareMember("g", "m1")
	if code := f.ps.ShareResetStart(context.Background(), "g", 20); code != 0 {
		t.Fatalf("reset after the member left: %d", code)
	}
	f.restart()
	if got := f.acquire("m2", 30, 0); len(got) != 1 || got[0].First != 20 || got[0].Last != 29 {
		t.Fatalf("after a reset to 20 acquired %+v", got)
	}
	if code := f.ps.ShareDelete(context.Background(), "g"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if _, found, _ := f.ps.ShareStartOffset(context.Background(), "g"); found {
		t.Fatal("state found after delete")
	}
}

// The share budget bounds the share-partitions held, whatever group names
// clients make up: one more is refused with POLICY_VIOLATION until one
// goes.
func TestShareBudget(t *testing.T) {
	f := newShareFixture(t)
	f.ps.d.ShareBudget = NewShareBudget(1)
	ctx := context.Background()
	if _, _, _, code := f.ps.ShareFetchOffset(ctx, "g", startEarliest); code != 0 {
		t.Fatalf("the first share-partition: code %d", code)
	}
	if _, _, _, code := f.ps.ShareFetchOffset(ctx, "g2", startEarliest); code != kerr.PolicyViolation.Code {
		t.Fatalf("a second share-partition over a budget of one: code %d, want POLICY_VIOLATION", code)
	}
	if code := f.ps.ShareDelete(ctx, "g"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if _, _, _, code := f.ps.ShareFetchOffset(ctx, "g2", startEarliest); code != 0 {
		t.Fatalf("a share-partition after one went: code %d", code)
	}
	if held := f.ps.d.ShareBudget.Held(); held != 1 {
		t.Fatalf("%d share-partitions counted, want 1", held)
	}
	// Once its first state record is written, the idle partition goes,
	// and its share-partition with it.
	for deadline := time.Now().Add(5 * time.Second); !f.ps.t.EvictIdle(time.Now().Add(time.Hour)); {
		if time.Now().After(deadline) {
			t.Fatal("the partition was never evicted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if held := f.ps.d.ShareBudget.Held(); held != 0 {
		t.Fatalf("%d share-partitions counted after the partition was evicted, want 0", held)
	}
}
