package sharestore

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/disgw/disgw/gateway/plog/sharestate"
)

var k1 = Key{Group: "g", Topic: "t", Partition: 3}

// TestKeys: keys read back as written, the length prefixes keep
// share-partitions apart whatever their names hold, and PartitionOf is
// stable and in range.
func TestKeys(t *testing.T) {
	ks := []Key{{"a", "bc", "s", 0}, {"ab", "c", "s", 0}, {"", "\x00\x01", "", -1}, {"g\x00", "t", "s", 1 << 30}, {"é✓", "", "s", 7}, {"a", "b", "cs", 0}, {"a", "bc", "", 0}}
	seen := make(map[string]Key)
	for _, k := range ks {
		for _, raw := range [][]byte{snapshotKey(k, 9), updateKey(k, 9, 1<<40)} {
			pk, err := parseKey(raw)
			if err != nil || pk.k != k || pk.epoch != 9 {
				t.Fatalf("%q: %+v, %v", raw, pk, err)
			}
			if o, dup := seen[string(raw)]; dup {
				t.Fatalf("%+v and %+v share key %q", o, k, raw)
			}
			seen[string(raw)] = k
		}
		if p := PartitionOf(k, 50); p < 0 || p >= 50 || p != PartitionOf(k, 50) {
			t.Fatalf("PartitionOf(%+v) = %d", k, p)
		}
	}
	for _, bad := range [][]byte{{5, 'a'}, {1, 'a', 0}, append(snapshotKey(k1, 1), 0), updateKey(k1, 1, 1)[:15]} {
		if pk, err := parseKey(bad); err == nil {
			t.Fatalf("parsed %q as %+v", bad, pk)
		}
	}
}

// TestRoundTrip: a snapshot and updates written through the store load
// back as the live state, by a later owner too.
func TestRoundTrip(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	p := newShare(t, lp, k1)
	acquire(t, p, t0, "a", 10)
	flush(t, lp, k1, p)
	p.Acknowledge(t0, ackOne(1, "a", 0, 3, sharestate.Accept))
	p.Acknowledge(t0, ackOne(2, "a", 5, 6, sharestate.Release))
	p.Acknowledge(t0, ackOne(3, "a", 7, 7, sharestate.Reject))
	if got := flush(t, lp, k1, p); len(got) != 3 {
		t.Fatalf("answers %+v", got)
	}
	acquire(t, p, t0, "b", 4)
	want := durable(t, lp, k1, p)
	same(t, loaded(t, lp, k1), want)
	same(t, loaded(t, take(t, log), k1), want)
	if _, ok, err := lp.Load(Key{Group: "g", Topic: "t"}); ok || err != nil {
		t.Fatalf("loaded an unknown share-partition: %t, %v", ok, err)
	}
}

