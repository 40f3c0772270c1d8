package plog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// FetchPart is one partition of a Fetch in progress: what the handler asks
// for, and what Fetch found.
type FetchPart struct {
	Partition *Partition
	Kafka     bool  // a kafka-format partition; else raw
	Offset    int64 // the fetch offset
	Limit     int   // the most bytes the partition may answer with
	// Committed is read_committed (isolation level 1): batches below the
	// last stable offset only, with the aborted transactions among them.
	Committed bool
	// Earliest and Next are the partition's sequence number range as the
	// topic's description last had it; Fetch describes it again when the
	// offset is outside.
	Earliest, Next int64

	// The outcome: raw records or kafka-format batches, their bytes, and
	// the partition's error code, high watermark and log start offset
	// (-1 when unknown).
	Records        []protocol.Record
	Batches        []Batch
	Bytes          int
	ErrorCode      int16
	HighWatermark  int64
	LogStartOffset int64
	// LastStableOffset is the partition's (the high watermark when it
	// has no transactions), -1 when unknown; Aborted lists, for a
	// read_committed read, the aborted transactions overlapping the
	// batches returned.
	LastStableOffset int64
	Aborted          []Aborted
	// Done is set once the partition has records or an error; Throttled
	// when DIS refused to read it for traffic control, and it answers
	// empty so that the response can ask the client to back off.
	Done, Throttled bool
}

// Fetch reads every part, long-polling until minBytes are there, deadline
// has passed, ctx is done or stop is closed, then keeps the answer within
// maxBytes. A long poll registers one waiter with every partition still
// waiting, which an append wakes, with no goroutine per partition.
func (tn *Tenant) Fetch(ctx context.Context, parts []*FetchPart, deadline time.Time, minBytes, maxBytes int, stop <-chan struct{}) {
	wake := make(chan struct{}, 1)
	for {
		// Read every partition still waiting at once: one DIS round trip
		// per fetch, not one per partition.
		var wg sync.WaitGroup
		for _, p := range parts {
			if p.Done {
				continue
			}
			wg.Add(1)
			tn.d.Go("fetch partition", func() {
				defer wg.Done()
				p.read(ctx)
			})
		}
		wg.Wait()
		total := 0
		var waiting []*Partition
		for _, p := range parts {
			total += p.Bytes
			if !p.Done {
				waiting = append(waiting, p.Partition)
			}
		}
		if total >= max(minBytes, 1) || len(waiting) == 0 || !time.Now().Before(deadline) {
			break
		}
		for _, ps := range waiting {
			ps.register(wake)
		}
		ok := waitWake(ctx, stop, wake, deadline, tn.d.PollInterval)
		for _, ps := range waiting {
			ps.unregister(wake)
		}
		select {
		case <-wake:
		default:
		}
		if !ok {
			break
		}
	}
	trimToMaxBytes(parts, maxBytes)
}

// waitWake blocks until wake is signalled, poll passes, or deadline. It
// returns false when ctx is done or stop closes.
func waitWake(ctx context.Context, stop <-chan struct{}, wake <-chan struct{}, deadline time.Time, poll time.Duration) bool {
	d := min(time.Until(deadline), poll)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-wake:
	case <-timer.C:
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
	return true
}

// trimToMaxBytes keeps the encoded response within max_bytes, in request
// order; the first record always stays so that a consumer makes progress
// past a record larger than its limit, as Kafka returns the first batch
// whatever its size (a record is at most MaxRecordBytes). Dropped records
// stay in the read cache for the next fetch.
func trimToMaxBytes(parts []*FetchPart, maxBytes int) {
	total := 0
	for _, p := range parts {
		if len(p.Batches) > 0 {
			keep := 0
			for keep < len(p.Batches) {
				n := p.Batches[keep].Size()
				if total > 0 && total+n > maxBytes {
					break
				}
				total += n
				keep++
			}
			p.Batches = p.Batches[:keep]
			continue
		}
		keep := 0
		for keep < len(p.Records) {
			r := &p.Records[keep]
			n := protocol.RecordSizeInBatch(r, int32(r.Offset-p.Records[0].Offset), r.Timestamp-p.Records[0].Timestamp)
			if keep == 0 {
				n += protocol.BatchHeaderSize
			}
			if total > 0 && total+n > maxBytes {
				break
			}
			total += n
			keep++
		}
		p.Records = p.Records[:keep]
	}
}

