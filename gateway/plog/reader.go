package plog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// partitionReader serves Fetch for one partition of a raw-format stream,
// whose offsets are DIS sequence numbers (docs/design.md §4). It keeps the
// DIS cursor for the offset it will read next, so sequential consumers cost
// one GetRecords per fetch and no GetCursor; a read-ahead cache of recent
// records serves several consumers at once and hands records just produced
// through this gateway to fetchers without a DIS round trip.
type partitionReader struct {
	d     *Deps
	key   Key
	state *Partition // whose waiters appends wake

	// mu guards the fields from cache to hwm and the read flow's
	// lastEmpty. It is taken after reads.readMu and before the
	// partition's mu (raising the high watermark wakes the partition's
	// waiters).
	mu         sync.Mutex
	cache      []protocol.Record // consecutive offsets
	cacheBytes int
	hwm        int64 // next offset known to exist; -1 unknown

	// reads is the raw-format read flow, over the record cache; its
	// readMu guards cursor.
	reads  readPath[protocol.Record]
	cursor cursor
}

// rawCacheBytes bounds one raw partition's record cache, within the
// gateway's read cache budget.
func (pr *partitionReader) rawCacheBytes() int { return min(pr.d.ReadCacheBytes, 8<<20) }

// recordSize estimates a record's share of a fetch response.
func recordSize(r *protocol.Record) int {
	n := 24 + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += 8 + len(h.Key) + len(h.Value)
	}
	return n
}

// appended adds records this gateway just wrote and wakes long-polling
// fetches. The records alias their produce request's frame, so the cache
// gets a compact copy: a large frame must not stay alive for a small record.
func (pr *partitionReader) appended(recs []protocol.Record) {
	pr.mu.Lock()
	if len(pr.cache) > 0 && pr.cacheEnd() < pr.hwm && recs[0].Offset > pr.cacheEnd() {
		// The cache is a window some lagging consumer is reading: keep it,
		// and only learn the new high watermark.
		pr.raiseHWMLocked(recs[len(recs)-1].Offset + 1)
		pr.mu.Unlock()
		return
	}
	delta := pr.addLocked(compactRecords(recs))
	pr.mu.Unlock()
	pr.d.Cache.charge(pr.state, delta)
}

// compactRecords copies recs with their keys, values and header values in
// one buffer and their headers in one slice, keeping nil apart from empty.
func compactRecords(recs []protocol.Record) []protocol.Record {
	size, headers := 0, 0
	for i := range recs {
		size += len(recs[i].Key) + len(recs[i].Value)
		for _, h := range recs[i].Headers {
			size += len(h.Value)
		}
		headers += len(recs[i].Headers)
	}
	buf := make([]byte, 0, size)
	hs := make([]protocol.Header, 0, headers)
	clone := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		at := len(buf)
		buf = append(buf, b...)
		return buf[at:len(buf):len(buf)]
	}
	out := make([]protocol.Record, len(recs))
	for i := range recs {
		r := &recs[i]
		out[i] = protocol.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: clone(r.Key), Value: clone(r.Value)}
		if r.Headers != nil {
			at := len(hs)
			for _, h := range r.Headers {
				hs = append(hs, protocol.Header{Key: h.Key, Value: clone(h.Value)})
			}
			out[i].Headers = hs[at:len(hs):len(hs)]
		}
	}
	return out
}

