package plog

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Partition is everything the gateway holds for one partition, in one
// place: its writer and reader, and for kafka-format streams the offset
// bookkeeping they share (docs/design.md §2): the next Kafka offset and DIS
// sequence number, a sparse index from offsets to sequence numbers learned
// from writes and reads, the largest timestamp, the cached batches, and the
// fetches waiting for appends. It is owned by the tenant's partition map and
// evicted from it when idle; writer and reader never outlive it.
type Partition struct {
	t      *Tenant
	d      *Deps
	key    Key
	writer *partitionWriter
	reader *partitionReader // raw streams' record reader

	// recoverMu makes one recovery at a time; recovery reads DIS with mu
	// released. It is taken before mu and the writer's mu, never while
	// holding a lock of the partition (docs/design.md §11).
	recoverMu sync.Mutex

	// mu guards the fields from recovered to gen, and the
	// kafka-format read flow's lastEmpty. It is taken after recoverMu,
	// either read flow's readMu and the reader's mu, and no other lock of
	// the partition log is taken while it is held.
	mu        sync.Mutex
	recovered bool
	// unsettledSeq is the first DIS sequence number a write whose outcome
	// the gateway could not learn may have stored records at (forget),
	// -1 when none: the next recovery reads what landed there.
	unsettledSeq int64
	// producersKnown is set once the writer's producers were rebuilt
	// from the tail; from then on its own state follows them.
	producersKnown bool
	next           int64 // next Kafka offset: the high watermark
	nextSeq        int64 // DIS sequence number of the next record
	// earliestSeq and earliestOff are the first readable record and its
	// base offset, as last learned; earliestSeq -1 when unknown.
	earliestSeq, earliestOff int64
	index                    []batchLoc // sparse, ascending by seq and offset
	// maxTS is the largest batch max timestamp and maxTSSeq the first
	// record holding it (-1 none), for ListOffsets -3; maxTSKnown says
	// whether they cover the whole partition.
	maxTS, maxTSSeq int64
	maxTSKnown      bool
	waiters         []chan struct{}
	// window holds the batches of consecutive DIS records last written
	// or read, counted against the gateway-wide read cache.
	window      []Batch
	windowBytes int
	// watermark is the next offset the watermark checkpoint holds, -1
	// when unknown or none; watermarkAt when it was last written.
	watermark   int64
	watermarkAt time.Time
	watermarkDo bool // a delayed watermark write is scheduled
	// logStart is the log start offset DeleteRecords or retention.ms set,
	// which the watermark checkpoint keeps (0 when none); the partition's
	// log start is the larger of it and earliestOff.
	logStart int64
	// retainedAt is when retention.ms last moved the log start
	// (retention.go).
	retainedAt time.Time
	// gen is a kept topic's current generation (kept.go), nil for a
	// topic that is not kept; replaced whole, never changed.
	gen *generation
	// txn is the partition's transactions (txn.go); txnSnapAt is when a
	// snapshot of them was last written, txnSnapFailed when a write last
	// failed, and txnSnapDo is set while one is scheduled
	// (txn_snapshot.go).
	txn           txnState
	txnSnapAt     time.Time
	txnSnapFailed time.Time
	txnSnapDo     bool

	// markMu makes one watermark checkpoint write at a time, so that a
	// write of an older state never lands after a newer one. It is held
	// across the DIS call and taken before mu (docs/design.md §11).
	markMu sync.Mutex

	// reads is the kafka-format read flow, over the window; its readMu
	// guards cursor.
	reads  readPath[Batch]
	cursor cursor
	// genReads is the read flow of a kept topic's generation, below its
	// cut (genread.go); its readMu guards genCursor and genPos.
	genReads  readPath[Batch]
	genCursor cursor
	genPos    genPosition
	// keepMu makes one rewrite of the partition at a time (rewrite.go);
	// it is held across the rewrite's DIS calls and taken before
	// recoverMu and mu.
	keepMu sync.Mutex
	// busy counts kafka-format reads in progress, which keep eviction away.
	busy atomic.Int32
	// moved is set when the partition moved to another gateway while
	// this state was busy: it is dropped once idle, even if the partition
	// came back meanwhile (Tenant.ReleaseMoved).
	moved atomic.Bool
	// borrowed is set when the state was made while another gateway led
	// the partition (Deps.Owns): it is dropped once the partition comes
	// here, and meanwhile it is read, never written.
	borrowed bool
	// gone is set when DIS answered that the partition's stream does not
	// exist: the topic was deleted (one created again under its name is
	// another stream, so another Key), and its transaction state, which
	// no one can read any more, neither keeps it from eviction nor is
	// written again.
	gone atomic.Bool
	// meter counts the partition's DIS traffic for its quota share.
	meter ioMeter

	// shareMu guards shares, the share groups' share-partitions held
	// here (share_room.go). It may be taken while a room's mu is held,
	// and no other lock of the partition log is taken while it is held.
	shareMu sync.Mutex
	shares  map[string]*shareRoom
}

