package sharestate

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

var (
	randomSeed = flag.Uint64("sharestate.seed", 0, "first seed of TestRandomHistories (0: from the clock)")
	randomRuns = flag.Int("sharestate.runs", 300, "histories TestRandomHistories runs")
)

// TestRandomHistories drives random histories: three members acquiring
// what a growing, gapped log holds, acknowledging with every type (and
// malformed ranges), leaving, time passing, the log start moving, resets,
// writes held back, and crashes, each a Load from the records written so
// far into a fresh partition (the record being written landing or not).
// After every step the partition must equal the per-offset model, and:
// a record is acquired by at most one member at a time; an accepted,
// rejected or gapped record whose answer came is never delivered again
// (unless a reset moved back over it); delivery counts never pass the
// limit and a record at it is never available; SPSO never goes back but
// for a reset and everything below it is done; the in-flight cap holds;
// an answered acknowledgement survives a Load; and Load of the records
// written, or of a snapshot taken at any point, rebuilds the state
// exactly. A failing history names its seed: rerun it with
// -sharestate.seed=N -sharestate.runs=1.
func TestRandomHistories(t *testing.T) {
	seed := *randomSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	runs := *randomRuns
	if testing.Short() {
		runs = min(runs, 30)
	}
	t.Logf("seeds %d to %d", seed, seed+uint64(runs)-1)
	for i := range uint64(runs) {
		t.Run(fmt.Sprint(seed+i), func(t *testing.T) { randomHistory(t, seed+i) })
	}
}

// world is one random history: the partition, its model, the log it
// reads and the records it wrote.
type world struct {
	t      *testing.T
	rng    *rand.Rand
	cfg    Config
	now    time.Time
	p      *Partition
	m      *model
	log    []Range // the log's batches, gaps between
	logEnd int64   // the next offset a batch may take
	// logStart is the log's first offset, always a batch's or logEnd.
	logStart int64
	store    [][]byte // records written, encoded
	writing  *Record  // the record being written, nil when none
	// views are the model's persisted state as each record was asked for.
	views     map[uint64]view
	requests  map[uint64]*sent // acknowledgements not answered yet
	nextID    uint64
	final     map[int64]bool // offsets answered Accept, Reject or Gap
	lastStart int64
}

// sent is an acknowledgement waiting for its answer.
type sent struct {
	req   AckRequest
	codes []int16 // the model's
	// stale: a reset moved SPSO back since; what it accepted may be
	// delivered again.
	stale bool
}

// view is a persisted state: SPSO, SPEO and the offsets between.
type view struct {
	start, end int64
	recs       []mrec
}

func randomHistory(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 932))
	cfg := Config{
		DeliveryCountLimit: 2 + rng.IntN(4),
		MaxInFlight:        100,
		UpdatesPerSnapshot: 1 + rng.IntN(8),
	}
	w := &world{t: t, rng: rng, cfg: cfg, now: t0, views: map[uint64]view{}, requests: map[uint64]*sent{}, final: map[int64]bool{}}
	var err error
	if w.p, err = New(cfg, 0); err != nil {
		t.Fatal(err)
	}
	w.m = newModel(cfg, 0)
	w.produce(6)
	for step := range 300 {
		w.now = w.now.Add(time.Duration(rng.IntN(8)) * time.Second)
		switch n := rng.IntN(100); {
		case n < 30:
			w.acquire()
		case n < 60:
			w.acknowledge()
		case n < 65:
			w.now = w.now.Add(time.Duration(rng.IntN(40)) * time.Second)
			w.p.Tick(w.now)
			w.m.advance(w.now)
		case n < 69:
			member := w.member()
			w.p.ReleaseMember(w.now, member)
			w.m.releaseMember(w.now, member)
		case n < 72:
			w.moveLogStart()
		case n < 74:
			w.reset()
		case n < 77:
			w.crash()
		case n < 80:
			w.checkSnapshotLoads()
		case n < 90:
			w.produce(1 + rng.IntN(3))
		default:
			w.persist()
		}
		w.ready(rng.IntN(10) < 7)
		w.check(step)
	}
}

// ready collects what the partition asks for: answers, and a record to
// write, of which there is never more than one at a time. With write the
// record is written at once, else it waits for a later step.
func (w *world) ready(write bool) {
	w.collect()
	if write && w.writing != nil {
		w.persist()
		w.collect()
	}
}