// addLocked puts records into the cache. Records that continue the cache
// extend it; records elsewhere (a consumer moved, or someone else wrote a
// gap) replace it, since one window per partition is what readers share.
// It returns the change of the cache's bytes.
func (pr *partitionReader) addLocked(recs []protocol.Record) int {
	before := pr.cacheBytes
	if len(recs) == 0 {
		return 0
	}
	first, last := recs[0].Offset, recs[len(recs)-1].Offset
	end := pr.cacheEnd()
	switch {
	case len(pr.cache) == 0 || first == end:
	case first > end || last < pr.cache[0].Offset:
		pr.cache, pr.cacheBytes = nil, 0
	case first < pr.cache[0].Offset:
		// Records before and into the cache: rebuild from them.
		pr.cache, pr.cacheBytes = nil, 0
	default:
		// Overlap at the end: keep only what extends the cache.
		if skip := int(end - first); skip >= len(recs) {
			recs = nil
		} else {
			recs = recs[skip:]
		}
	}
	if len(recs) == 0 {
		return pr.cacheBytes - before
	}
	pr.cache = append(pr.cache, recs...)
	for i := range recs {
		pr.cacheBytes += recordSize(&recs[i])
	}
	drop := 0
	for pr.cacheBytes > pr.rawCacheBytes() && drop < len(pr.cache)-1 {
		pr.cacheBytes -= recordSize(&pr.cache[drop])
		drop++
	}
	// Re-slicing drops the front; append reallocates (copying only live
	// records) once the capacity left runs out.
	pr.cache = pr.cache[drop:]
	pr.raiseHWMLocked(pr.cache[len(pr.cache)-1].Offset + 1)
	return pr.cacheBytes - before
}

// raiseHWMLocked records a higher high watermark and wakes long polls.
func (pr *partitionReader) raiseHWMLocked(next int64) {
	if next > pr.hwm {
		pr.hwm = next
		pr.state.wake()
	}
}

// invalidate empties the cache when this gateway cannot know what offsets
// its own writes got.
func (pr *partitionReader) invalidate() {
	pr.mu.Lock()
	n := pr.cacheBytes
	pr.cache, pr.cacheBytes = nil, 0
	pr.mu.Unlock()
	if n != 0 {
		pr.d.Cache.charge(pr.state, -n)
	}
}

// trimCache drops the oldest cached records until at least n bytes are
// freed or none is left, for the gateway-wide read cache, and returns the
// bytes freed.
func (pr *partitionReader) trimCache(n int) int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	freed, drop := 0, 0
	for drop < len(pr.cache) && freed < n {
		freed += recordSize(&pr.cache[drop])
		drop++
	}
	clear(pr.cache[:drop])
	pr.cache = pr.cache[drop:]
	pr.cacheBytes -= freed
	return freed
}

func (pr *partitionReader) cacheEnd() int64 {
	if len(pr.cache) == 0 {
		return -1
	}
	return pr.cache[len(pr.cache)-1].Offset + 1
}

// cachedLocked copies up to maxBytes of records starting at offset (always
// at least one) when the cache holds offset.
func (pr *partitionReader) cachedLocked(offset int64, maxBytes int) []protocol.Record {
	if len(pr.cache) == 0 || offset < pr.cache[0].Offset || offset >= pr.cacheEnd() {
		return nil
	}
	i := int(offset - pr.cache[0].Offset)
	j, bytes := i, 0
	for j < len(pr.cache) && (j == i || bytes+recordSize(&pr.cache[j]) <= maxBytes) {
		bytes += recordSize(&pr.cache[j])
		j++
	}
	out := make([]protocol.Record, j-i)
	copy(out, pr.cache[i:j])
	return out
}

// knownHWM returns the high watermark this reader has seen, or -1.
func (pr *partitionReader) knownHWM() int64 {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.hwm
}

// observeHWM raises the known high watermark (from DescribeStream).
func (pr *partitionReader) observeHWM(next int64) {
	pr.mu.Lock()
	pr.raiseHWMLocked(next)
	pr.mu.Unlock()
}

// KnownHWM is the high watermark of a raw-format partition as this gateway
// has seen it, or -1.
func (ps *Partition) KnownHWM() int64 { return ps.reader.knownHWM() }

// ObserveHWM raises the known high watermark of a raw-format partition to
// next, the end DescribeStream reported, waking the fetches waiting.
func (ps *Partition) ObserveHWM(next int64) { ps.reader.observeHWM(next) }

