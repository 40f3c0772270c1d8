package plog

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/disgw/disgw/gateway/plog/sharestate"
)

// shareModel is what a random history of a share group on the fixture's
// 30 records has told its members: who holds what since which era (a
// restart or a failed write voids every hold of an earlier era), what was
// acknowledged done with an answer of 0, and how often each record was
// delivered.
type shareModel struct {
	era      int
	holder   map[int64]string
	heldEra  map[int64]int
	done     map[int64]bool
	released map[int64]int // deliveries ended by an answered release
	maxCount map[int64]int16
	// acquired and acked count the records handed out and the
	// acknowledgements answered 0, to check the history did something.
	acquired, acked int
}

// Random histories of acquisitions, acknowledgements, departures, failed
// state writes and gateway restarts over one share-partition: no record is
// held by two members at once within an era, no record acknowledged done
// (answered 0) is ever delivered again, and once the faults stop, every
// record not done nor archived is delivered again.
func TestShareRandomHistories(t *testing.T) {
	histories := 100
	if testing.Short() {
		histories = 10
	}
	for seed := range uint64(histories) {
		f := newShareFixture(t)
		rng := rand.New(rand.NewPCG(seed, 7))
		m := &shareModel{holder: map[int64]string{}, heldEra: map[int64]int{}, done: map[int64]bool{},
			released: map[int64]int{}, maxCount: map[int64]int16{}}
		members := []string{"m0", "m1", "m2"}
		for step := range 120 {
			member := members[rng.IntN(len(members))]
			switch op := rng.IntN(20); {
			case op < 8:
				f.randomAcquire(t, m, seed, step, member, 1+rng.IntN(15))
			case op < 15:
				f.randomAck(t, m, rng, member)
			case op < 16:
				f.ps.t.ReleaseShareMember("g", member)
				for off, h := range m.holder {
					if h == member {
						delete(m.holder, off)
					}
				}
			case op < 18:
				// A failing state write: whatever was held may be
				// lost with the room.
				f.shares.mu.Lock()
				f.shares.fail = errors.New("injected")
				f.shares.mu.Unlock()
				f.randomAck(t, m, rng, member)
				f.shares.mu.Lock()
				f.shares.fail = nil
				f.shares.mu.Unlock()
				m.newEra()
			default:
				f.restart()
				m.newEra()
			}
		}
		// The faults stop: a fresh gateway hands out everything not done.
		f.restart()
		m.newEra()
		for range 40 {
			if off, ok, _, _ := f.ps.ShareFetchOffset(context.Background(), "g", startEarliest); !ok || off >= 30 {
				break // nothing available
			}
			got := f.acquire("drain", 30, 0)
			m.took(t, seed, -1, "drain", got)
			for _, a := range got {
				codes, code := f.ack("drain", a.First, a.Last, sharestate.Accept)
				if code == 0 && len(codes) == 1 && codes[0] == 0 {
					for off := a.First; off <= a.Last; off++ {
						m.done[off] = true
					}
				}
			}
		}
		if m.acquired == 0 || m.acked == 0 || m.era < 3 {
			t.Errorf("seed %d: a history of %d acquisitions, %d answered acknowledgements and %d eras tests little", seed, m.acquired, m.acked, m.era)
		}
		for off := range int64(30) {
			// A record released at its fifth delivery is archived.
			if !m.done[off] && m.maxCount[off] < 5 {
				t.Errorf("seed %d: offset %d (delivered at most %d times, %d released) never delivered again", seed, off, m.maxCount[off], m.released[off])
			}
		}
	}
}

// newEra voids every hold: the room holding them was dropped.
func (m *shareModel) newEra() {
	m.era++
	clear(m.holder)
}

// took checks and records an acquisition.
func (m *shareModel) took(t *testing.T, seed uint64, step int, member string, got []sharestate.AcquiredRecords) {
	t.Helper()
	for _, a := range got {
		for off := a.First; off <= a.Last; off++ {
			if m.done[off] {
				t.Fatalf("seed %d step %d: offset %d delivered to %s (count %d) after it was acknowledged done", seed, step, off, member, a.DeliveryCount)
			}
			if h, ok := m.holder[off]; ok && m.heldEra[off] == m.era {
				t.Fatalf("seed %d step %d: offset %d delivered to %s while %s holds it", seed, step, off, member, h)
			}
			m.holder[off], m.heldEra[off] = member, m.era
			m.acquired++
			m.maxCount[off] = max(m.maxCount[off], a.DeliveryCount)
		}
	}
}

// randomAcquire acquires up to n records for member.
func (f *shareFixture) randomAcquire(t *testing.T, m *shareModel, seed uint64, step int, member string, n int) {
	ctx := context.Background()
	off, ok, _, code := f.ps.ShareFetchOffset(ctx, "g", startEarliest)
	if code != 0 || !ok || off >= 30 {
		return
	}
	part := &FetchPart{Partition: f.ps, Kafka: true, Offset: off, Limit: 1 << 20, Earliest: 0, Next: 3, HighWatermark: -1, LogStartOffset: -1, LastStableOffset: -1}
	f.ps.t.Fetch(ctx, []*FetchPart{part}, time.Now().Add(time.Second), 1, 1<<20, nil)
	var ranges []sharestate.Range
	for i := range part.Batches {
		ranges = append(ranges, sharestate.Range{First: part.Batches[i].base, Last: part.Batches[i].last})
	}
	got, code := f.ps.ShareAcquire("g", sharestate.AcquireRequest{Member: member, From: off, Batches: ranges, MaxRecords: n})
	if code == 0 {
		m.took(t, seed, step, member, got)
	}
}

// randomAck acknowledges some of what member holds, with one type.
func (f *shareFixture) randomAck(t *testing.T, m *shareModel, rng *rand.Rand, member string) {
	var held []int64
	for off, h := range m.holder {
		if h == member {
			held = append(held, off)
		}
	}
	if len(held) == 0 {
		return
	}
	off := held[rng.IntN(len(held))]
	typ := []sharestate.AckType{sharestate.Accept, sharestate.Release, sharestate.Reject}[rng.IntN(3)]
	codes, code := f.ack(member, off, off, typ)
	if code != 0 || len(codes) != 1 || codes[0] != 0 {
		return // not applied, or not known to be durable
	}
	delete(m.holder, off)
	m.acked++
	switch typ {
	case sharestate.Release:
		m.released[off]++
	default:
		m.done[off] = true
	}
	t.Helper()
}