// batchLoc places one DIS record of a kafka-format stream: its sequence
// number and the Kafka offsets it holds. A batch stored in fragments is
// placed at its last fragment, which holds its offsets; lead is how many
// records before seq hold its other fragments (0 for a batch in one
// record), so reading it starts at seq-lead. The other fragments hold no
// offsets; lead -1 marks a fragment whose batch began before the records
// read, which the index does not learn.
type batchLoc struct {
	seq, base, last int64
	lead            int64
}

// startSeq is where reading the record at loc starts: its first fragment.
func (loc batchLoc) startSeq() int64 { return loc.seq - max(loc.lead, 0) }

// Batch is one stored record batch as the read cache holds it, a copy
// that aliases no request frame: for a DIS record that is not a batch, the
// one-record batch built from it; no data for a stale copy, which holds no
// offsets and is never served (labelRecords). A batch read from the
// embedded DIS may be in its record log still, File, with only its header
// in Data, and is sent from there (readUnlessBatches). Readers share
// batches: Data and File are never changed.
type Batch struct {
	batchLoc
	maxTS int64
	Data  []byte
	File  disclient.FileSpan
}

// Size is the batch's length.
func (b *Batch) Size() int {
	if b.File.Len > 0 {
		return b.File.Len
	}
	return len(b.Data)
}

// Records is how many offsets the batch holds.
func (b *Batch) Records() int64 { return b.last - b.base + 1 }

// newPartition makes the state of partition k of tn.
func newPartition(tn *Tenant, k Key) *Partition {
	ps := &Partition{t: tn, d: &tn.d, key: k, earliestSeq: -1, watermark: -1, maxTSSeq: -1, unsettledSeq: -1}
	ps.borrowed = !tn.d.Owns(k.Topic, k.Partition)
	ps.writer = &partitionWriter{d: &tn.d, key: k, state: ps, producers: make(map[int64]*producerState)}
	ps.reader = &partitionReader{d: &tn.d, key: k, state: ps, hwm: -1}
	ps.reads.init(readFormat[Batch]{
		cachedLocked: ps.cachedLocked, atEndLocked: ps.atEndLocked, readDIS: ps.readDIS,
		installLocked: ps.installLocked, uncached: ps.uncached, nextAfter: ps.nextAfter,
		shortAheadLocked: ps.shortAheadLocked, loadAhead: ps.loadAhead,
	}, &ps.mu, ps)
	ps.genReads.init(readFormat[Batch]{
		cachedLocked: func(int64, int) []Batch { return nil }, atEndLocked: func(int64) bool { return false },
		readDIS: ps.readGen, installLocked: func(int64, []Batch) int { return 0 }, uncached: ps.uncached,
		nextAfter: ps.nextAfter, shortAheadLocked: func(int64) bool { return false },
		loadAhead: func(context.Context, int64, int) (int, bool) { return 0, false },
	}, &ps.mu, ps)
	pr := ps.reader
	pr.reads.init(readFormat[protocol.Record]{
		cachedLocked: pr.cachedLocked, atEndLocked: pr.atEndLocked, readDIS: pr.readDIS,
		installLocked: pr.installLocked, uncached: pr.uncached, nextAfter: pr.nextAfter,
		shortAheadLocked: pr.shortAheadLocked, loadAhead: pr.loadAhead,
	}, &pr.mu, ps)
	return ps
}

// Key is the partition's key.
func (ps *Partition) Key() Key { return ps.key }

// idle reports whether nothing runs on the state and, with keepTxnState,
// it holds no transaction state, so that it may be dropped; called under
// the partition map lock.
func (ps *Partition) idle(keepTxnState bool) bool {
	w := ps.writer
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running || len(w.queue) > 0 || w.completing || ps.reads.loading.Load() || ps.reader.reads.loading.Load() || ps.busy.Load() > 0 {
		return false
	}
	// Transaction state stays while the partition is this gateway's,
	// and its snapshot is written again before it expires
	// (txn_snapshot.go); once it moved, the new owner keeps it.
	if keepTxnState {
		ps.mu.Lock()
		keep := !ps.txnEmptyLocked() && !ps.gone.Load()
		ps.mu.Unlock()
		if keep || ps.sharesBusy() {
			return false
		}
	}
	w.evicted = true
	return true
}

