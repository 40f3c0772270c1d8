package plog

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// writeBatches writes the ops of a kafka-format partition in one PutRecords
// call: each batch, as its producer sent it, is one DIS record, and the
// writer gives it its base offset, in order, from the partition's next
// offset (recovered from DIS on first use). Only the base offset and the
// partition leader epoch change, both outside the CRC.
//
// A batch larger than one DIS record is stored in fragments, consecutive
// records (fragments.go), in as few calls as the PutRecords limits allow.
// The writer is the partition's only one and has one call in flight, so
// the fragments get consecutive sequence numbers unless someone else
// writes in between, which the fence below finds like any other write
// between two of this gateway's; a batch DIS stored part of is sent on
// whatever its deadline (put), and one whose write failed half way is
// left as fragments that break off, which hold no offsets.
//
// Against the in-process DIS a call that went as planned is handed to the
// completer as soon as DIS has sequenced it, and the writer goes on to its
// next call while the fsync runs (writer_pipeline.go); any other
// outcome is handled here once every earlier call is completed and this
// one's records are durable.
func (w *partitionWriter) writeBatches(ops []*Append) {
	ps := w.state
	deadline := callDeadline(ops)
	var cost int64
	for _, op := range ops {
		cost += op.queueCost()
	}
	ctx, cancel := context.WithDeadline(w.d.Ctx, deadline)
	err := ps.ensure(ctx)
	cancel()
	if err != nil {
		w.d.Log.Warn().Err(err).Str("topic", w.key.Topic).Int32("partition", w.key.Partition).
			Msg("recovering the partition's next offset from DIS failed")
		code := kerr.KafkaStorageError.Code
		var de *disclient.Error
		if errors.As(err, &de) {
			code = w.d.KafkaCode(err)
		}
		for _, op := range ops {
			op.fail(code, "disgw could not recover the partition's offsets from DIS: "+err.Error())
			if op.ProducerID >= 0 {
				w.producerFailed(op)
			}
		}
		w.d.Queues.release(w, cost)
		for _, op := range ops {
			op.finish()
		}
		return
	}
	w.awaitPipeline(pipelineDepth - 1)
	off, wantSeq, pipelined := w.frontier()
	if !pipelined {
		ps.mu.Lock()
		off, wantSeq = ps.next, ps.nextSeq
		ps.mu.Unlock()
	}
	now := time.Now().UnixMilli()
	var entries []disclient.PutRecordsEntry
	var ends []int // where each batch's records end in entries
	for _, op := range ops {
		op.BaseOffset = off
		for i := range op.Entries {
			e := &op.Entries[i]
			protocol.StampBatch(e.Data, off, 0)
			if op.LogAppendTime {
				protocol.SetLogAppendTime(e.Data, now)
				op.AppendTime = now
				ts := now
				e.Timestamp = &ts
			}
			info, _ := protocol.ParseBatchInfo(e.Data)
			off = info.LastOffset() + 1
			entries = append(entries, batchRecords(e.Data, e.PartitionID, *e.Timestamp, w.d.MaxRecordBytes)...)
			ends = append(ends, len(entries))
		}
	}
	out := w.put(deadline, entries, ends, true)
	results, code, msg, throttled := out.whole()
	var lost *callFailure
	if code == 0 && len(results) != len(entries) {
		code, msg = kerr.UnknownServerError.Code, "DIS answered PutRecords with a different number of records"
	}
	if code != 0 {
		// What landed is read back from DIS, which shows only durable
		// records: first every earlier call is completed and what this
		// one stored is durable, or found not to be.
		_ = w.settle(out.wait, nil)
		out.wait = nil
		// The call failed as a whole, yet DIS may have stored some of
		// its records: look, so that what landed is answered as written
		// and what did not as failed, never both.
		if landed, ok := w.landed(entries, wantSeq); ok {
			results, lost = landed, &callFailure{code: code, msg: msg, throttled: throttled}
			code = 0
		} else {
			ps.forget()
		}
	}
	var written []Batch
	var owners []*Append           // the op of each written batch
	failed := make(map[int64]bool) // producers with a failed batch in this call
	scattered := false             // a batch's fragments are not consecutive
	b := 0                         // the op's first batch in ends
	for _, op := range ops {
		n := len(op.Entries)
		if code != 0 {
			op.fail(code, msg)
			op.Throttled = throttled
		} else {
			before := len(written)
			var apart bool
			written, apart = op.takeBatchResults(results, ends[b:b+n], batchStart(ends, b), lost, written, w.d.KafkaCode)
			scattered = scattered || apart
			for range len(written) - before {
				owners = append(owners, op)
			}
		}
		b += n
		if op.ProducerID >= 0 && failed[op.ProducerID] && op.ErrCode == 0 {
			w.d.Log.Error().Str("topic", w.key.Topic).Int32("partition", w.key.Partition).Int64("producer_id", op.ProducerID).
				Int64("base_offset", op.BaseOffset).
				Msg("DIS failed a batch of an idempotent producer and stored a later one of the same call: the log holds this producer's batches out of order (Config.PutRecordsKeepsOrder is wrong for this DIS)")
		}
		if op.ErrCode != 0 {
			if op.ProducerID >= 0 {
				failed[op.ProducerID] = true
				w.producerFailed(op)
			}
		}
	}
	if out.wait != nil {
		if len(failed) == 0 && !scattered && inSequence(written, wantSeq) && allWritten(ops) {
			// In sequence and all written: the last batch holds the
			// call's last offset and sequence number.
			last := &written[len(written)-1]
			w.pipelineCall(&pipelinedCall{ops: ops, written: written, cost: cost, wait: out.wait,
				next: last.last + 1, nextSeq: last.seq + 1})
			return
		}
		if err := w.settle(out.wait, ops); err != nil {
			written, results = nil, nil
		}
	}
	expect := wantSeq
	for j := range written {
		if written[j].startSeq() != expect || scattered {
			w.d.Log.Warn().Str("topic", w.key.Topic).Int32("partition", w.key.Partition).
				Int64("sequence_number", written[j].startSeq()).Int64("expected", expect).
				Msg("someone else wrote this partition between two writes of this gateway; batches whose offsets overlap theirs are written again after them")
			written = w.fence(deadline, written, owners, wantSeq)
			break
		}
		expect = written[j].seq + 1
	}
	ps.appended(written)
	ps.storedUpTo(results)
	if len(written) > 0 {
		ps.scheduleWatermark()
	}
	w.countProduced(ops)
	w.d.Queues.release(w, cost)
	for _, op := range ops {
		op.finish()
	}
}

