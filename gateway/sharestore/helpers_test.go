package sharestore

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/disgw/disgw/gateway/plog/sharestate"
)

// memLog is a Log in memory, shared by the owners of a test as DIS is by
// gateways; fail makes the next appends fail.
type memLog struct {
	mu    sync.Mutex
	parts map[int32][]Entry
	fail  int
}

func (l *memLog) Read(_ context.Context, p int32) ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry(nil), l.parts[p]...), nil
}

func (l *memLog) Append(_ context.Context, p int32, key, value []byte) error {
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

// compact does what compaction may: keeps each key's last record in
// place and drops tombstones.
func (l *memLog) compact(p int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := make(map[string]int)
	for i, e := range l.parts[p] {
		last[string(e.Key)] = i
	}
	var out []Entry
	for i, e := range l.parts[p] {
		if last[string(e.Key)] == i && (e.Value != nil || len(e.Key) == 0) {
			out = append(out, e)
		}
	}
	l.parts[p] = out
}

// t0 is the injected clock's start.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testConfig() sharestate.Config { return sharestate.Config{MaxInFlight: 100} }

// take takes log partition 0 of log, failing the test on an error or a
// record skipped as corrupt.
func take(t *testing.T, log *memLog) *LogPartition {
	t.Helper()
	lp, err := Take(context.Background(), log, 0, testConfig(), func(err error) { t.Errorf("skipped: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	return lp
}

// flush persists every record p asks for through lp, as a driver whose
// writes succeed, and returns the answers released.
func flush(t *testing.T, lp *LogPartition, k Key, p *sharestate.Partition) []sharestate.Answer {
	t.Helper()
	var out []sharestate.Answer
	for {
		rd := p.Ready()
		out = append(out, rd.Answers...)
		if rd.Record == nil {
			return out
		}
		if err := lp.Persist(context.Background(), k, *rd.Record); err != nil {
			t.Fatal(err)
		}
		p.Persisted(rd.Record.Seq)
	}
}

// load loads k from lp, failing the test when it is not there.
func load(t *testing.T, lp *LogPartition, k Key) *sharestate.Partition {
	t.Helper()
	p, ok, err := lp.Load(k)
	if err != nil || !ok {
		t.Fatalf("loading %+v: %v, found %t", k, err, ok)
	}
	return p
}

// snapshotOf is what is persisted of p, as the snapshot it asks to write
// next with Seq cleared; p, left with that record unwritten, is for
// throwing away.
func snapshotOf(t *testing.T, p *sharestate.Partition) sharestate.Record {
	t.Helper()
	p.WantSnapshot()
	rd := p.Ready()
	if rd.Record == nil || !rd.Record.Snapshot {
		t.Fatalf("no snapshot: %+v", rd.Record)
	}
	r := *rd.Record
	r.Seq = 0
	return r
}

// durable is snapshotOf p, written through lp, so p goes on.
func durable(t *testing.T, lp *LogPartition, k Key, p *sharestate.Partition) sharestate.Record {
	t.Helper()
	flush(t, lp, k, p)
	p.WantSnapshot()
	rd := p.Ready()
	if err := lp.Persist(context.Background(), k, *rd.Record); err != nil {
		t.Fatal(err)
	}
	p.Persisted(rd.Record.Seq)
	r := *rd.Record
	r.Seq = 0
	return r
}

// loaded is what lp loads of k.
func loaded(t *testing.T, lp *LogPartition, k Key) sharestate.Record {
	t.Helper()
	return snapshotOf(t, load(t, lp, k))
}

// same fails unless got and want are the same state.
func same(t *testing.T, got, want sharestate.Record) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %+v, want %+v", got, want)
	}
}

// acquire hands member the records of a read from p's fetch offset over
// n offsets of a log without gaps.
func acquire(t *testing.T, p *sharestate.Partition, now time.Time, member string, n int64) []sharestate.AcquiredRecords {
	t.Helper()
	from, ok := p.FetchOffset()
	if !ok {
		return nil
	}
	got, err := p.Acquire(now, sharestate.AcquireRequest{Member: member, From: from, Batches: []sharestate.Range{{First: from, Last: from + n - 1}}})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// ackOne is a request acknowledging first to last with one type.
func ackOne(id uint64, member string, first, last int64, typ sharestate.AckType) sharestate.AckRequest {
	return sharestate.AckRequest{ID: id, Member: member, Ranges: []sharestate.AckRange{{First: first, Last: last, Types: []sharestate.AckType{typ}}}}
}

// newShare starts k at offset 0 on lp with its first snapshot written.
func newShare(t *testing.T, lp *LogPartition, k Key) *sharestate.Partition {
	t.Helper()
	p, err := sharestate.New(testConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	flush(t, lp, k, p)
	return p
}