// TestTombstones: after a snapshot the keys before it are tombstoned, so
// compaction leaves one snapshot and the updates after it, and the state
// still loads.
func TestTombstones(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	cfg := testConfig()
	cfg.UpdatesPerSnapshot = 4
	lp.cfg = cfg
	p, err := sharestate.New(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	flush(t, lp, k1, p)
	for i := range 6 {
		acquire(t, p, t0, "a", 1)
		p.Acknowledge(t0, ackOne(uint64(i), "a", int64(i), int64(i), sharestate.Accept))
		flush(t, lp, k1, p)
	}
	log.compact(0)
	var snaps, updates []uint64
	for _, e := range log.parts[0] {
		if len(e.Key) == 0 {
			continue
		}
		pk, err := parseKey(e.Key)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := sharestate.Decode(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		if pk.snapshot {
			snaps = append(snaps, rec.Seq)
		} else {
			updates = append(updates, rec.Seq)
		}
	}
	// Records: 1 snapshot, then per round an acquire and an ack update,
	// every fourth a snapshot.
	if len(snaps) != 1 || len(updates) >= cfg.UpdatesPerSnapshot {
		t.Fatalf("after compaction: snapshots %v, updates %v", snaps, updates)
	}
	for i, u := range updates {
		if u != snaps[0]+uint64(i)+1 {
			t.Fatalf("after compaction: snapshot %v, updates %v", snaps, updates)
		}
	}
	want := durable(t, lp, k1, p)
	log.compact(0)
	same(t, loaded(t, take(t, log), k1), want)
}

// TestGapStopsReplay: an update missing from the log ends the replay
// there, and updates from before the snapshot are skipped.
func TestGapStopsReplay(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	p := newShare(t, lp, k1)
	var recs []sharestate.Record
	for i := range int64(3) {
		acquire(t, p, t0, "a", 1)
		rd := p.Ready()
		recs = append(recs, *rd.Record)
		if i == 1 {
			p.Persisted(rd.Record.Seq) // but never written
			continue
		}
		if err := lp.Persist(context.Background(), k1, *rd.Record); err != nil {
			t.Fatal(err)
		}
		p.Persisted(rd.Record.Seq)
	}
	want, err := sharestate.Load(testConfig(), sharestate.Record{Seq: 1, Snapshot: true}, recs[0])
	if err != nil {
		t.Fatal(err)
	}
	same(t, loaded(t, take(t, log), k1), snapshotOf(t, want))
}

// TestFencedLateWrites: records a former owner writes after another took
// the log partition over are skipped, its tombstones included, before
// and after compaction, when the load record fencing them is gone and
// their numbers run ahead of the new owner's.
func TestFencedLateWrites(t *testing.T) {
	log := &memLog{}
	a := take(t, log)
	pa := newShare(t, a, k1)
	acquire(t, pa, t0, "a", 5)
	flush(t, a, k1, pa)
	b := take(t, log)
	if b.Epoch() != a.Epoch()+1 {
		t.Fatalf("epochs %d then %d", a.Epoch(), b.Epoch())
	}
	pb := load(t, b, k1)
	flush(t, b, k1, pb)
	acquire(t, pb, t0, "b", 3)
	want := durable(t, b, k1, pb)
	// The former owner goes on: an update, then a snapshot and its
	// tombstones, all fenced.
	pa.Acknowledge(t0, ackOne(1, "a", 0, 4, sharestate.Accept))
	flush(t, a, k1, pa)
	for range 5 {
		pa.WantSnapshot()
		acquire(t, pa, t0, "a", 5)
		flush(t, a, k1, pa)
	}
	same(t, loaded(t, take(t, log), k1), want)
	log.compact(0)
	same(t, loaded(t, take(t, log), k1), want)
}

// TestManySharePartitions: share-partitions with names alike but for
// their lengths keep their own state in one log partition.
func TestManySharePartitions(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	ks := []Key{{"a", "bc", "s", 0}, {"ab", "c", "s", 0}, {"ab", "c", "s", 1}, {"", "\x00", "s", 0}, {"x", "y", "s", 9}}
	states := make([]sharestate.Record, len(ks))
	for i, k := range ks {
		p := newShare(t, lp, k)
		acquire(t, p, t0, "m", int64(i+2))
		p.Acknowledge(t0, ackOne(1, "m", 0, int64(i), sharestate.Accept))
		states[i] = durable(t, lp, k, p)
	}
	lq := take(t, log)
	want := []Key{ks[3], ks[0], ks[1], ks[2], ks[4]}
	if got := lq.Keys(); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %+v, want %+v", got, want)
	}
	for i, k := range ks {
		q := load(t, lq, k)
		if q.StartOffset() != int64(i+1) {
			t.Fatalf("%+v: SPSO %d, want %d", k, q.StartOffset(), i+1)
		}
		same(t, snapshotOf(t, q), states[i])
	}
}

// TestCorruptRecords: records that do not decode are reported and
// skipped; a corrupt value under a key removes what was under it, so the
// replay ends there, and nothing panics.
func TestCorruptRecords(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	p := newShare(t, lp, k1)
	acquire(t, p, t0, "a", 5)
	flush(t, lp, k1, p)
	want := loaded(t, lp, k1)
	acquire(t, p, t0, "a", 5)
	rd := p.Ready()
	ctx := context.Background()
	update := updateKey(k1, lp.Epoch(), rd.Record.Seq)
	snapWrong := sharestate.Record{Seq: rd.Record.Seq + 1, Snapshot: true}
	for _, e := range []Entry{
		{[]byte{1, 2, 3}, []byte("x")},
		{[]byte{}, []byte{1}},
		{update, []byte("not a record")},
		{updateKey(k1, lp.Epoch(), rd.Record.Seq+1), snapWrong.Encode()},
		{updateKey(Key{"other", "t", "s", 0}, lp.Epoch(), 1), rd.Record.Encode()},
	} {
		if err := log.Append(ctx, 0, e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	var skipped int
	lq, err := Take(ctx, log, 0, testConfig(), func(error) { skipped++ })
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 5 {
		t.Fatalf("%d records reported, want 5", skipped)
	}
	same(t, loaded(t, lq, k1), want)
}

// TestFailedWrite: a write that fails reports nothing persisted; the
// partition, abandoned and loaded again, goes on with a snapshot that
// supersedes the failed record even when it landed.
func TestFailedWrite(t *testing.T) {
	log := &memLog{}
	lp := take(t, log)
	p := newShare(t, lp, k1)
	acquire(t, p, t0, "a", 5)
	flush(t, lp, k1, p)
	p.Acknowledge(t0, ackOne(1, "a", 0, 4, sharestate.Accept))
	rd := p.Ready()
	log.fail = 1
	if err := lp.Persist(context.Background(), k1, *rd.Record); err == nil {
		t.Fatal("a failed write persisted")
	}
	if got := p.Abandon(6); len(got) != 1 || got[0].Codes[0] != 6 {
		t.Fatalf("abandoned %+v", got)
	}
	// It landed after all, late.
	if err := log.Append(context.Background(), 0, updateKey(k1, lp.Epoch(), rd.Record.Seq), rd.Record.Encode()); err != nil {
		t.Fatal(err)
	}
	q := load(t, lp, k1)
	if q.StartOffset() != 0 {
		t.Fatalf("SPSO %d after a failed write", q.StartOffset())
	}
	flush(t, lp, k1, q)
	acquire(t, q, t0.Add(time.Minute), "b", 2)
	want := durable(t, lp, k1, q)
	same(t, loaded(t, take(t, log), k1), want)
}

// TestTakenMeanwhile: a Take that finds a later load record than its own
// fails.
func TestTakenMeanwhile(t *testing.T) {
	log := &memLog{}
	racing := racingLog{memLog: log}
	if _, err := Take(context.Background(), &racing, 0, testConfig(), func(error) {}); err == nil {
		t.Fatal("took a log partition another owner took meanwhile")
	}
}

// racingLog lets another owner take the partition right after the first
// load record.
type racingLog struct {
	*memLog
	raced bool
}

func (r *racingLog) Append(ctx context.Context, p int32, key, value []byte) error {
	if err := r.memLog.Append(ctx, p, key, value); err != nil || r.raced {
		return err
	}
	r.raced = true
	_, err := Take(ctx, r.memLog, p, testConfig(), func(error) {})
	return err
}

// TestFencedBeforeSnapshot: a former owner's late update is skipped when
// the owner that took over has written nothing yet.
func TestFencedBeforeSnapshot(t *testing.T) {
	log := &memLog{}
	a := take(t, log)
	pa := newShare(t, a, k1)
	acquire(t, pa, t0, "a", 5)
	flush(t, a, k1, pa)
	want := loaded(t, a, k1)
	take(t, log)
	pa.Acknowledge(t0, ackOne(1, "a", 0, 4, sharestate.Accept))
	flush(t, a, k1, pa)
	same(t, loaded(t, take(t, log), k1), want)
}