// settle waits until every pipelined call is completed, then for wait,
// the durability of a call not handed to the completer (nil: nothing to
// wait for). If that fails, the ops of ops that were written fail
// (failUndurable), and it returns the error.
func (w *partitionWriter) settle(wait func() error, ops []*Append) error {
	w.awaitPipeline(0)
	if wait == nil {
		return nil
	}
	err := wait()
	if err != nil {
		w.failUndurable(ops, err)
	}
	return err
}

// inSequence reports whether written, in order, starts at sequence number
// from and follows itself without a gap: nobody else wrote in between.
func inSequence(written []Batch, from int64) bool {
	if len(written) == 0 {
		return false
	}
	for j := range written {
		if written[j].startSeq() != from {
			return false
		}
		from = written[j].seq + 1
	}
	return true
}

// allWritten reports whether every op was written.
func allWritten(ops []*Append) bool {
	for _, op := range ops {
		if op.ErrCode != 0 {
			return false
		}
	}
	return true
}

// callFailure is how a PutRecords call failed whose stored records were
// then found (partitionWriter.landed): the records not found failed so.
type callFailure struct {
	code      int16
	msg       string
	throttled bool
}

// batchStart is where batch b's records begin in a call whose batches end
// at ends.
func batchStart(ends []int, b int) int {
	if b == 0 {
		return 0
	}
	return ends[b-1]
}

