package plog

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// readPath is the read flow that kafka-format and raw-format partitions
// share (docs/design.md §4): a fetch is served from the format's cache when
// it holds the offset; otherwise one DIS read at a time, with the kept
// cursor, fills the cache, and a read-ahead on a goroutine of its own loads
// what follows while the consumer works through what it got. T is what the
// cache holds, stored batches or records; f does what differs between the
// formats.
type readPath[T any] struct {
	f  readFormat[T]
	ps *Partition // charged to the read cache for what f caches
	// mu is the format's: it guards the format's cache and lastEmpty, and
	// is taken after readMu.
	mu *sync.Mutex
	// readMu makes one DIS read at a time and guards the format's DIS
	// cursor.
	readMu    sync.Mutex
	lastEmpty time.Time   // when DIS last had nothing at the end
	loading   atomic.Bool // a read-ahead is queued or running
}

// readFormat is what a format does in the read flow, as its methods' values
// (staticcheck does not follow methods called through a generic interface,
// dominikh/go-tools#1440). Those named Locked are called with readPath.mu
// held; readDIS and loadAhead with readMu held and mu not.
type readFormat[T any] struct {
	// cachedLocked returns the cached items from the one holding offset
	// on, up to maxBytes (at least one), or nil when the cache does not
	// hold offset.
	cachedLocked func(offset int64, maxBytes int) []T
	// atEndLocked reports whether offset is at the partition's end as far
	// as it is known.
	atEndLocked func(offset int64) bool
	// readDIS reads the items from offset on; none means nothing is there
	// yet.
	readDIS func(ctx context.Context, offset int64, maxBytes int) ([]T, error)
	// installLocked takes what readDIS read at offset into the cache and
	// returns the change of the cache's bytes.
	installLocked func(offset int64, got []T) int
	// uncached is what to serve of got, read at offset, when the cache
	// did not keep offset.
	uncached func(got []T, offset int64, maxBytes int) []T
	// nextAfter is the offset that follows the items served.
	nextAfter func(served []T) int64
	// shortAheadLocked reports whether a consumer at next would find less
	// cached ahead of it than the format reads ahead, with more to read.
	shortAheadLocked func(next int64) bool
	// loadAhead reads into the cache for a consumer at next and returns
	// the change of the cache's bytes and whether to read again.
	loadAhead func(ctx context.Context, next int64, maxBytes int) (delta int, more bool)
}

// init sets what the read flow of a format reads through: its methods f,
// its lock mu, and the partition charged for its cache.
func (rp *readPath[T]) init(f readFormat[T], mu *sync.Mutex, ps *Partition) {
	rp.f, rp.mu, rp.ps = f, mu, ps
}

// read returns the items from offset on, up to maxBytes (at least one when
// any is there). Nothing means nothing is at offset yet.
func (rp *readPath[T]) read(ctx context.Context, offset int64, maxBytes int) ([]T, error) {
	f, d := &rp.f, rp.ps.d
	rp.mu.Lock()
	if out := f.cachedLocked(offset, maxBytes); out != nil {
		rp.aheadLocked(f.nextAfter(out), maxBytes)
		rp.mu.Unlock()
		d.Cache.charge(rp.ps, 0) // marks the partition read
		return out, nil
	}
	if f.atEndLocked(offset) && time.Since(rp.lastEmpty) < d.PollInterval {
		rp.mu.Unlock()
		return nil, nil
	}
	rp.mu.Unlock()

	rp.readMu.Lock()
	defer rp.readMu.Unlock()
	rp.mu.Lock()
	out := f.cachedLocked(offset, maxBytes)
	rp.mu.Unlock()
	if out != nil {
		return out, nil
	}
	got, err := f.readDIS(ctx, offset, maxBytes)
	if err != nil {
		return nil, err
	}
	rp.mu.Lock()
	delta := f.installLocked(offset, got)
	if len(got) == 0 {
		if f.atEndLocked(offset) {
			rp.lastEmpty = time.Now()
		}
		rp.mu.Unlock()
		return nil, nil
	}
	if out = f.cachedLocked(offset, maxBytes); out == nil {
		out = f.uncached(got, offset, maxBytes)
	}
	if len(out) > 0 {
		rp.aheadLocked(f.nextAfter(out), maxBytes)
	}
	rp.mu.Unlock()
	d.Cache.charge(rp.ps, delta)
	return out, nil
}

// aheadLocked starts loading what follows next, the offset after what a
// consumer was just served, so that its next fetch finds it cached and
// needs no DIS round trip. One read-ahead runs at a time per format of a
// partition; eviction waits for it (Partition.idle).
func (rp *readPath[T]) aheadLocked(next int64, maxBytes int) {
	if !rp.f.shortAheadLocked(next) || !rp.loading.CompareAndSwap(false, true) {
		return
	}
	d := rp.ps.d
	d.Go("partition read-ahead", func() {
		defer rp.loading.Store(false)
		ctx, cancel := context.WithTimeout(d.Ctx, PutTimeout)
		defer cancel()
		rp.readMu.Lock()
		defer rp.readMu.Unlock()
		for more := true; more; {
			var delta int
			if delta, more = rp.f.loadAhead(ctx, next, maxBytes); delta != 0 {
				d.Cache.charge(rp.ps, delta)
			}
		}
	})
}