// read reads once for p. A partition is done once it has records or an
// error.
func (p *FetchPart) read(ctx context.Context) {
	if p.Kafka {
		p.readBatches(ctx)
		return
	}
	ps := p.Partition
	ps.ObserveHWM(p.Next)
	p.LogStartOffset = p.Earliest
	hwm := ps.KnownHWM()
	if p.Offset < p.Earliest || p.Offset > hwm {
		// The description may be stale; look again before refusing.
		if earliest, next, ok, err := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition); err == nil && ok {
			p.Earliest, p.Next = earliest, next
			ps.ObserveHWM(next)
			hwm = ps.KnownHWM()
			p.LogStartOffset = earliest
		}
		if p.Offset < p.Earliest || p.Offset > hwm {
			p.outOfRange(p.Earliest, hwm)
			return
		}
	}
	recs, err := ps.reader.reads.read(ctx, p.Offset, p.Limit)
	hwm = ps.KnownHWM()
	p.HighWatermark, p.LastStableOffset = hwm, hwm
	if err != nil {
		if errors.Is(err, errOutOfRange) {
			if earliest, next, ok, rerr := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition); rerr == nil && ok {
				p.Earliest, p.Next = earliest, next
			}
			p.outOfRange(p.Earliest, max(p.Next, hwm))
			return
		}
		if ctx.Err() != nil {
			return
		}
		if disclient.IsThrottle(disclient.ErrorCode(err)) {
			p.Throttled, p.Done = true, true
			return
		}
		p.fail(err)
		return
	}
	if len(recs) == 0 {
		return
	}
	n := 0
	for i := range recs {
		n += recordSize(&recs[i])
	}
	p.Records, p.Bytes, p.Done = recs, n, true
}

// readBatches reads once for p, a partition of a kafka-format topic: the
// stored batches from the one holding the fetch offset on.
func (p *FetchPart) readBatches(ctx context.Context) {
	ps := p.Partition
	fail := func(err error) {
		if ctx.Err() != nil {
			return
		}
		p.fail(err)
	}
	bounds := func() (int64, int64, error) {
		earliest, err := ps.Earliest(ctx, p.Earliest)
		if err != nil {
			return 0, 0, err
		}
		next, err := ps.Next(ctx)
		return earliest, next, err
	}
	earliest, next, err := bounds()
	if err != nil {
		fail(err)
		return
	}
	if p.Offset < earliest || p.Offset > next {
		// The description may be stale, or someone else wrote: look again
		// before refusing.
		if earliestSeq, nextSeq, ok, err := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition); err == nil && ok {
			p.Earliest, p.Next = earliestSeq, nextSeq
			_, rerr := ps.readBatches(ctx, next, 1)
			if rerr == nil {
				earliest, next, rerr = bounds()
			}
			if rerr != nil {
				fail(rerr)
				return
			}
		}
		if p.Offset < earliest || p.Offset > next {
			p.outOfRange(earliest, next)
			return
		}
	}
	p.LogStartOffset = earliest
	// Until the transaction state is rebuilt a read_committed read
	// waits, answering nothing rather than from a partial state.
	lso, err := ps.LastStableOffset(ctx)
	if err != nil {
		if p.Committed {
			fail(err)
			return
		}
		lso = next
	}
	p.HighWatermark, p.LastStableOffset = next, lso
	if p.Committed && p.Offset >= lso {
		return
	}
	batches, err := ps.readBatches(ctx, p.Offset, p.Limit)
	hwm := ps.KnownNext()
	p.HighWatermark = hwm
	if errors.Is(err, errOutOfRange) {
		p.outOfRange(earliest, hwm)
		return
	}
	if err != nil {
		fail(err)
		return
	}
	if p.Committed {
		// A batch reaching the last stable offset is not decided yet:
		// it and what follows wait.
		keep := 0
		for keep < len(batches) && batches[keep].last < lso {
			keep++
		}
		batches = batches[:keep]
		if len(batches) > 0 {
			p.Aborted = ps.AbortedIn(batches[0].base, batches[len(batches)-1].last+1)
		}
	}
	if len(batches) == 0 {
		return
	}
	n := 0
	for i := range batches {
		n += batches[i].Size()
	}
	p.Batches, p.Bytes, p.Done = batches, n, true
}

// outOfRange answers p with OFFSET_OUT_OF_RANGE and the partition's range.
func (p *FetchPart) outOfRange(earliest, hwm int64) {
	p.ErrorCode = kerr.OffsetOutOfRange.Code
	p.LogStartOffset = earliest
	p.HighWatermark = hwm
	if p.LastStableOffset < 0 || p.LastStableOffset > hwm {
		p.LastStableOffset = hwm
	}
	p.Done = true
}

// fail answers p with the error code of a failed read.
func (p *FetchPart) fail(err error) {
	ps := p.Partition
	ps.d.Log.Warn().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).Msg("fetch: reading DIS failed")
	p.ErrorCode = kerr.OffsetOutOfRange.Code
	if !errors.Is(err, errOutOfRange) {
		p.ErrorCode = ps.d.KafkaCode(err)
	}
	p.Done = true
}