// takeBatchResults takes the per-record results of a kafka op, whose
// batches' records begin at from and end at ends in results: every batch
// DIS stored whole goes into written, as a copy that aliases no request
// frame; the op fails with the first record's error, as kafkaCode maps
// it. A result with neither a sequence number nor an error is a record of
// the failed call lost that did not land. scattered reports a batch whose
// fragments DIS did not store at consecutive sequence numbers.
func (op *Append) takeBatchResults(results []disclient.PutRecordsResult, ends []int, from int, lost *callFailure, written []Batch, kafkaCode func(error) int16) (_ []Batch, scattered bool) {
	for j, end := range ends {
		rs := results[from:end]
		from = end
		first, last, bad := storedSeqs(rs)
		switch {
		case bad == nil:
		case op.ErrCode != 0:
			continue
		case bad.ErrorCode == "" && bad.SequenceNumber == "" && lost != nil:
			op.fail(lost.code, lost.msg)
			op.Throttled = lost.throttled
			continue
		case bad.ErrorCode != "":
			op.fail(kafkaCode(&disclient.Error{Code: bad.ErrorCode, Message: bad.ErrorMessage}), bad.ErrorCode+": "+bad.ErrorMessage)
			op.Throttled = disclient.IsThrottle(bad.ErrorCode)
			continue
		default:
			op.fail(kerr.UnknownServerError.Code, "DIS returned sequence number "+strconv.Quote(bad.SequenceNumber))
			continue
		}
		data := op.Entries[j].Data
		info, _ := protocol.ParseBatchInfo(data)
		scattered = scattered || last-first != int64(len(rs)-1)
		written = append(written, Batch{
			batchLoc: batchLoc{seq: last, base: info.BaseOffset, last: info.LastOffset(), lead: last - first},
			maxTS:    info.MaxTimestamp,
			Data:     append([]byte(nil), data...),
		})
	}
	return written, scattered
}

// storedSeqs reads the results of the records of one batch: the sequence
// numbers of its first and last record, or the first result that is not a
// stored record.
func storedSeqs(rs []disclient.PutRecordsResult) (first, last int64, bad *disclient.PutRecordsResult) {
	for k := range rs {
		seq, err := strconv.ParseInt(rs[k].SequenceNumber, 10, 64)
		if rs[k].ErrorCode != "" || err != nil {
			return 0, 0, &rs[k]
		}
		if k == 0 {
			first = seq
		}
		last = seq
	}
	return first, last, nil
}

// landedTimeout bounds the look at what a failed PutRecords stored.
const landedTimeout = 5 * time.Second

// landed reads what DIS stored from wantSeq on after a failed PutRecords
// call and makes per-record results of it: a record whose batch (same base
// offset, length and CRC) is there succeeded; the others have an empty
// result, failed as the call did.
// ok is false when DIS could not be read, or holds records that are none of
// these batches.
func (w *partitionWriter) landed(entries []disclient.PutRecordsEntry, wantSeq int64) ([]disclient.PutRecordsResult, bool) {
	ctx, cancel := context.WithTimeout(w.d.Ctx, landedTimeout)
	defer cancel()
	_, next, ok, err := w.d.Refresh(ctx, w.key.Topic, w.key.Partition)
	if err != nil || !ok {
		return nil, false
	}
	var stored []disclient.Record
	if next > wantSeq {
		if stored, err = w.state.readRange(ctx, wantSeq, next); err != nil {
			return nil, false
		}
	}
	results := make([]disclient.PutRecordsResult, len(entries))
	j := 0
	for _, r := range stored {
		for j < len(entries) && !sameStored(entries[j].Data, r.Data) {
			j++
		}
		if j == len(entries) {
			return nil, false
		}
		results[j] = disclient.PutRecordsResult{PartitionID: disclient.PartitionID(w.key.Partition), SequenceNumber: r.SequenceNumber}
		j++
	}
	if len(stored) > 0 {
		w.d.Log.Warn().Str("topic", w.key.Topic).Int32("partition", w.key.Partition).Int("stored", len(stored)).Int("sent", len(entries)).
			Msg("a failed PutRecords call stored some of its batches; they are answered as written")
	}
	return results, true
}

// fenceAttempts bounds how often a writer writes batches again after
// finding that someone else wrote first.
const fenceAttempts = 3

