package plog

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/protocol"
)

// Rewriting a kept topic's partition (docs/design.md §12): the live records
// of the current generation and of the topic's stream up to a new cut are
// written to the keep stream as the next generation, then its commit
// record, then the hint checkpoint. DIS orders the keep partition's
// records, and a rewrite writes each expecting the sequence number after
// the last: when DIS gives another, someone else wrote in between, and the
// rewrite stops and writes no commit. Until the commit lands the old
// generation stays current, and the topic's stream still holds everything
// after its cut, so a rewrite stopped at any step loses nothing.

// ErrRewriteFenced is a rewrite abandoned because someone else wrote the
// keep partition while it ran: another gateway that took the partition
// over, or its rewrite. Its generation never becomes current.
var ErrRewriteFenced = errors.New("someone else wrote the keep partition during the rewrite; it was abandoned")

// KeepRun is what one rewrite of a partition gets from its driver (the
// gateway's keeper).
type KeepRun struct {
	// Now is the clock the rewrite decides by: when it is due, what
	// retention.ms and delete.retention.ms drop.
	Now func() time.Time
	// DISRetention is how long DIS keeps the topic's records: a rewrite
	// is due half of it after the last began (keep.Due).
	DISRetention time.Duration
	// Keys is the key map of a compacted topic's rewrite, reused from one
	// rewrite to the next (--compaction-map-bytes).
	Keys *keep.OffsetMap
	// Throttle, when set, paces the bytes the rewrite reads of the
	// topic's stream, so that consumers keep their share of the
	// partition's read quota.
	Throttle *rate.Limiter
	// Writer names the gateway in the commit record, for logs.
	Writer string
}

// KeepResult is what a rewrite did: whether it made a new generation
// current, and the batches, Kafka records and bytes that generation holds.
type KeepResult struct {
	Written                 bool
	Batches, Records, Bytes int64
}

// Keep rewrites the partition of a kept topic when a rewrite is due
// (keep.Due), and makes the new generation current. It returns a zero
// result for a topic that is not kept or a partition not due, and
// ErrRewriteFenced when someone else wrote the keep partition meanwhile.
func (ps *Partition) Keep(ctx context.Context, run KeepRun) (KeepResult, error) {
	if err := ps.ensureTxn(ctx); err != nil {
		return KeepResult{}, err
	}
	policy, stream, ok, err := ps.d.Kept(ctx, ps.key.Topic)
	if err != nil || !ok {
		return KeepResult{}, err
	}
	ps.keepMu.Lock()
	defer ps.keepMu.Unlock()
	g, err := ps.loadGeneration(ctx, stream)
	if err != nil {
		return KeepResult{}, err
	}
	ps.install(g)
	earliestSeq, _, ok, err := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition)
	if err != nil {
		return KeepResult{}, err
	}
	if !ok {
		return KeepResult{}, errNotRecovered
	}
	ps.mu.Lock()
	next, nextSeq, logStart := ps.next, ps.nextSeq, ps.logStart
	// The cut is at or below the last stable offset, so a generation
	// holds only decided data (docs/design.md §13).
	lso, aborted := ps.lsoLocked(), slices.Clone(ps.txn.aborted)
	ps.mu.Unlock()
	if lso < next {
		if nextSeq, err = ps.seqFor(ctx, lso); err != nil {
			return KeepResult{}, err
		}
		next = lso
	}
	now := run.Now().UnixMilli()
	hasRecords := nextSeq > earliestSeq && next > max(logStart, g.cut())
	if !keep.Due(g.commit, policy, now, run.DISRetention.Milliseconds(), hasRecords) {
		return KeepResult{}, nil
	}
	var keys *keep.OffsetMap
	if policy.Compact {
		keys = run.Keys
	}
	rw := &rewrite{ps: ps, g: g, run: run, cut: next, cutSeq: nextSeq, earliestSeq: earliestSeq, started: now,
		aborted: aborted, w: keep.NewRewrite(policy, g.commit, g.seq, logStart, next, now, keys)}
	c, err := rw.write(ctx, policy)
	if err != nil {
		return KeepResult{}, err
	}
	seq := c.First + c.Records
	if err := ps.writeKeepHint(ctx, stream, seq); err != nil {
		ps.d.Log.Warn().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
			Msg("keep: writing the hint checkpoint failed; readers find the new generation by reading on")
	}
	ps.install(&generation{stream: stream, commit: c, seq: seq, next: seq + 1})
	return KeepResult{Written: true, Batches: c.Batches, Records: c.KafkaRecords, Bytes: c.Bytes}, nil
}