// errOutOfRange means DIS has no records at the requested offset.
var errOutOfRange = errors.New("offset out of range")

// The raw format of the read flow (readPath): the cache is the record
// cache, and offsets are DIS sequence numbers.

func (pr *partitionReader) atEndLocked(offset int64) bool { return offset == pr.hwm }

// installLocked caches a read's records; a read that found nothing at
// offset says the partition reaches it.
func (pr *partitionReader) installLocked(offset int64, recs []protocol.Record) int {
	if len(recs) == 0 {
		pr.raiseHWMLocked(offset)
		return 0
	}
	return pr.addLocked(recs)
}

// uncached serves the whole read: it is what was asked for, from offset on.
func (pr *partitionReader) uncached(recs []protocol.Record, _ int64, _ int) []protocol.Record {
	return recs
}

func (pr *partitionReader) nextAfter(served []protocol.Record) int64 {
	return served[len(served)-1].Offset + 1
}

// shortAheadLocked reports whether the cache holds less than
// readAheadTarget bytes after next and more is known to exist.
func (pr *partitionReader) shortAheadLocked(next int64) bool {
	end := pr.cacheEnd()
	if next >= pr.hwm || (end >= pr.hwm && len(pr.cache) > 0 && next >= pr.cache[0].Offset) {
		return false
	}
	if len(pr.cache) == 0 || next < pr.cache[0].Offset || next >= end {
		return true
	}
	ahead := (end - next) * int64(pr.cacheBytes) / int64(len(pr.cache))
	return ahead < int64(pr.readAheadTarget())
}

// readAheadTarget is how much a reader keeps loaded ahead of its consumers:
// half the cache, so what a consumer is about to read is never evicted.
func (pr *partitionReader) readAheadTarget() int { return pr.rawCacheBytes() / 2 }

// loadAhead reads after the cache, or at next when the cache does not hold
// it, and asks to read again while that extended the cache: the target is
// more than one read.
func (pr *partitionReader) loadAhead(ctx context.Context, next int64, maxBytes int) (int, bool) {
	pr.mu.Lock()
	if !pr.shortAheadLocked(next) {
		pr.mu.Unlock()
		return 0, false
	}
	from := next
	if end := pr.cacheEnd(); len(pr.cache) > 0 && next >= pr.cache[0].Offset && next < end {
		from = end
	}
	pr.mu.Unlock()
	recs, err := pr.readDIS(ctx, from, maxBytes)
	if err != nil || len(recs) == 0 {
		return 0, false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	delta := pr.addLocked(recs)
	return delta, len(pr.cache) > 0 && from >= pr.cache[0].Offset && from < pr.cacheEnd()
}

// readDIS reads records from offset on with the reader's cursor.
func (pr *partitionReader) readDIS(ctx context.Context, offset int64, maxBytes int) ([]protocol.Record, error) {
	got, err := pr.cursor.read(ctx, pr.state, offset, max(maxBytes, pr.d.ReadBytes), false)
	if err != nil {
		return nil, err
	}
	recs := make([]protocol.Record, 0, len(got))
	for i := range got {
		r, err := FromRawDIS(&got[i])
		if err != nil {
			pr.cursor.id = ""
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// FromRawDIS converts a DIS record of a raw-format stream back into a Kafka
// record at the offset of its sequence number.
func FromRawDIS(d *disclient.Record) (protocol.Record, error) {
	off, err := strconv.ParseInt(d.SequenceNumber, 10, 64)
	if err != nil {
		return protocol.Record{}, fmt.Errorf("DIS returned sequence number %q: %w", d.SequenceNumber, err)
	}
	r := protocol.Record{Offset: off, Timestamp: d.Timestamp, Value: d.Data}
	if r.Value == nil {
		r.Value = []byte{}
	}
	if d.PartitionKey != "" {
		r.Key = []byte(d.PartitionKey)
	}
	return r, nil
}
