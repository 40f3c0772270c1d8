package plog

import (
	"context"
	"sync"
	"time"
)

// Key names one partition of one stream. The stream id is part of it so
// that a topic deleted and created again never meets the writers, producer
// state and cached records of its predecessor. Keys are per Tenant, so
// records are written with the client's own credentials and cached records
// never reach a client whose keys may not read them.
type Key struct {
	Topic string
	// Stream is the DIS stream's name, StreamID its id.
	Stream    string
	StreamID  string
	Partition int32
}

// Tenant is the partition log of one tenant: each partition's state, made
// on first use and dropped when idle (docs/operations.md, "Idle state").
type Tenant struct {
	d Deps

	// mu guards m and the entries' used; it is taken before every other
	// lock of the partition log (docs/design.md §11).
	mu sync.Mutex
	m  map[Key]*entry
}

// entry is one partition's state and when it was last looked up, which is
// what idle eviction goes by; used is guarded by the Tenant's mu.
type entry struct {
	ps   *Partition
	used time.Time
}

// NewTenant makes the partition log of a tenant.
func NewTenant(d Deps) *Tenant {
	if d.Owns == nil {
		d.Owns = func(string, int32) bool { return true } // a gateway alone
	}
	return &Tenant{d: d, m: make(map[Key]*entry)}
}

// Partition returns k's partition log, made on first use, and marks it
// used.
func (tn *Tenant) Partition(k Key) *Partition {
	now := time.Now()
	tn.mu.Lock()
	defer tn.mu.Unlock()
	e := tn.m[k]
	if e == nil {
		e = &entry{ps: newPartition(tn, k)}
		tn.m[k] = e
	}
	e.used = now
	return e.ps
}

// Peek returns k's partition log if there is one, without making it or
// marking it used, so a metrics scrape keeps nothing from going idle.
func (tn *Tenant) Peek(k Key) (*Partition, bool) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	e, ok := tn.m[k]
	if !ok {
		return nil, false
	}
	return e.ps, true
}

// All returns the partition logs the tenant holds, without marking them
// used.
func (tn *Tenant) All() []*Partition {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	out := make([]*Partition, 0, len(tn.m))
	for _, e := range tn.m {
		out = append(out, e.ps)
	}
	return out
}

// evict drops the partitions unused since before cutoff for which drop,
// called under the map's lock so that no lookup can hand the partition out
// meanwhile, agrees. It returns how many are left.
func (tn *Tenant) evict(cutoff time.Time, drop func(*Partition) bool) int {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	for k, e := range tn.m {
		if e.used.Before(cutoff) && drop(e.ps) {
			delete(tn.m, k)
		}
	}
	return len(tn.m)
}

// EvictIdle drops the partitions unused since before cutoff and reports
// whether the tenant holds none any more. A partition goes only with an
// empty write queue, no PutRecords in flight and no read running, and its
// writer is marked so that a produce that looked it up just before enqueues
// on its successor instead; a fetch still long-polling on it notices new
// records at its next poll of DIS rather than at once.
func (tn *Tenant) EvictIdle(cutoff time.Time) bool {
	return tn.evict(cutoff, func(ps *Partition) bool {
		if !ps.idle(true) {
			return false
		}
		ps.dropped()
		return true
	}) == 0
}

// ReleaseMoved drops the state of every partition owns says this gateway
// no longer leads, or led again before its state could be dropped, so that
// when it leads one again it recovers the next offset and producer state
// from DIS, where another gateway wrote meanwhile. A partition still
// writing its queued batches or serving a read goes once it is idle; it
// reports whether none is left.
func (tn *Tenant) ReleaseMoved(owns func(topic string, partition int32) bool) bool {
	done := true
	tn.evict(time.Now().Add(time.Hour), func(ps *Partition) bool {
		owned := owns(ps.key.Topic, ps.key.Partition)
		if owned && !ps.moved.Load() && !ps.borrowed {
			return false
		}
		if !ps.idle(false) {
			// Still writing or reading: look again soon. If the
			// partition comes back meanwhile the state is stale
			// all the same, so it goes as soon as it is idle.
			ps.moved.Store(true)
			done = false
			return false
		}
		ps.dropped()
		return true
	})
	return done
}

// ForgetStream drops everything held for a deleted stream.
func (tn *Tenant) ForgetStream(streamID string) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	for k, e := range tn.m {
		if k.StreamID == streamID {
			delete(tn.m, k)
			e.ps.dropped()
		}
	}
}

// FlushWatermarks writes the watermark checkpoints still behind their
// partitions' next offsets, as the gateway stops, within ctx.
func (tn *Tenant) FlushWatermarks(ctx context.Context) {
	tn.mu.Lock()
	var behind []*Partition
	for _, e := range tn.m {
		ps := e.ps
		ps.mu.Lock()
		if ps.recovered && ps.next > ps.watermark && ps.nextSeq > 0 {
			behind = append(behind, ps)
		}
		ps.mu.Unlock()
	}
	tn.mu.Unlock()
	for _, ps := range behind {
		if ctx.Err() != nil {
			return
		}
		ps.writeWatermark(ctx)
	}
}
