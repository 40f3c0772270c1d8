package sharestore

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/disgw/disgw/gateway/plog/sharestate"
)

var (
	randomSeed = flag.Uint64("sharestore.seed", 0, "first seed of TestRandomCrashes (0: from the clock)")
	randomRuns = flag.Int("sharestore.runs", 200, "histories TestRandomCrashes runs")
)

// TestRandomCrashes drives a share-partition with random acquisitions,
// acknowledgements of every type and time passing, writes its records
// through the store, sometimes failing (the partition is then abandoned
// and loaded again), compacts the log, and crashes at random points: a new
// owner takes the log partition over and loads the state, while the former
// owner sometimes goes on writing late. After every load, every accepted
// or rejected offset whose answer came must still be done, and the log
// must load. A failing history names its seed: rerun it with
// -sharestore.seed=N -sharestore.runs=1.
func TestRandomCrashes(t *testing.T) {
	seed := *randomSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	runs := *randomRuns
	if testing.Short() {
		runs = min(runs, 20)
	}
	t.Logf("seeds %d to %d", seed, seed+uint64(runs)-1)
	for i := range uint64(runs) {
		t.Run(fmt.Sprint(seed+i), func(t *testing.T) { randomHistory(t, seed+i) })
	}
}

// world is one random history.
type world struct {
	t       *testing.T
	rng     *rand.Rand
	cfg     sharestate.Config
	log     *memLog
	lp      *LogPartition
	p       *sharestate.Partition
	pending *sharestate.Record // asked for by p, not yet written
	now     time.Time
	nextID  uint64
	acks    map[uint64]sharestate.AckRequest // acknowledgements not yet answered
	held    map[string][]sharestate.AcquiredRecords
	done    map[int64]bool // offsets accepted or rejected, answered 0
	started bool           // a first snapshot was written
	zombie  *zombie        // a former owner writing late, if any
}

var k0 = Key{Group: "g", Topic: "t", Partition: 0}