// dropped releases what an evicted state holds in the read cache.
func (ps *Partition) dropped() {
	ps.mu.Lock()
	n := ps.windowBytes
	ps.window, ps.windowBytes = nil, 0
	ps.mu.Unlock()
	pr := ps.reader
	pr.mu.Lock()
	n += pr.cacheBytes
	pr.cache, pr.cacheBytes = nil, 0
	pr.mu.Unlock()
	ps.d.Cache.charge(ps, -n)
	ps.d.Cache.forget(ps)
	ps.closeShares()
}

// trim frees at least n bytes of the partition's cached batches, then of
// its cached raw records, or all of them; it returns the bytes freed.
func (ps *Partition) trim(n int) int {
	freed := ps.trimWindow(n)
	if freed < n {
		freed += ps.reader.trimCache(n - freed)
	}
	return freed
}

// register adds a waiter that the next append to the partition wakes.
func (ps *Partition) register(c chan struct{}) {
	ps.mu.Lock()
	ps.waiters = append(ps.waiters, c)
	ps.mu.Unlock()
}

// unregister removes a waiter that was not woken.
func (ps *Partition) unregister(c chan struct{}) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i, w := range ps.waiters {
		if w == c {
			last := len(ps.waiters) - 1
			ps.waiters[i] = ps.waiters[last]
			ps.waiters[last] = nil
			ps.waiters = ps.waiters[:last]
			return
		}
	}
}

// wakeLocked wakes every waiter; each is woken once and forgotten.
func (ps *Partition) wakeLocked() {
	for i, c := range ps.waiters {
		select {
		case c <- struct{}{}:
		default:
		}
		ps.waiters[i] = nil
	}
	ps.waiters = ps.waiters[:0]
}

// wake wakes the partition's waiters.
func (ps *Partition) wake() {
	ps.mu.Lock()
	ps.wakeLocked()
	ps.mu.Unlock()
}

// Recovery bounds: how far back a writer's first use reads the partition's
// tail for its next offset and its producers' state.
const (
	tailChunk      = 32
	tailMaxRecords = 4096
	tailMaxBytes   = 4 << 20
)

// errNotRecovered is a read of a partition whose offsets could not be
// recovered from DIS.
var errNotRecovered = errors.New("the partition's offsets could not be recovered from DIS")

// ensure recovers the partition's offsets on first use (docs/record-formats.md):
// the next offset follows the last batch in the partition's tail, or, for
// a partition retention emptied, comes from its watermark checkpoint.
func (ps *Partition) ensure(ctx context.Context) error {
	return ps.ensureWith(ctx, false)
}

// EnsureProducers recovers the partition's offsets and its idempotent
// producers' state on first use: it reads enough of the partition's tail
// to rebuild them, once.
func (ps *Partition) EnsureProducers(ctx context.Context) error {
	return ps.ensureWith(ctx, true)
}

func (ps *Partition) ensureWith(ctx context.Context, producers bool) error {
	done := func() bool {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		return ps.recovered && (!producers || ps.producersKnown)
	}
	if done() {
		return nil
	}
	ps.recoverMu.Lock()
	defer ps.recoverMu.Unlock()
	if done() {
		return nil
	}
	return ps.recover(ctx, producers)
}

// forget makes the next use recover again, after a write whose outcome the
// gateway cannot know: that recovery also reads what the write stored
// after all (settleLanded), from the end of what the partition knew.
func (ps *Partition) forget() {
	ps.mu.Lock()
	ps.recovered = false
	if ps.unsettledSeq < 0 {
		ps.unsettledSeq = ps.nextSeq
	}
	ps.mu.Unlock()
}

