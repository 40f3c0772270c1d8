package txns

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/txncoord"
)

// memLog is a StateLog in memory, shared by the drivers of a test as DIS
// is shared by gateways; fail makes the next appends fail.
type memLog struct {
	mu    sync.Mutex
	parts map[int32][]Entry
	fail  int
}

func (l *memLog) Exists(context.Context, string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parts) > 0, nil
}

func (l *memLog) Read(_ context.Context, _ string, p int32) ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry(nil), l.parts[p]...), nil
}

func (l *memLog) Append(_ context.Context, _ string, p int32, key, value []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail > 0 {
		l.fail--
		return errors.New("injected append failure")
	}
	if l.parts == nil {
		l.parts = make(map[int32][]Entry)
	}
	l.parts[p] = append(l.parts[p], Entry{Key: key, Value: value})
	return nil
}

// markerLog records the markers a driver wrote.
type markerLog struct {
	mu      sync.Mutex
	markers []plog.Marker
}

func (m *markerLog) write(_ context.Context, _ string, _ txncoord.TopicPartition, mk plog.Marker) int16 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.markers = append(m.markers, mk)
	return 0
}

func (m *markerLog) all() []plog.Marker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]plog.Marker(nil), m.markers...)
}

func newTestDriver(t *testing.T, log *memLog, markers *markerLog) *Driver[string] {
	t.Helper()
	return newOwningDriver(t, log, markers, func(int32) bool { return true })
}

// newOwningDriver is newTestDriver coordinating the state partitions owns
// says it owns.
func newOwningDriver(t *testing.T, log *memLog, markers *markerLog, owns func(int32) bool) *Driver[string] {
	t.Helper()
	var next int64 = 1000
	var mu sync.Mutex
	d := New(Deps[string]{
		Coord: txncoord.Config{MaxTimeout: time.Minute, NewProducerID: func() int64 {
			mu.Lock()
			defer mu.Unlock()
			next++
			return next
		}},
		Partitions:     1,
		Owns:           owns,
		Log:            zerolog.Nop(),
		Tenant:         func(tn string) string { return tn },
		Go:             func(_ string, fn func()) { go fn() },
		Ctx:            context.Background(),
		RequestTimeout: 5 * time.Second,
		State:          log,
		WriteMarker:    markers.write,
		CommitOffsets:  func(context.Context, string, txncoord.CommitOffsets) error { return nil },
		Ended:          func(bool) {},
		Marker:         func(int16) {},
	})
	t.Cleanup(d.Close)
	return d
}

func initProducer(t *testing.T, d *Driver[string], id string) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, kmsg.StringPtr(id), 10000
	resp, code := d.Step(context.Background(), "tenant", id, req)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	return resp.(*kmsg.InitProducerIDResponse)
}

// A second driver over the same log (a restarted gateway) loads what the
// first persisted, takes a higher coordinator epoch, and fences the first
// one's producer by bumping the epoch again.
func TestDriverStateSurvivesReload(t *testing.T) {
	log, markers := &memLog{}, &markerLog{}
	first := initProducer(t, newTestDriver(t, log, markers), "a")
	if first.ErrorCode != 0 || first.ProducerEpoch != 0 {
		t.Fatalf("first InitProducerId: %+v", first)
	}
	again := initProducer(t, newTestDriver(t, log, markers), "a")
	if again.ErrorCode != 0 || again.ProducerID != first.ProducerID || again.ProducerEpoch != 1 {
		t.Fatalf("after a reload: producer %d epoch %d (%v), want %d epoch 1", again.ProducerID, again.ProducerEpoch, kerr.ErrorForCode(again.ErrorCode), first.ProducerID)
	}
	var epochs []int32
	for _, e := range log.parts[0] {
		if len(e.Key) == 0 {
			epochs = append(epochs, int32(binary.BigEndian.Uint32(e.Value)))
		}
	}
	if len(epochs) != 2 || epochs[0] != 1 || epochs[1] != 2 {
		t.Fatalf("load records with coordinator epochs %v, want [1 2]", epochs)
	}
}