// fence handles a call whose batches DIS did not store right after the
// records the writer knew of: someone else (another gateway, another
// tenant's writer, a DIS-native producer) wrote in between (docs/design.md
// §6). It reads what was written from wantSeq on; the batches of this call
// whose offsets overlap records before them are stale copies that readers
// skip, so it writes them again after everything, with new offsets, and
// only then are their producers answered. It returns the batches written,
// in sequence order; owners are their ops, which it updates.
func (w *partitionWriter) fence(deadline time.Time, written []Batch, owners []*Append, wantSeq int64) []Batch {
	ps := w.state
	ctx, cancel := context.WithDeadline(w.d.Ctx, deadline)
	defer cancel()
	logf := func() *zerolog.Event {
		return w.d.Log.Warn().Str("topic", w.key.Topic).Int32("partition", w.key.Partition)
	}
	// drop fails the ops of the batches at idx and forgets the batches.
	drop := func(idx []int, code int16, msg string) {
		gone := make(map[int]bool, len(idx))
		for _, i := range idx {
			gone[i] = true
			if op := owners[i]; op.ErrCode == 0 {
				op.fail(code, msg)
				if op.ProducerID >= 0 {
					w.producerFailed(op)
				}
			}
		}
		var keptW []Batch
		var keptO []*Append
		for i := range written {
			if !gone[i] {
				keptW, keptO = append(keptW, written[i]), append(keptO, owners[i])
			}
		}
		written, owners = keptW, keptO
	}
	for attempt := 0; ; attempt++ {
		// From the record before the call each time, so that every
		// batch is judged against all that precedes it.
		mine := make(map[int64]bool, len(written))
		for i := range written {
			mine[written[i].seq] = true
		}
		stale, err := ps.readBack(ctx, wantSeq, mine)
		if err != nil {
			logf().Err(err).Msg("reading back a partition someone else wrote failed; its offsets are recovered again before the next write")
			ps.forget()
			break
		}
		var again []int
		for i := range written {
			if stale[written[i].seq] {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			break
		}
		if attempt == fenceAttempts {
			drop(again, kerr.KafkaStorageError.Code, "others kept writing this partition before disgw could place the batch; retry")
			break
		}
		ps.mu.Lock()
		off := ps.next
		ps.mu.Unlock()
		var entries []disclient.PutRecordsEntry
		ends := make([]int, len(again))
		for k, i := range again {
			b := &written[i]
			protocol.StampBatch(b.Data, off, 0)
			info, _ := protocol.ParseBatchInfo(b.Data)
			b.base, b.last = off, info.LastOffset()
			off = b.last + 1
			entries = append(entries, batchRecords(b.Data, disclient.PartitionID(w.key.Partition), b.maxTS, w.d.MaxRecordBytes)...)
			ends[k] = len(entries)
		}
		w.d.FencedBatches(len(again))
		results, code, msg, _ := w.put(deadline, entries, ends, false).whole()
		if code == 0 && len(results) != len(entries) {
			code, msg = kerr.UnknownServerError.Code, "DIS answered PutRecords with a different number of records"
		}
		if code != 0 {
			ps.forget()
			drop(again, code, msg)
			break
		}
		var failedIdx []int
		for k, i := range again {
			first, last, bad := storedSeqs(results[batchStart(ends, k):ends[k]])
			if bad != nil {
				failedIdx = append(failedIdx, i)
				continue
			}
			written[i].seq, written[i].lead = last, last-first
		}
		ps.storedUpTo(results)
		for k, i := range again {
			if op := owners[i]; slices.Index(owners, op) == i {
				op.BaseOffset = written[i].base
			} else if k == 0 || again[k-1] != i-1 {
				logf().Int64("base_offset", written[i].base).
					Msg("a produce of several batches was written again in part: the base offset answered covers its first batch only")
			}
		}
		if len(failedIdx) > 0 {
			drop(failedIdx, kerr.KafkaStorageError.Code, "DIS refused the batch when disgw wrote it again; retry")
		}
	}
	sort.Slice(written, func(a, b int) bool { return written[a].seq < written[b].seq })
	return written
}
