package plog

import (
	"context"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Offset lookups: where an offset is in DIS, and the offsets ListOffsets
// and committed offsets ask for.

// locateLocked finds the DIS record holding offset (the first whose last
// offset is at or after it) from the index: its sequence number when the
// index tells, or the range [lo, hi] it must be in.
func (ps *Partition) locateLocked(offset int64) (seq, lo, hi int64, exact bool) {
	n := len(ps.index)
	j := sort.Search(n, func(i int) bool { return ps.index[i].last >= offset })
	lo, hi = max(ps.earliestSeq, 0), ps.nextSeq-1
	if j > 0 {
		prev := ps.index[j-1]
		if prev.last+1 == offset {
			// Right after a known record, as a following consumer asks.
			return prev.seq + 1, 0, 0, true
		}
		lo = max(lo, prev.seq+1)
	}
	if j < n {
		e := ps.index[j]
		if e.base <= offset || e.startSeq() <= lo {
			return e.startSeq(), 0, 0, true
		}
		hi = e.startSeq()
	}
	if lo >= hi {
		return hi, 0, 0, true
	}
	return 0, lo, hi, false
}

// seqFor returns the sequence number of the DIS record holding offset,
// which must be below the next offset: from the index, or by binary search
// over the partition, reading single records at a sequence number.
func (ps *Partition) seqFor(ctx context.Context, offset int64) (int64, error) {
	for range 64 {
		ps.mu.Lock()
		seq, lo, hi, exact := ps.locateLocked(offset)
		next, nextSeq := ps.next, ps.nextSeq
		ps.mu.Unlock()
		if exact {
			return seq, nil
		}
		mid := lo + (hi-lo)/2
		// One record before mid gives the run the context that tells a
		// stale copy (labelRecords); it is not learned itself.
		from := max(mid-1, ps.earliestSeqOr(lo))
		ps.d.OffsetProbe()
		recs, err := ps.probe(ctx, from)
		if err != nil {
			return 0, err
		}
		if len(recs) == 0 {
			return 0, errOutOfRange
		}
		batches, err := labelRecords(recs, noContext, func(seq int64) int64 { return next - (nextSeq - seq) })
		if err != nil {
			return 0, err
		}
		if from < mid && len(batches) > 1 {
			batches = batches[1:]
		}
		ps.mu.Lock()
		for i := range batches {
			ps.learnLocked(batches[i].batchLoc)
		}
		ps.mu.Unlock()
	}
	return 0, errors.New("the search for an offset in DIS did not converge")
}

// earliestSeqOr is the earliest sequence number known, or lo.
func (ps *Partition) earliestSeqOr(lo int64) int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.earliestSeq < 0 {
		return lo
	}
	return ps.earliestSeq
}

// probe reads a few records from seq on, for the binary search.
func (ps *Partition) probe(ctx context.Context, seq int64) ([]disclient.Record, error) {
	dis := ps.d.DIS
	c, err := dis.GetCursor(ctx, &disclient.GetCursorRequest{
		StreamName: ps.key.Stream, PartitionID: disclient.PartitionID(ps.key.Partition),
		CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: strconv.FormatInt(seq, 10),
	})
	if err != nil {
		if disclient.IsCode(err, disclient.CodeSequenceOutOfRange) {
			return nil, errOutOfRange
		}
		return nil, err
	}
	return ps.readWhole(ctx, c.PartitionCursor)
}

// readWhole reads records from cursor, going on while they end inside a
// batch stored in fragments so that it is read whole, until DIS has no
// more.
func (ps *Partition) readWhole(ctx context.Context, cursor string) ([]disclient.Record, error) {
	var out []disclient.Record
	for {
		resp, err := ps.d.DIS.GetRecords(ctx, cursor, ps.d.ReadBytes)
		if err != nil {
			return nil, err
		}
		out = append(out, resp.Records...)
		if len(resp.Records) == 0 || resp.NextPartitionCursor == "" || incompleteTail(out) == len(out) {
			return out, nil
		}
		cursor = resp.NextPartitionCursor
	}
}

