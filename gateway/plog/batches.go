package plog

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// readBatches serves Fetch on a kafka-format partition: the stored batches
// from the one holding offset on, unchanged, up to maxBytes (at least one
// when any is there). The client skips the records before its offset, as
// with Kafka. Nothing means nothing is at offset yet.
func (ps *Partition) readBatches(ctx context.Context, offset int64, maxBytes int) ([]Batch, error) {
	if err := ps.ensure(ctx); err != nil {
		return nil, err
	}
	ps.busy.Add(1)
	defer ps.busy.Add(-1)
	ps.mu.Lock()
	if out := ps.fromWindowLocked(offset, maxBytes); out != nil {
		ps.readAheadLocked(out[len(out)-1].last)
		ps.mu.Unlock()
		ps.d.Cache.charge(ps, 0)
		return out, nil
	}
	if offset >= ps.next && time.Since(ps.lastEmpty) < ps.d.PollInterval {
		ps.mu.Unlock()
		return nil, nil
	}
	ps.mu.Unlock()

	ps.readMu.Lock()
	defer ps.readMu.Unlock()
	ps.mu.Lock()
	if out := ps.fromWindowLocked(offset, maxBytes); out != nil {
		ps.mu.Unlock()
		return out, nil
	}
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
	batches, err := labelRecords(recs, after, func(s int64) int64 { return anchor + (s - seq) })
	if err != nil {
		return nil, err
	}
	if len(batches) == 0 {
		// Nothing, or only a batch whose fragments are still being
		// written, which is never served in part.
		if offset >= next {
			ps.mu.Lock()
			ps.lastEmpty = time.Now()
			ps.mu.Unlock()
		}
		return nil, nil
	}
	ps.mu.Lock()
	last := &batches[len(batches)-1]
	if last.seq >= ps.nextSeq {
		// Written by someone else than this gateway's writer.
		ps.next, ps.nextSeq = max(ps.next, last.last+1), last.seq+1
		if ps.maxTSKnown {
			ps.learnMaxTSLocked(batches)
		}
		ps.wakeLocked()
	}
	for i := range batches {
		ps.learnLocked(batches[i].batchLoc)
	}
	delta := ps.addWindowLocked(batches)
	out := ps.fromWindowLocked(offset, maxBytes)
	if out != nil {
		ps.readAheadLocked(out[len(out)-1].last)
	}
	ps.mu.Unlock()
	ps.d.Cache.charge(ps, delta)
	if out == nil {
		// Past what the window keeps: serve the read itself.
		i := 0
		for i < len(batches) && batches[i].last < offset {
			i++
		}
		for n := 0; i < len(batches) && (len(out) == 0 || n+batches[i].Size() <= maxBytes); i++ {
			if batches[i].Data != nil {
				n += batches[i].Size()
				out = append(out, batches[i])
			}
		}
	}
	return out, nil
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

// readAheadLocked loads the records after the cache window while a
// consumer that was just served up to offset served works through them, so
// that its next fetch finds them cached; it does nothing when the window
// holds a read's worth after served, or ends at the partition's end.
func (ps *Partition) readAheadLocked(served int64) {
	n := len(ps.window)
	if n == 0 || ps.window[n-1].seq+1 >= ps.nextSeq {
		return
	}
	ahead := 0
	for i := n - 1; i >= 0 && ps.window[i].last > served; i-- {
		ahead += ps.window[i].Size()
	}
	if ahead >= ps.d.ReadBytes || !ps.ahead.CompareAndSwap(false, true) {
		return
	}
	ps.busy.Add(1)
	ps.d.Go("partition read-ahead", func() {
		defer ps.busy.Add(-1)
		defer ps.ahead.Store(false)
		ctx, cancel := context.WithTimeout(ps.d.Ctx, PutTimeout)
		defer cancel()
		ps.loadAfterWindow(ctx)
	})
}

// loadAfterWindow reads the records that follow the cache window into it.
func (ps *Partition) loadAfterWindow(ctx context.Context) {
	ps.readMu.Lock()
	defer ps.readMu.Unlock()
	ps.mu.Lock()
	n := len(ps.window)
	if n == 0 || ps.window[n-1].seq+1 >= ps.nextSeq {
		ps.mu.Unlock()
		return
	}
	seq, after := ps.window[n-1].seq+1, ps.window[n-1].last
	ps.mu.Unlock()
	recs, err := ps.readAtWhole(ctx, seq)
	if err != nil || len(recs) == 0 {
		return
	}
	batches, err := labelRecords(recs, after, nil)
	if err != nil || len(batches) == 0 {
		return
	}
	ps.mu.Lock()
	for i := range batches {
		ps.learnLocked(batches[i].batchLoc)
	}
	delta := ps.addWindowLocked(batches)
	ps.mu.Unlock()
	ps.d.Cache.charge(ps, delta)
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

// WatermarkApp is the reserved DIS app whose LAST_READ checkpoint on each
// partition of a kafka-format stream holds the partition's next Kafka
// offset in its metadata (docs/record-formats.md), so offsets go on
// growing after retention has emptied the partition. No group maps to it:
// encoded group app names end in a hash.
const WatermarkApp = "disgw-offsets"

// readWatermark returns the next offset the watermark checkpoint holds, or
// -1 when there is none.
func (ps *Partition) readWatermark(ctx context.Context) (int64, error) {
	cp, err := ps.d.DIS.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{
		AppName: WatermarkApp, StreamName: ps.key.Stream,
		PartitionID: disclient.PartitionID(ps.key.Partition), CheckpointType: disclient.CheckpointLastRead,
	})
	switch {
	case disclient.IsCode(err, disclient.CodeAppNotFound), disclient.IsCode(err, disclient.CodeNoCheckpoint):
		return -1, nil
	case err != nil:
		return 0, err
	}
	n, perr := strconv.ParseInt(cp.Metadata, 10, 64)
	if perr != nil || n < 0 {
		return -1, nil
	}
	return n, nil
}

// writeWatermark stores the next offset in the watermark checkpoint, at the
// partition's last sequence number so that it is inside the valid range.
func (ps *Partition) writeWatermark(ctx context.Context) {
	ps.mu.Lock()
	next, nextSeq, earliest, have := ps.next, ps.nextSeq, ps.earliestSeq, ps.watermark
	ps.mu.Unlock()
	if nextSeq == 0 || next <= have {
		return
	}
	// The last record, or where the next one goes when retention has
	// emptied the partition: DIS refuses a checkpoint outside its range.
	at := max(nextSeq-1, earliest)
	req := &disclient.CommitCheckpointRequest{
		AppName: WatermarkApp, CheckpointType: disclient.CheckpointLastRead, StreamName: ps.key.Stream,
		PartitionID: disclient.PartitionID(ps.key.Partition), SequenceNumber: strconv.FormatInt(at, 10),
		Metadata: strconv.FormatInt(next, 10),
	}
	err := ps.d.EnsureApp(ctx, WatermarkApp)
	if err == nil {
		err = ps.d.DIS.CommitCheckpoint(ctx, req)
		if disclient.IsCode(err, disclient.CodeAppNotFound) {
			ps.d.ForgetApp(WatermarkApp)
			if err = ps.d.EnsureApp(ctx, WatermarkApp); err == nil {
				err = ps.d.DIS.CommitCheckpoint(ctx, req)
			}
		}
	}
	if err != nil {
		ps.d.Log.Warn().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
			Msg("writing the partition's offset watermark checkpoint failed; it is written again after the next produce")
		return
	}
	ps.mu.Lock()
	ps.watermark = max(ps.watermark, next)
	ps.watermarkAt = time.Now()
	ps.mu.Unlock()
}

// scheduleWatermark has the watermark written within
// Config.WatermarkInterval of a write, at most once per interval.
func (ps *Partition) scheduleWatermark() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.watermarkDo || ps.next <= ps.watermark {
		return
	}
	ps.watermarkDo = true
	delay := max(ps.d.WatermarkInterval-time.Since(ps.watermarkAt), 0)
	time.AfterFunc(delay, func() {
		ps.d.Go("offset watermark", func() {
			defer func() {
				ps.mu.Lock()
				ps.watermarkDo = false
				ps.mu.Unlock()
			}()
			ctx, cancel := context.WithTimeout(ps.d.Ctx, ps.d.RequestTimeout)
			defer cancel()
			ps.writeWatermark(ctx)
		})
	})
}