// rewrite is one rewrite in progress: the generation it replaces, the new
// cut and where it is in the topic's stream, and the decisions.
type rewrite struct {
	ps  *Partition
	g   *generation
	run KeepRun
	w   *keep.Rewrite
	// cut is the new cut, cutSeq the topic's stream's next sequence
	// number with it; earliestSeq its earliest.
	cut, cutSeq, earliestSeq int64
	// started is when the rewrite began (keep.Commit.StartedMs).
	started int64
	// aborted is the partition's aborted transactions when it began.
	aborted []Aborted
}

// undecided reports whether b is a transaction marker or data of an
// aborted transaction, which a generation does not keep: a generation
// holds decided, committed data only, so a read_committed consumer
// needs no aborted list below the cut and its markers mean nothing
// there.
func (rw *rewrite) undecided(b *Batch) bool {
	info, ok := protocol.ParseBatchHead(b.Data, b.Size())
	if !ok || info.ProducerID < 0 || !info.Transactional() {
		return false
	}
	if info.Control() {
		return true
	}
	for _, a := range rw.aborted {
		if a.ProducerID == info.ProducerID && a.FirstOffset <= info.BaseOffset && info.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}

// errStopScan ends a scan early without an error.
var errStopScan = errors.New("scan stopped")

// each hands fn the batches from the one holding offset from on up to the
// cut, in offset order: the generation's, then the topic's stream's from
// the generation's cut. fn returns false to stop.
func (rw *rewrite) each(ctx context.Context, from int64, fn func(b *Batch) (bool, error)) error {
	ps, g := rw.ps, rw.g
	visit := func(bs []Batch, min int64) error {
		for i := range bs {
			b := &bs[i]
			if b.Data == nil || b.last < min || b.base >= rw.cut || rw.undecided(b) {
				continue
			}
			if more, err := fn(b); err != nil || !more {
				if err == nil {
					err = errStopScan
				}
				return err
			}
		}
		return nil
	}
	var err error
	if g.holds(from) {
		err = ps.scan(ctx, g.stream, g.commit.StartSeq(from), g.seq, nil, func(recs []disclient.Record) error {
			return visit(labelKept(recs), from)
		})
	}
	if from = max(from, g.cut()); err == nil && from < rw.cut {
		var seq int64
		if seq, err = rw.topicSeq(ctx, from); err == nil {
			after, next, nextSeq := int64(noContext), rw.cut, rw.cutSeq
			err = ps.scan(ctx, ps.key.Stream, seq, rw.cutSeq, rw.run.Throttle, func(recs []disclient.Record) error {
				bs, err := labelRecords(recs, after, func(s int64) int64 { return next - (nextSeq - s) })
				if err != nil {
					return err
				}
				if len(bs) > 0 {
					after = bs[len(bs)-1].last
				}
				return visit(bs, from)
			})
		}
	}
	if errors.Is(err, errStopScan) {
		return nil
	}
	return err
}

// topicSeq is where in the topic's stream the batch holding offset is:
// its earliest record when offset is at or before its first batch.
func (rw *rewrite) topicSeq(ctx context.Context, offset int64) (int64, error) {
	first, err := rw.ps.storedEarliest(ctx, rw.earliestSeq)
	if err != nil {
		return 0, err
	}
	if offset <= first {
		return rw.earliestSeq, nil
	}
	return rw.ps.seqFor(ctx, offset)
}

// write runs the rewrite's passes and writes the new generation and its
// commit record, which it returns.
func (rw *rewrite) write(ctx context.Context, p keep.Policy) (*keep.Commit, error) {
	ps, w := rw.ps, rw.w
	budget := func() *protocol.DecompressBudget { return protocol.NewDecompressBudget(ps.d.MaxDecompressedBytes) }
	if p.Delete && p.RetentionBytes >= 0 {
		var total int64
		if err := rw.each(ctx, 0, func(b *Batch) (bool, error) {
			total += int64(b.Size())
			return true, nil
		}); err != nil {
			return nil, err
		}
		w.Sized(total)
	}
	if p.Compact {
		if err := rw.each(ctx, w.MapFrom(), func(b *Batch) (bool, error) {
			decoded, err := protocol.DecodeStoredBatch(b.Data, budget())
			if err != nil {
				return false, err
			}
			return w.Map(&decoded), nil
		}); err != nil {
			return nil, err
		}
	}
	out := &keepPut{ps: rw.ps, stream: rw.g.stream, pid: disclient.PartitionID(ps.key.Partition),
		first: rw.g.next, expect: rw.g.next, marks: &keep.Commit{}}
	err := rw.each(ctx, 0, func(b *Batch) (bool, error) {
		info, ok := protocol.ParseStoredBatchInfo(b.Data)
		if !ok {
			return false, errors.New("keep: a stored batch at sequence number " + strconv.FormatInt(b.seq, 10) + " does not parse")
		}
		data, kept := b.Data, int(info.NumRecords)
		switch w.Decide(info, len(b.Data)) {
		case keep.Drop:
			return true, nil
		case keep.Filter:
			var err error
			if data, kept, err = protocol.FilterBatch(nil, b.Data, w.Keep, budget()); err != nil || kept == 0 {
				return err == nil, err
			}
		}
		n, err := out.add(ctx, data, info.BaseOffset)
		w.Wrote(len(data), kept, n)
		return err == nil, err
	})
	if err == nil {
		err = out.flush(ctx)
	}
	if err != nil {
		return nil, err
	}
	c := w.Commit(out.first, rw.started, rw.run.Writer)
	c.Marks = out.marks.Marks
	return c, out.commit(ctx, c)
}

// keepPut writes a generation's records to the keep partition, each
// expecting the sequence number after the one before.
type keepPut struct {
	ps          *Partition
	stream, pid string
	// first is where the generation starts, expect the sequence number
	// the next record must get.
	first, expect int64
	pending       []disclient.PutRecordsEntry
	bytes         int
	marks         *keep.Commit // collects the marks (keep.Commit.AddMark)
}

// add queues batch, whose base offset is base, and writes what is queued
// once a PutRecords call's worth is; it returns how many DIS records the
// batch takes.
func (k *keepPut) add(ctx context.Context, batch []byte, base int64) (int64, error) {
	parts := fragmentBatch(batch, k.ps.d.MaxRecordBytes)
	k.marks.AddMark(base, k.expect+int64(len(k.pending)))
	for _, p := range parts {
		k.pending = append(k.pending, disclient.PutRecordsEntry{PartitionID: k.pid, Data: p})
		k.bytes += len(p)
	}
	if len(k.pending) >= k.ps.d.PutRecordsMaxRecords || k.bytes >= k.ps.d.PutRecordsMaxBytes {
		return int64(len(parts)), k.flush(ctx)
	}
	return int64(len(parts)), nil
}

// commit writes the commit record c after the generation's batches; it
// must land at c.First + c.Records, or the generation is not whole and
// never current.
func (k *keepPut) commit(ctx context.Context, c *keep.Commit) error {
	k.pending = append(k.pending, disclient.PutRecordsEntry{PartitionID: k.pid, PartitionKey: keep.CommitKey, Data: c.Marshal()})
	return k.flush(ctx)
}

// flush writes what is queued, within PutRecords' limits, and checks that
// every record got the sequence number expected. Records DIS refused for
// traffic control are sent again after a pause.
func (k *keepPut) flush(ctx context.Context) error {
	d := k.ps.d
	for len(k.pending) > 0 {
		end, bytes := 0, 0
		for end < len(k.pending) && (end == 0 || end < d.PutRecordsMaxRecords && bytes+len(k.pending[end].Data) <= d.PutRecordsMaxBytes) {
			bytes += len(k.pending[end].Data)
			end++
		}
		resp, err := d.DIS.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: k.stream, Records: k.pending[:end]})
		stored := 0
		switch {
		case err != nil && !disclient.IsThrottle(disclient.ErrorCode(err)):
			return err
		case err != nil:
		case len(resp.Records) != end:
			return errors.New("DIS answered PutRecords with a different number of records")
		default:
			for _, r := range resp.Records {
				if r.ErrorCode != "" {
					if !disclient.IsThrottle(r.ErrorCode) {
						return errors.New("keep: DIS refused a record: " + r.ErrorCode + " " + r.ErrorMessage)
					}
					break
				}
				if seq, err := strconv.ParseInt(r.SequenceNumber, 10, 64); err != nil || seq != k.expect {
					return ErrRewriteFenced
				}
				k.expect++
				stored++
			}
		}
		k.pending = k.pending[stored:]
		if stored < end && !sleepCtx(ctx, throttleResendPause) {
			return errors.New("keep: DIS throttled the rewrite past its deadline")
		}
	}
	k.bytes = 0
	return nil
}