// Earliest is the partition's log start offset: the base offset of
// the batch at its earliest sequence number, or the next offset when it is
// empty, or where DeleteRecords or retention.ms moved it when that is
// later. earliestSeq
// comes from the catalog.
func (ps *Partition) Earliest(ctx context.Context, earliestSeq int64) (int64, error) {
	off, err := ps.storedEarliest(ctx, earliestSeq)
	if err != nil {
		return 0, err
	}
	if err := ps.applyRetention(ctx); err != nil {
		return 0, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if start, ok := ps.genLogStartLocked(); ok {
		// Below the cut the generation is all there is, whatever the
		// topic's stream still holds or DIS expired.
		off = start
	}
	return max(off, ps.logStart), nil
}

// storedEarliest is the first offset DIS still holds: Earliest without
// DeleteRecords.
func (ps *Partition) storedEarliest(ctx context.Context, earliestSeq int64) (int64, error) {
	if err := ps.ensure(ctx); err != nil {
		return 0, err
	}
	ps.mu.Lock()
	if earliestSeq >= ps.nextSeq {
		defer ps.mu.Unlock()
		return ps.next, nil
	}
	if ps.earliestSeq == earliestSeq {
		defer ps.mu.Unlock()
		return ps.earliestOff, nil
	}
	i := sort.Search(len(ps.index), func(i int) bool { return ps.index[i].seq >= earliestSeq })
	if i < len(ps.index) && ps.index[i].seq == earliestSeq {
		ps.earliestSeq, ps.earliestOff = earliestSeq, ps.index[i].base
		defer ps.mu.Unlock()
		return ps.earliestOff, nil
	}
	next, nextSeq := ps.next, ps.nextSeq
	ps.mu.Unlock()
	recs, err := ps.probe(ctx, earliestSeq)
	if errors.Is(err, errOutOfRange) {
		// Retention moved on since the catalog looked: look again, once.
		earliest, _, ok, rerr := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition)
		if rerr != nil || !ok || earliest <= earliestSeq {
			return 0, err
		}
		return ps.storedEarliest(ctx, earliest)
	}
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return next, nil
	}
	batches, err := labelRecords(recs, noContext, func(seq int64) int64 { return next - (nextSeq - seq) })
	if err != nil {
		return 0, err
	}
	if len(batches) == 0 {
		return next, nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i := range batches {
		ps.learnLocked(batches[i].batchLoc)
	}
	ps.earliestSeq, ps.earliestOff = batches[0].seq, batches[0].base
	return ps.earliestOff, nil
}

// Next is the high watermark, recovering it on first use.
func (ps *Partition) Next(ctx context.Context) (int64, error) {
	if err := ps.ensure(ctx); err != nil {
		return 0, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.next, nil
}

// KnownEarliest is the log start offset as last learned, or -1: what a
// produce answer says without a DIS call.
func (ps *Partition) KnownEarliest() int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if start, ok := ps.genLogStartLocked(); ok {
		return max(start, ps.logStart)
	}
	if ps.earliestSeq < 0 {
		return -1
	}
	return max(ps.earliestOff, ps.logStart)
}

// KnownNext is the high watermark when recovered, or -1.
func (ps *Partition) KnownNext() int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.recovered {
		return -1
	}
	return ps.next
}

// CheckpointSeq is the sequence number a committed offset's checkpoint
// holds (docs/groups.md): the DIS record holding the offset, or the last
// record when the offset is the end, so it is inside the partition's valid
// range as DIS requires.
func (ps *Partition) CheckpointSeq(ctx context.Context, earliestSeq, offset int64) (int64, error) {
	next, err := ps.Next(ctx)
	if err != nil {
		return 0, err
	}
	ps.mu.Lock()
	nextSeq := ps.nextSeq
	ps.mu.Unlock()
	if nextSeq <= earliestSeq {
		return nextSeq, nil
	}
	if offset >= next {
		return nextSeq - 1, nil
	}
	earliest, err := ps.Earliest(ctx, earliestSeq)
	if err != nil {
		return 0, err
	}
	if offset <= earliest {
		return earliestSeq, nil
	}
	seq, err := ps.seqFor(ctx, offset)
	if errors.Is(err, errOutOfRange) {
		return earliestSeq, nil
	}
	return seq, err
}

