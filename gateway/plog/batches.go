package plog

import (
	"context"
	"sort"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// readBatches serves Fetch on a kafka-format partition: the stored batches
// from the one holding offset on, unchanged, up to maxBytes (at least one
// when any is there). The client skips the records before its offset, as
// with Kafka. Nothing means nothing is at offset yet. A kept topic's
// offsets below its generation's cut come from the generation, and past
// its last batch from the topic's stream at the cut (genread.go).
func (ps *Partition) readBatches(ctx context.Context, offset int64, maxBytes int) ([]Batch, error) {
	if err := ps.ensure(ctx); err != nil {
		return nil, err
	}
	ps.busy.Add(1)
	defer ps.busy.Add(-1)
	if g := ps.currentGen(); g.holds(offset) {
		out, err := ps.genReads.read(ctx, offset, maxBytes)
		if err != nil || len(out) > 0 {
			return out, err
		}
		offset = g.cut()
	}
	return ps.reads.read(ctx, offset, maxBytes)
}

// The kafka format of the read flow (readPath): the cache is the window of
// stored batches, and a read is labelled with the offsets its batches hold.

func (ps *Partition) atEndLocked(offset int64) bool { return offset >= ps.next }

// readDIS reads the whole batches from the one holding offset on, or from
// the partition's end when offset is there. Only a batch whose fragments
// are still being written may leave it with nothing: it is never served
// in part.
func (ps *Partition) readDIS(ctx context.Context, offset int64, _ int) ([]Batch, error) {
	ps.mu.Lock()
	next, nextSeq := ps.next, ps.nextSeq
	ps.mu.Unlock()
	seq := nextSeq
	if offset < next {
		var err error
		if seq, err = ps.seqFor(ctx, offset); err != nil {
			return nil, err
		}
	}
	recs, err := ps.readAtWhole(ctx, seq)
	if err != nil {
		return nil, err
	}
	// A DIS-native record with no batch in this read and no context
	// holds the offset searched for, or at the end the next one.
	anchor := min(offset, next)
	ps.mu.Lock()
	after := ps.lastOffsetOfLocked(seq - 1)
	ps.mu.Unlock()
	return labelRecords(recs, after, func(s int64) int64 { return anchor + (s - seq) })
}

// installLocked learns where a read's batches are and caches them; batches
// past the partition's known end were written by someone else than this
// gateway's writer, and move it.
func (ps *Partition) installLocked(_ int64, batches []Batch) int {
	if len(batches) == 0 {
		return 0
	}
	last := &batches[len(batches)-1]
	if last.seq >= ps.nextSeq {
		ps.next, ps.nextSeq = max(ps.next, last.last+1), last.seq+1
		if ps.maxTSKnown {
			ps.learnMaxTSLocked(batches)
		}
		ps.wakeLocked()
	}
	for i := range batches {
		ps.learnLocked(batches[i].batchLoc)
	}
	return ps.addWindowLocked(batches)
}

// uncached serves a read larger than what the window keeps from the read
// itself: its batches from the one holding offset on, stale ones left out.
func (ps *Partition) uncached(batches []Batch, offset int64, maxBytes int) []Batch {
	i := 0
	for i < len(batches) && batches[i].last < offset {
		i++
	}
	var out []Batch
	for n := 0; i < len(batches) && (len(out) == 0 || n+batches[i].Size() <= maxBytes); i++ {
		if batches[i].Data != nil {
			n += batches[i].Size()
			out = append(out, batches[i])
		}
	}
	return out
}

func (ps *Partition) nextAfter(served []Batch) int64 { return served[len(served)-1].last + 1 }

// shortAheadLocked reports whether the window holds less than a read's
// worth of batches from next on while more follows it in DIS.
func (ps *Partition) shortAheadLocked(next int64) bool {
	if _, _, ok := ps.afterWindowLocked(); !ok {
		return false
	}
	ahead := 0
	for i := len(ps.window) - 1; i >= 0 && ps.window[i].last >= next; i-- {
		ahead += ps.window[i].Size()
	}
	return ahead < ps.d.ReadBytes
}

// loadAhead reads once after the window into it: a read is the whole of
// a kafka-format read-ahead, which reading deeper did not make faster
// (docs/design.md §10).
func (ps *Partition) loadAhead(ctx context.Context, _ int64, _ int) (int, bool) {
	ps.mu.Lock()
	seq, after, ok := ps.afterWindowLocked()
	ps.mu.Unlock()
	if !ok {
		return 0, false
	}
	recs, err := ps.readAtWhole(ctx, seq)
	if err != nil || len(recs) == 0 {
		return 0, false
	}
	batches, err := labelRecords(recs, after, nil)
	if err != nil || len(batches) == 0 {
		return 0, false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i := range batches {
		ps.learnLocked(batches[i].batchLoc)
	}
	return ps.addWindowLocked(batches), false
}

// afterWindowLocked is where the records after the window start and the
// last offset before them; ok is false when the window is empty or ends at
// the partition's end.
func (ps *Partition) afterWindowLocked() (seq, after int64, ok bool) {
	n := len(ps.window)
	if n == 0 || ps.window[n-1].seq+1 >= ps.nextSeq {
		return 0, 0, false
	}
	return ps.window[n-1].seq + 1, ps.window[n-1].last, true
}

// lastOffsetOfLocked is the last offset of the record at seq when the index
// knows it, or noContext.
func (ps *Partition) lastOffsetOfLocked(seq int64) int64 {
	i := sort.Search(len(ps.index), func(i int) bool { return ps.index[i].seq >= seq })
	if i == len(ps.index) || ps.index[i].seq != seq {
		return noContext
	}
	return ps.index[i].last
}

// readAtWhole is readAt that goes on reading while the records end inside
// a batch stored in fragments, so that it is read whole, until DIS has no
// more; reading a large batch takes several GetRecords calls.
func (ps *Partition) readAtWhole(ctx context.Context, seq int64) ([]disclient.Record, error) {
	recs, err := ps.readAt(ctx, seq)
	for err == nil && len(recs) > 0 && incompleteTail(recs) < len(recs) {
		var more []disclient.Record
		if more, err = ps.readAt(ctx, seq+int64(len(recs))); len(more) == 0 {
			break
		}
		recs = append(recs, more...)
	}
	return recs, err
}

// readAt reads records from seq on with the partition's cursor, leaving
// the rest of large batches in the embedded DIS's files.
func (ps *Partition) readAt(ctx context.Context, seq int64) ([]disclient.Record, error) {
	recs, err := ps.cursor.read(ctx, ps, seq, ps.d.ReadBytes, true)
	if err != nil {
		return nil, err
	}
	if err := readUnlessBatches(recs); err != nil {
		ps.cursor.id = ""
		return nil, err
	}
	return recs, nil
}

// spanMinBytes is the least data a record must have for a read to leave
// its rest in the embedded DIS's record log, to be sent from there
// (disclient.SpanGetter): a smaller batch costs less copied than as a
// sendfile call of its own.
const spanMinBytes = 4 << 10

// readUnlessBatches reads into memory the data a SpanGetter left in its
// files of the records that are not whole batches: fragments of a larger
// batch and DIS-native records, which are taken apart or rebuilt. A batch
// stays as its header and the span of its records, sent from the file
// when it is fetched (docs/design.md §4).
func readUnlessBatches(recs []disclient.Record) error {
	for i := range recs {
		r := &recs[i]
		if r.Rest.Len == 0 {
			continue
		}
		if _, ok := protocol.ParseBatchHead(r.Data, len(r.Data)+r.Rest.Len); ok {
			continue
		}
		data, err := r.Rest.AppendTo(append(make([]byte, 0, len(r.Data)+r.Rest.Len), r.Data...))
		if err != nil {
			return err
		}
		r.Data, r.Rest = data, disclient.FileSpan{}
	}
	return nil
}