func randomHistory(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	cfg := testConfig()
	cfg.UpdatesPerSnapshot = 1 + rng.IntN(6)
	h := &world{t: t, rng: rng, cfg: cfg, log: &memLog{}, now: t0,
		acks: make(map[uint64]sharestate.AckRequest), done: make(map[int64]bool),
		held: make(map[string][]sharestate.AcquiredRecords)}
	h.lp = h.take()
	p, err := sharestate.New(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	h.ready()
	h.write()
	for range 150 {
		switch rng.IntN(13) {
		case 0, 1, 2:
			h.acquire(h.p)
		case 3, 4, 5:
			h.acknowledge(h.p)
		case 6:
			h.now = h.now.Add(time.Duration(rng.IntN(40)) * time.Second)
			h.p.Tick(h.now)
		case 7, 8:
			h.write()
		case 9:
			h.log.compact(0)
		case 10:
			h.haunt()
		default:
			h.crash()
		}
		h.ready()
	}
	h.crash()
}

// take takes log partition 0 over, failing on a record skipped as corrupt.
func (h *world) take() *LogPartition {
	lp, err := Take(context.Background(), h.log, 0, h.cfg, func(err error) { h.t.Fatalf("skipped: %v", err) })
	if err != nil {
		h.t.Fatal(err)
	}
	return lp
}

func (h *world) member() string { return []string{"a", "b", "c"}[h.rng.IntN(3)] }

// acquire reads a few records from the fetch offset for a random member.
func (h *world) acquire(p *sharestate.Partition) {
	m := h.member()
	h.held[m] = append(h.held[m], acquire(h.t, p, h.now, m, 1+h.rng.Int64N(8))...)
}

// acknowledge acknowledges part of what a random member acquired.
func (h *world) acknowledge(p *sharestate.Partition) {
	m := h.member()
	if len(h.held[m]) == 0 {
		return
	}
	a := h.held[m][h.rng.IntN(len(h.held[m]))]
	first := a.First + h.rng.Int64N(a.Last-a.First+1)
	last := first + h.rng.Int64N(a.Last-first+1)
	typ := []sharestate.AckType{sharestate.Accept, sharestate.Release, sharestate.Reject, sharestate.Renew}[h.rng.IntN(4)]
	h.nextID++
	req := ackOne(h.nextID, m, first, last, typ)
	h.acks[req.ID] = req
	p.Acknowledge(h.now, req)
}

// ready takes p's Ready: the record to write next, and the answers.
func (h *world) ready() {
	rd := h.p.Ready()
	h.answered(rd.Answers)
	if rd.Record != nil {
		h.pending = rd.Record
	}
}

// answered notes the offsets answers say are accepted or rejected.
func (h *world) answered(answers []sharestate.Answer) {
	for _, a := range answers {
		req, ok := h.acks[a.ID]
		if !ok {
			h.t.Fatalf("answer %d to no request", a.ID)
		}
		delete(h.acks, a.ID)
		r := req.Ranges[0]
		if a.Codes[0] != 0 || r.Types[0] != sharestate.Accept && r.Types[0] != sharestate.Reject {
			continue
		}
		for off := r.First; off <= r.Last; off++ {
			h.done[off] = true
		}
	}
}

// write writes the pending record, failing it sometimes: the partition is
// then abandoned and loaded again from what the owner wrote.
func (h *world) write() {
	if h.pending == nil {
		return
	}
	rec := *h.pending
	h.pending = nil
	if h.rng.IntN(5) == 0 {
		h.log.fail = 1
	}
	if err := h.lp.Persist(context.Background(), k0, rec); err != nil {
		h.answered(h.p.Abandon(6))
		h.acks = make(map[uint64]sharestate.AckRequest)
		h.load()
		return
	}
	h.p.Persisted(rec.Seq)
	h.started = true
	h.ready()
}

// crash lets a new owner take the log partition over and load the state;
// the former owner sometimes stays, a zombie that goes on writing late.
func (h *world) crash() {
	if h.pending != nil && h.rng.IntN(2) == 0 {
		h.zombie = &zombie{lp: h.lp, p: h.p, pending: h.pending}
	}
	h.lp = h.take()
	h.acks = make(map[uint64]sharestate.AckRequest)
	h.load()
}

// zombie is a former owner that does not know it was replaced.
type zombie struct {
	lp      *LogPartition
	p       *sharestate.Partition
	pending *sharestate.Record
}

// haunt makes the zombie take in new records and write a few records,
// snapshots among them. Its answers are not counted: it was fenced.
func (h *world) haunt() {
	z := h.zombie
	if z == nil {
		return
	}
	for range 1 + h.rng.IntN(10) {
		if z.pending == nil {
			acquire(h.t, z.p, h.now, "z", 1+h.rng.Int64N(8))
			if h.rng.IntN(2) == 0 {
				z.p.WantSnapshot()
			}
			z.pending = z.p.Ready().Record
		}
		if z.pending == nil || z.lp.Persist(context.Background(), k0, *z.pending) != nil {
			return
		}
		z.p.Persisted(z.pending.Seq)
		z.pending = z.p.Ready().Record
	}
}

// load loads the partition from the current owner, writes the snapshot it
// starts with, and checks it.
func (h *world) load() {
	h.p = h.loadFrom(h.lp)
	h.pending = nil
	h.held = make(map[string][]sharestate.AcquiredRecords)
	rd := h.p.Ready()
	if rd.Record == nil || !rd.Record.Snapshot {
		h.t.Fatalf("first record after a load: %+v", rd.Record)
	}
	h.check(*rd.Record)
	h.pending = rd.Record
	h.write()
}

// loadFrom loads the share-partition from lp, or starts it anew when its
// first snapshot was never written.
func (h *world) loadFrom(lp *LogPartition) *sharestate.Partition {
	p, ok, err := lp.Load(k0)
	if err != nil || !ok && h.started {
		h.t.Fatalf("load: %v, found %t", err, ok)
	}
	if !ok {
		if p, err = sharestate.New(h.cfg, 0); err != nil {
			h.t.Fatal(err)
		}
	}
	return p
}

// check fails unless every offset answered as accepted or rejected is done
// in snap.
func (h *world) check(snap sharestate.Record) {
	for off := range h.done {
		if off < snap.Start {
			continue
		}
		ok := false
		for _, s := range snap.States {
			if s.First <= off && off <= s.Last {
				ok = s.State == sharestate.Acknowledged || s.State == sharestate.Archived
			}
		}
		if !ok {
			h.t.Fatalf("offset %d answered done, loaded as %+v", off, snap)
		}
	}
}