// recover reads the partition's range, its watermark checkpoint and its
// tail: up to its last batch, or with producers up to tailMaxBytes or
// 8 chunks, from which the writer rebuilds its producers' state.
func (ps *Partition) recover(ctx context.Context, producers bool) error {
	earliest, nextSeq, ok, err := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition)
	if err != nil {
		return err
	}
	if !ok {
		return errNotRecovered
	}
	wm, logStart, ptr, err := ps.readWatermark(ctx)
	if err != nil {
		return err
	}
	// A kept topic's generation is there before any reader is let in, so
	// that none reads below its cut from the topic's stream.
	if err := ps.recoverKept(ctx); err != nil {
		return err
	}
	// A partition without batches has offsets that end where its
	// sequence numbers do, or the watermark says.
	next := max(wm, nextSeq)
	var tail []Batch
	if nextSeq > earliest {
		recs, err := ps.readTail(ctx, earliest, nextSeq, producers)
		if err != nil {
			return err
		}
		base := next
		if tail, err = labelTail(recs, noContext, func(seq int64) int64 { return base - (nextSeq - seq) }); err != nil {
			return err
		}
		if len(tail) > 0 {
			// Fragments hold fewer offsets than records: the offsets
			// follow the last whole batch, not the sequence numbers.
			next = max(wm, tail[len(tail)-1].last+1)
		}
	}
	landed, err := ps.readLanded(ctx, earliest, nextSeq, next)
	if err != nil {
		return err
	}
	ps.mu.Lock()
	ps.recovered = true
	ps.unsettledSeq = -1
	ps.next, ps.nextSeq = max(ps.next, next), max(ps.nextSeq, nextSeq)
	ps.watermark = wm
	ps.logStart = max(ps.logStart, logStart)
	if !ps.txn.loaded {
		// A loaded state keeps its own pointer: it wrote it.
		ps.txn.ptr = ptr
	}
	if earliest == nextSeq {
		// Empty: what is written from now on is all there is.
		ps.earliestSeq, ps.earliestOff = earliest, ps.next
		ps.maxTSKnown = true
	}
	for i := range tail {
		ps.learnLocked(tail[i].batchLoc)
	}
	if len(tail) > 0 && tail[0].seq == earliest {
		ps.earliestSeq, ps.earliestOff = earliest, tail[0].base
		ps.learnMaxTSLocked(tail)
		ps.maxTSKnown = true
	}
	need := ps.next > wm && nextSeq > earliest
	ps.producersKnown = ps.producersKnown || producers
	ps.mu.Unlock()
	if producers {
		ps.writer.rebuildProducers(tail)
	}
	ps.writer.settleLanded(landed)
	if need {
		ps.writeWatermark(ctx)
	}
	return nil
}

// readLanded reads, after forget, the batches at and after the first
// sequence number a failed write may have stored at, up to nextSeq (next
// is the offset after them), and publishes them: the partition's
// transaction state follows them, and the caller hands them to the
// writer (settleLanded), so that a producer's retry of such a batch is
// answered with its offsets, not stored twice.
func (ps *Partition) readLanded(ctx context.Context, earliest, nextSeq, next int64) ([]Batch, error) {
	ps.mu.Lock()
	unsettled := ps.unsettledSeq
	ps.mu.Unlock()
	from := max(unsettled, earliest)
	if unsettled < 0 || from >= nextSeq {
		return nil, nil
	}
	recs, err := ps.readRange(ctx, from, nextSeq)
	if err != nil {
		return nil, err
	}
	landed, err := labelTail(recs, noContext, func(seq int64) int64 { return next - (nextSeq - seq) })
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	ps.applyBatchesLocked(landed)
	ps.mu.Unlock()
	return landed, nil
}

// readTail reads the last records of [earliest, nextSeq), going back in
// chunks until it has found a batch and, with producers, enough of the
// tail for producer state, or reached a bound.
func (ps *Partition) readTail(ctx context.Context, earliest, nextSeq int64, producers bool) ([]disclient.Record, error) {
	var out []disclient.Record
	hi, bytes, chunk := nextSeq, 0, int64(tailChunk)
	found := false
	for hi > earliest {
		lo := max(earliest, hi-chunk)
		recs, err := ps.readRange(ctx, lo, hi)
		if err != nil {
			return nil, err
		}
		out = append(recs, out...)
		for i := range recs {
			bytes += len(recs[i].Data)
			if _, ok := protocol.ParseBatchInfo(recs[i].Data); ok {
				found = true
			} else if f, ok := parseFragment(recs[i].Data); ok && f.index == f.count-1 && i >= int(f.index) {
				// The last fragment of a batch whose first is read too.
				found = true
			}
		}
		hi = lo
		if (found && (!producers || bytes >= tailMaxBytes || len(out) >= 8*tailChunk)) || len(out) >= tailMaxRecords {
			break
		}
		chunk *= 2
	}
	return out, nil
}