// OffsetOfSeq is the first offset of the DIS record at seq, or the next
// offset when there is none.
func (ps *Partition) OffsetOfSeq(ctx context.Context, seq int64) (int64, error) {
	next, err := ps.Next(ctx)
	if err != nil {
		return 0, err
	}
	recs, err := ps.probe(ctx, seq)
	if err != nil || len(recs) == 0 {
		return next, nil
	}
	ps.mu.Lock()
	nextSeq := ps.nextSeq
	ps.mu.Unlock()
	batches, err := labelRecords(recs, noContext, func(s int64) int64 { return next - (nextSeq - s) })
	if err != nil || len(batches) == 0 {
		return next, err
	}
	return batches[0].base, nil
}

// ByTimestamp answers ListOffsets for a timestamp on a kafka-format
// partition: the offset and timestamp of the first record whose timestamp
// reaches ts, or -1 and -1 when there is none. DIS's AT_TIMESTAMP cursor
// finds the first batch that may hold it (a DIS record's timestamp is its
// batch's max timestamp), and in it the records are looked through.
func (ps *Partition) ByTimestamp(ctx context.Context, ts int64) (offset, timestamp int64, err error) {
	if err := ps.ensure(ctx); err != nil {
		return -1, -1, err
	}
	if offset, timestamp, err = ps.genByTimestamp(ctx, ts); err != nil || offset >= 0 {
		return offset, timestamp, err
	}
	c, ts, err := ps.TimestampCursor(ctx, ts)
	if err != nil {
		return -1, -1, err
	}
	recs, err := ps.readWhole(ctx, c.PartitionCursor)
	if err != nil || len(recs) == 0 {
		return -1, -1, err
	}
	ps.mu.Lock()
	start, nextSeq := ps.logStart, ps.nextSeq
	ps.mu.Unlock()
	offset, timestamp, err = ps.firstRecordFrom(recs, ts, start)
	if err != nil || offset >= 0 || start == 0 {
		return offset, timestamp, err
	}
	// The records found lie before the log start DeleteRecords set: look
	// on from there, batch by batch, to the end.
	seq, err := ps.seqFor(ctx, start)
	if errors.Is(err, errOutOfRange) {
		return -1, -1, nil
	}
	for err == nil && seq < nextSeq {
		if recs, err = ps.readRange(ctx, seq, nextSeq); err != nil || len(recs) == 0 {
			break
		}
		if offset, timestamp, err = ps.firstRecordFrom(recs, ts, start); err != nil || offset >= 0 {
			return offset, timestamp, err
		}
		seq, err = strconv.ParseInt(recs[len(recs)-1].SequenceNumber, 10, 64)
		seq++
	}
	return -1, -1, err
}

// TimestampCursor opens an AT_TIMESTAMP cursor on the partition. A timestamp
// DIS calls expired (records from it on are past retention) opens the
// partition at its earliest record instead, and ts becomes math.MinInt64:
// Kafka answers a timestamp before the log start with the first retained
// record.
func (ps *Partition) TimestampCursor(ctx context.Context, ts int64) (*disclient.GetCursorResponse, int64, error) {
	cr := &disclient.GetCursorRequest{StreamName: ps.key.Stream, PartitionID: disclient.PartitionID(ps.key.Partition),
		CursorType: disclient.CursorAtTimestamp, Timestamp: ts}
	c, err := ps.d.DIS.GetCursor(ctx, cr)
	if isTimestampExpired(err) {
		cr.CursorType, cr.Timestamp, ts = disclient.CursorTrimHorizon, 0, math.MinInt64
		c, err = ps.d.DIS.GetCursor(ctx, cr)
	}
	return c, ts, err
}

// MaxTimestamp answers ListOffsets -3 on a kafka-format partition whose
// earliest sequence number is earliestSeq: the offset and timestamp of the
// first record with the partition's largest timestamp, or -1 and -1. The
// partition learns it from writes; the first ask scans its batch headers.
// A kept partition's records below its generation's cut count from the
// generation, and the topic's stream from the cut on.
func (ps *Partition) MaxTimestamp(ctx context.Context, earliestSeq int64) (offset, timestamp int64, err error) {
	if err := ps.ensure(ctx); err != nil {
		return -1, -1, err
	}
	genOffset, genTS, err := ps.genMaxTimestamp(ctx)
	if err != nil {
		return -1, -1, err
	}
	offset, timestamp, err = ps.streamMaxTimestamp(ctx, earliestSeq, ps.currentGen().cut())
	if err == nil && genOffset >= 0 && (offset < 0 || genTS >= timestamp) {
		return genOffset, genTS, nil
	}
	return offset, timestamp, err
}