// Loading skips a record a fenced coordinator wrote after a newer one's
// load record, and a tombstone forgets its id.
func TestDriverLoadSkipsFencedRecordsAndTombstones(t *testing.T) {
	log := &memLog{}
	rec := func(id string, pid int64, epoch int32) Entry {
		// Updated now: an id last updated at 0 is long past its
		// expiration, and the driver's first tick would expire it.
		r := txncoord.Record{TxnID: id, ProducerID: pid, LastProducerID: -1, LastEpoch: -1, TimeoutMillis: 10000,
			State: txncoord.Empty, StartMillis: -1, UpdateMillis: time.Now().UnixMilli(), CoordinatorEpoch: epoch}
		return Entry{Key: []byte(id), Value: r.Encode()}
	}
	load := func(epoch uint32) Entry {
		return Entry{Key: []byte{}, Value: binary.BigEndian.AppendUint32(nil, epoch)}
	}
	log.parts = map[int32][]Entry{0: {
		load(1), rec("kept", 7, 1), rec("gone", 8, 1),
		load(2), rec("kept", 9, 1), {Key: []byte("gone")},
	}}
	d := newTestDriver(t, log, &markerLog{})
	if code := d.Loaded(context.Background(), "tenant", "kept"); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	d.With("tenant", func(c *txncoord.Coordinator) {
		if got, ok := c.Describe("kept"); !ok || got.ProducerID != 7 {
			t.Errorf("kept: %+v %v, want producer 7 (the fenced coordinator's record skipped)", got, ok)
		}
		if got, ok := c.Describe("gone"); ok {
			t.Errorf("gone: %+v, want forgotten by its tombstone", got)
		}
	})
}

// A committed transaction's markers reach its partitions with the
// partition's coordinator epoch, and the id ends CompleteCommit; a state
// write that fails is answered with a retriable error and changes nothing.
func TestDriverCommitWritesMarkers(t *testing.T) {
	log, markers := &memLog{}, &markerLog{}
	d := newTestDriver(t, log, markers)
	p := initProducer(t, d, "c")
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, "c", p.ProducerID, p.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	log.mu.Lock()
	log.fail = 1
	log.mu.Unlock()
	resp, _ := d.Step(context.Background(), "tenant", "c", add)
	if code := resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; !kerr.IsRetriable(kerr.ErrorForCode(code)) {
		t.Fatalf("AddPartitionsToTxn with its state write failing: %v, want a retriable error", kerr.ErrorForCode(code))
	}
	resp, _ = d.Step(context.Background(), "tenant", "c", add)
	if code := resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, "c", p.ProducerID, p.ProducerEpoch, true
	resp, _ = d.Step(context.Background(), "tenant", "c", end)
	if code := resp.(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(code))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var state txncoord.State
		d.With("tenant", func(c *txncoord.Coordinator) { got, _ := c.Describe("c"); state = got.State })
		if state == txncoord.CompleteCommit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %v 5 s after EndTxn, want CompleteCommit", state)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ms := markers.all()
	if len(ms) != 2 {
		t.Fatalf("%d markers, want one per partition: %+v", len(ms), ms)
	}
	for _, m := range ms {
		if !m.Commit || m.ProducerID != p.ProducerID || m.Epoch != p.ProducerEpoch || m.CoordinatorEpoch != 1 {
			t.Errorf("marker %+v, want a commit of producer %d epoch %d at coordinator epoch 1", m, p.ProducerID, p.ProducerEpoch)
		}
	}
}

// A state partition that moved to another gateway is let go of: its ids
// are NOT_COORDINATOR here, nothing more is written to it from here, and
// the new coordinator loads it with a higher coordinator epoch and finds
// what was persisted.
func TestDriverUnloadsMovedPartition(t *testing.T) {
	log, markers := &memLog{}, &markerLog{}
	var owned atomic.Bool
	owned.Store(true)
	d := newOwningDriver(t, log, markers, func(int32) bool { return owned.Load() })
	first := initProducer(t, d, "m")
	owned.Store(false)
	d.UnloadMoved()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, kmsg.StringPtr("m"), 10000
	if _, code := d.Step(context.Background(), "tenant", "m", req); code != kerr.NotCoordinator.Code {
		t.Fatalf("InitProducerId after the partition moved: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if code := d.LoadAll(context.Background(), "tenant"); code != 0 {
		t.Fatalf("LoadAll with nothing owned: %v", kerr.ErrorForCode(code))
	}
	log.mu.Lock()
	written := len(log.parts[0])
	log.mu.Unlock()
	d.With("tenant", func(c *txncoord.Coordinator) {
		if c.Loaded(0) {
			t.Error("the moved partition is still loaded")
		}
	})
	next := initProducer(t, newTestDriver(t, log, markers), "m")
	if next.ProducerID != first.ProducerID || next.ProducerEpoch != first.ProducerEpoch+1 {
		t.Fatalf("the new coordinator: producer %d epoch %d, want %d epoch %d", next.ProducerID, next.ProducerEpoch, first.ProducerID, first.ProducerEpoch+1)
	}
	log.mu.Lock()
	got := len(log.parts[0])
	log.mu.Unlock()
	if got <= written {
		t.Fatalf("the new coordinator wrote nothing (%d records)", got)
	}
}