// readRange reads the records of [from, to), fewer when DIS has fewer.
func (ps *Partition) readRange(ctx context.Context, from, to int64) ([]disclient.Record, error) {
	dis := ps.d.DIS
	c, err := dis.GetCursor(ctx, &disclient.GetCursorRequest{
		StreamName: ps.key.Stream, PartitionID: disclient.PartitionID(ps.key.Partition),
		CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: strconv.FormatInt(from, 10),
	})
	if err != nil {
		return nil, err
	}
	cursor := c.PartitionCursor
	var out []disclient.Record
	for cursor != "" {
		resp, err := dis.GetRecords(ctx, cursor, ps.d.ReadBytes)
		if err != nil {
			return nil, err
		}
		done := len(resp.Records) == 0
		for _, r := range resp.Records {
			seq, err := strconv.ParseInt(r.SequenceNumber, 10, 64)
			if err != nil {
				return nil, errors.New("DIS returned sequence number " + strconv.Quote(r.SequenceNumber))
			}
			if seq >= to {
				done = true
				break
			}
			out = append(out, r)
		}
		if done {
			break
		}
		cursor = resp.NextPartitionCursor
	}
	return out, nil
}

// maxIndexEntries bounds the sparse index of one partition: 24 KiB, so a
// gateway serving thousands of partitions keeps its memory.
const maxIndexEntries = 1024

// learnLocked adds loc to the sparse index. When the index is full its older
// three quarters are thinned to every other entry, so recent positions stay
// exact and old ones a search away.
func (ps *Partition) learnLocked(loc batchLoc) {
	if loc.lead < 0 {
		return
	}
	n := len(ps.index)
	if n == 0 || loc.seq > ps.index[n-1].seq {
		ps.index = append(ps.index, loc)
	} else {
		i := sort.Search(n, func(i int) bool { return ps.index[i].seq >= loc.seq })
		if i < n && ps.index[i].seq == loc.seq {
			ps.index[i] = loc
			return
		}
		ps.index = append(ps.index, batchLoc{})
		copy(ps.index[i+1:], ps.index[i:])
		ps.index[i] = loc
	}
	if len(ps.index) > maxIndexEntries {
		old := len(ps.index) * 3 / 4
		j := 0
		for i := 0; i < old; i += 2 {
			ps.index[j] = ps.index[i]
			j++
		}
		j += copy(ps.index[j:], ps.index[old:])
		ps.index = ps.index[:j]
	}
}

// learnMaxTSLocked takes the largest timestamp of batches.
func (ps *Partition) learnMaxTSLocked(batches []Batch) {
	for i := range batches {
		if b := &batches[i]; b.maxTS > ps.maxTS || ps.maxTSSeq < 0 {
			ps.maxTS, ps.maxTSSeq = b.maxTS, b.startSeq()
		}
	}
}

// appended takes batches this gateway just wrote at the end of the
// partition: it advances the next offset, learns their places, caches them
// and wakes the fetches waiting.
func (ps *Partition) appended(batches []Batch) {
	if len(batches) == 0 {
		return
	}
	ps.mu.Lock()
	last := &batches[len(batches)-1]
	ps.next = max(ps.next, last.last+1)
	ps.nextSeq = max(ps.nextSeq, last.seq+1)
	if ps.earliestSeq == batches[0].seq {
		// Written into an empty partition: it starts here.
		ps.earliestOff = batches[0].base
	}
	for i := range batches {
		ps.learnLocked(batches[i].batchLoc)
	}
	if ps.maxTSKnown {
		ps.learnMaxTSLocked(batches)
	}
	version := ps.txn.version
	ps.applyBatchesLocked(batches)
	changed := ps.txn.version != version
	delta := ps.addWindowLocked(batches)
	ps.wakeLocked()
	ps.mu.Unlock()
	ps.d.Cache.charge(ps, delta)
	if changed {
		ps.scheduleTxnSnapshot()
	}
}

// storedUpTo makes the next sequence number follow every record results
// stored, so that the fragments of a batch whose write failed half way,
// which hold no offsets, are not taken for someone else's write.
func (ps *Partition) storedUpTo(results []disclient.PutRecordsResult) {
	top := int64(-1)
	for i := range results {
		if seq, err := strconv.ParseInt(results[i].SequenceNumber, 10, 64); err == nil && results[i].ErrorCode == "" {
			top = max(top, seq)
		}
	}
	if top < 0 {
		return
	}
	ps.mu.Lock()
	ps.nextSeq = max(ps.nextSeq, top+1)
	ps.mu.Unlock()
}