// streamMaxTimestamp is MaxTimestamp over the topic's stream, from offset
// from (a kept partition's cut) or the log start, whichever is later.
func (ps *Partition) streamMaxTimestamp(ctx context.Context, earliestSeq, from int64) (offset, timestamp int64, err error) {
	ps.mu.Lock()
	known, seq, nextSeq, next, start := ps.maxTSKnown, ps.maxTSSeq, ps.nextSeq, ps.next, max(ps.logStart, from)
	ps.mu.Unlock()
	if start > 0 {
		// Only batches from the one holding the log start count.
		startSeq, err := ps.seqFor(ctx, start)
		if errors.Is(err, errOutOfRange) {
			return -1, -1, nil
		}
		if err != nil {
			return -1, -1, err
		}
		earliestSeq = max(earliestSeq, startSeq)
	}
	if !known || seq < earliestSeq {
		maxTS, maxSeq := int64(-1), int64(-1)
		for from := earliestSeq; from < nextSeq; {
			recs, err := ps.readRange(ctx, from, nextSeq)
			if err != nil {
				return -1, -1, err
			}
			if len(recs) == 0 {
				break
			}
			batches, err := labelRecords(recs, noContext, func(s int64) int64 { return next - (nextSeq - s) })
			if err != nil {
				return -1, -1, err
			}
			if len(batches) == 0 {
				break
			}
			for i := range batches {
				if batches[i].maxTS > maxTS || maxSeq < 0 {
					maxTS, maxSeq = batches[i].maxTS, batches[i].startSeq()
				}
			}
			from = batches[len(batches)-1].seq + 1
		}
		ps.mu.Lock()
		if ps.nextSeq == nextSeq {
			ps.maxTS, ps.maxTSSeq, ps.maxTSKnown = maxTS, maxSeq, true
		}
		ps.mu.Unlock()
		seq = maxSeq
	}
	if seq < 0 {
		return -1, -1, nil
	}
	ps.mu.Lock()
	maxTS := ps.maxTS
	ps.mu.Unlock()
	recs, err := ps.probe(ctx, seq)
	if err != nil || len(recs) == 0 {
		return -1, -1, err
	}
	return ps.firstRecordFrom(recs, maxTS, start)
}

// firstRecordFrom finds the first record of recs at or after offset from
// whose timestamp is at least ts, its offset and timestamp, or -1 and -1:
// inside a batch, the records are decoded to find it.
func (ps *Partition) firstRecordFrom(recs []disclient.Record, ts, from int64) (offset, timestamp int64, err error) {
	ps.mu.Lock()
	next, nextSeq := ps.next, ps.nextSeq
	ps.mu.Unlock()
	batches, err := labelRecords(recs, noContext, func(seq int64) int64 { return next - (nextSeq - seq) })
	if err != nil {
		return -1, -1, err
	}
	return ps.firstInBatches(batches, ts, from)
}

// firstInBatches is the offset and timestamp of the first record of
// batches at or after offset from with a timestamp at or after ts, or -1
// and -1.
func (ps *Partition) firstInBatches(batches []Batch, ts, from int64) (offset, timestamp int64, err error) {
	for i := range batches {
		if batches[i].maxTS < ts || batches[i].last < from {
			continue
		}
		decoded, err := protocol.DecodeBatches(batches[i].Data, protocol.NewDecompressBudget(ps.d.MaxDecompressedBytes))
		if err != nil {
			return -1, -1, err
		}
		for _, b := range decoded {
			for _, r := range b.Records {
				if r.Timestamp >= ts && r.Offset >= from {
					return r.Offset, r.Timestamp, nil
				}
			}
		}
	}
	return -1, -1, nil
}

// isTimestampExpired reports whether err is DIS's answer to an AT_TIMESTAMP
// cursor before retention: DIS.4300, a code DIS shares with other request
// errors, told apart by its message as the Java SDK does.
func isTimestampExpired(err error) bool {
	var de *disclient.Error
	return errors.As(err, &de) && de.Code == disclient.CodeRequestError && strings.Contains(de.Message, "timestamp is expired")
}