func (w *world) collect() {
	rd := w.p.Ready()
	for _, a := range rd.Answers {
		w.answered(a)
	}
	if rd.Record == nil {
		return
	}
	if w.writing != nil {
		w.t.Fatalf("record %d asked for while %d is being written", rd.Record.Seq, w.writing.Seq)
	}
	rec := *rd.Record
	w.writing = &rec
	w.views[rec.Seq] = view{w.m.start, w.m.end, persisted(w.m.expanded())}
}

// persist writes the record being written, encoded, and reports it.
func (w *world) persist() {
	if w.writing == nil {
		return
	}
	w.store = append(w.store, w.writing.Encode())
	w.p.Persisted(w.writing.Seq)
	w.writing = nil
}

// crash loses the partition in memory, and with it the answers not given;
// the record being written lands or not. A fresh partition is loaded from
// the records written and must hold exactly the state as of the last of
// them, every answered acknowledgement included.
func (w *world) crash() {
	if w.writing != nil && w.rng.IntN(2) == 0 {
		w.store = append(w.store, w.writing.Encode())
	}
	w.writing = nil
	w.requests = map[uint64]*sent{}
	var snap Record
	var updates []Record
	for _, b := range w.store {
		rec, err := Decode(b)
		if err != nil {
			w.t.Fatalf("decoding a record written: %v", err)
		}
		if rec.Snapshot {
			snap, updates = rec, nil
		} else {
			updates = append(updates, rec)
		}
	}
	if !snap.Snapshot {
		// Not even the first snapshot landed: the partition starts over,
		// which is right only if nothing was ever answered.
		if len(w.final) > 0 {
			w.t.Fatalf("acknowledgements answered before the first snapshot was durable")
		}
		w.p, _ = New(w.cfg, 0)
		w.m = newModel(w.cfg, 0)
	} else {
		p, err := Load(w.cfg, snap, updates...)
		if err != nil {
			w.t.Fatalf("loading %d records: %v", len(w.store), err)
		}
		v := w.views[p.lastSeq]
		m := restarted(w.cfg, v)
		if p.start != m.start || p.end != m.end || !reflect.DeepEqual(p.expanded(), m.expanded()) {
			w.t.Fatalf("loaded %s, written [%d, %d) %v", dump(p), v.start, v.end, v.recs)
		}
		for o := range w.final {
			if i := o - v.start; i >= 0 && i < int64(len(v.recs)) && !v.recs[i].done() {
				w.t.Fatalf("offset %d answered done is %+v after the load", o, v.recs[i])
			}
		}
		w.p, w.m = p, m
	}
	w.p.MoveLogStart(w.now, w.logStart)
	w.m.moveLogStart(w.now, w.logStart)
	w.lastStart = w.p.start
}

// checkSnapshotLoads loads a snapshot of the state as it is, through its
// encoding, into a fresh partition, which must hold the same.
func (w *world) checkSnapshotLoads() {
	snap := w.p.snapshot()
	rec, err := Decode(snap.Encode())
	if err != nil {
		w.t.Fatalf("decoding a snapshot: %v", err)
	}
	q, err := Load(w.cfg, rec)
	if err != nil {
		w.t.Fatalf("loading a snapshot: %v", err)
	}
	m := restarted(w.cfg, view{w.p.start, w.p.end, persisted(w.p.expanded())})
	if q.start != m.start || q.end != m.end || !reflect.DeepEqual(q.expanded(), m.expanded()) {
		w.t.Fatalf("snapshot of %s loads as %s", dump(w.p), dump(q))
	}
	if q.lastSeq != snap.Seq || q.Ready().Record == nil {
		w.t.Fatalf("loaded at %d, the snapshot %d, or with no snapshot to write", q.lastSeq, snap.Seq)
	}
}

// check compares partition and model after a step, and SPSO with the last.
func (w *world) check(step int) {
	w.t.Helper()
	checkStructure(w.t, w.p)
	if w.p.start != w.m.start || w.p.end != w.m.end || !reflect.DeepEqual(w.p.expanded(), w.m.expanded()) {
		w.t.Fatalf("step %d: partition %s, model [%d, %d) %v", step, dump(w.p), w.m.start, w.m.end, w.m.expanded())
	}
	if w.p.InFlight() != int(w.m.inFlight()) {
		w.t.Fatalf("step %d: %d in flight, the model %d", step, w.p.InFlight(), w.m.inFlight())
	}
	if w.p.start < w.lastStart {
		w.t.Fatalf("step %d: SPSO went back from %d to %d", step, w.lastStart, w.p.start)
	}
	w.lastStart = w.p.start
}