// addWindowLocked puts batches into the partition's cache window: ones that
// continue it extend it, others replace it. It returns the change in bytes.
func (ps *Partition) addWindowLocked(batches []Batch) int {
	before := ps.windowBytes
	if n := len(ps.window); n > 0 {
		end := ps.window[n-1].seq + 1
		switch {
		case batches[0].seq == end:
		case batches[0].seq > end || batches[len(batches)-1].seq < ps.window[0].seq || batches[0].seq < ps.window[0].seq:
			ps.window, ps.windowBytes = nil, 0
		default:
			skip := int(end - batches[0].seq)
			if skip >= len(batches) {
				return 0
			}
			batches = batches[skip:]
		}
	}
	for i := range batches {
		ps.window = append(ps.window, batches[i])
		ps.windowBytes += batches[i].Size()
	}
	// One partition keeps at most half the gateway's budget, and at
	// least its last batch unless that alone is over it: a larger batch
	// (max.message.bytes allows up to 1 GiB) is served from its read and
	// never cached.
	drop := 0
	keep := 1
	if n := len(ps.window); n > 0 && ps.window[n-1].Size() > ps.d.ReadCacheBytes/2 {
		keep = 0
	}
	for ps.windowBytes > ps.d.ReadCacheBytes/2 && drop < len(ps.window)-keep {
		ps.windowBytes -= ps.window[drop].Size()
		ps.window[drop] = Batch{}
		drop++
	}
	ps.window = ps.window[drop:]
	return ps.windowBytes - before
}

// trimWindow drops the oldest cached batches until at least n bytes are
// freed or the window is empty; it returns the bytes freed.
func (ps *Partition) trimWindow(n int) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	freed, drop := 0, 0
	for drop < len(ps.window) && freed < n {
		freed += ps.window[drop].Size()
		ps.window[drop] = Batch{}
		drop++
	}
	ps.window = ps.window[drop:]
	ps.windowBytes -= freed
	return freed
}

// cachedLocked returns the cached batches from the one holding offset on,
// up to maxBytes (at least one), when the window holds offset.
func (ps *Partition) cachedLocked(offset int64, maxBytes int) []Batch {
	n := len(ps.window)
	if n == 0 || offset < ps.window[0].base || offset > ps.window[n-1].last {
		return nil
	}
	i := sort.Search(n, func(i int) bool { return ps.window[i].last >= offset })
	var out []Batch
	for bytes := 0; i < n && (len(out) == 0 || bytes+ps.window[i].Size() <= maxBytes); i++ {
		if ps.window[i].Data == nil {
			continue // stale: never served
		}
		bytes += ps.window[i].Size()
		out = append(out, ps.window[i])
	}
	return out
}

// readBack reads the partition from the record before wantSeq to its end,
// learns where everything is, and returns the sequence numbers of the
// stale batches among them (see labelRecords). The batches someone else
// wrote past what this gateway knew (all but the stale ones and mine, the
// writer's own, which it publishes itself) change the transaction state
// as if published here: a marker another gateway wrote after this one
// recovered the partition must not leave a transaction open here.
func (ps *Partition) readBack(ctx context.Context, wantSeq int64, mine map[int64]bool) (map[int64]bool, error) {
	earliest, nextSeq, ok, err := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotRecovered
	}
	from := max(wantSeq-1, earliest, 0)
	recs, err := ps.readRange(ctx, from, nextSeq)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	next := ps.next
	ps.mu.Unlock()
	labels, err := labelTail(recs, noContext, func(seq int64) int64 { return next + (seq - from) })
	if err != nil {
		return nil, err
	}
	stale := make(map[int64]bool)
	var foreign []Batch
	ps.mu.Lock()
	for i := range labels {
		if labels[i].Data == nil {
			stale[labels[i].seq] = true
		} else if labels[i].base >= next && !mine[labels[i].seq] {
			foreign = append(foreign, labels[i])
		}
		ps.learnLocked(labels[i].batchLoc)
	}
	if n := len(labels); n > 0 {
		ps.next = max(ps.next, labels[n-1].last+1)
	}
	ps.nextSeq = max(ps.nextSeq, nextSeq)
	ps.recovered = true
	version := ps.txn.version
	ps.applyBatchesLocked(foreign)
	changed := ps.txn.version != version
	if changed {
		ps.wakeLocked()
	}
	ps.mu.Unlock()
	if changed {
		ps.scheduleTxnSnapshot()
	}
	return stale, nil
}
