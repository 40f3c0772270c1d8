package gateway

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// writeBatches writes the ops of a kafka-format partition in one PutRecords
// call: each batch, as its producer sent it, is one DIS record, and the
// writer gives it its base offset, in order, from the partition's next
// offset (recovered from DIS on first use). Only the base offset and the
// partition leader epoch change, both outside the CRC.
func (w *partitionWriter) writeBatches(ops []*appendOp) {
	ps := w.state
	deadline := callDeadline(ops)
	var cost int64
	for _, op := range ops {
		cost += op.queueCost()
	}
	ctx, cancel := context.WithDeadline(w.gw.ctx, deadline)
	err := ps.ensure(ctx)
	cancel()
	if err != nil {
		w.gw.log.Warn().Err(err).Str("topic", w.key.topic).Int32("partition", w.key.partition).
			Msg("recovering the partition's next offset from DIS failed")
		code := kerr.KafkaStorageError.Code
		var de *disclient.Error
		if errors.As(err, &de) {
			code = kafkaCodeForDIS(err)
		}
		for _, op := range ops {
			op.fail(code, "disgw could not recover the partition's offsets from DIS: "+err.Error())
			if op.producerID >= 0 {
				w.producerFailed(op)
			}
		}
		w.gw.queues.release(w, cost)
		for _, op := range ops {
			op.finish()
		}
		return
	}
	ps.mu.Lock()
	off, wantSeq := ps.next, ps.nextSeq
	ps.mu.Unlock()
	now := time.Now().UnixMilli()
	var entries []disclient.PutRecordsEntry
	for _, op := range ops {
		op.baseOffset = off
		for i := range op.entries {
			e := &op.entries[i]
			protocol.StampBatch(e.Data, off, 0)
			if op.logAppendTime {
				protocol.SetLogAppendTime(e.Data, now)
				ts := now
				e.Timestamp = &ts
			}
			info, _ := protocol.ParseBatchInfo(e.Data)
			off = info.LastOffset() + 1
		}
		entries = append(entries, op.entries...)
	}
	results, code, msg, throttled := w.put(deadline, entries)
	var lost *callFailure
	if code == 0 && len(results) != len(entries) {
		code, msg = kerr.UnknownServerError.Code, "DIS answered PutRecords with a different number of records"
	}
	if code != 0 {
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
	var written []cachedBatch
	failed := make(map[int64]bool) // producers with a failed batch in this call
	i := 0
	for _, op := range ops {
		n := len(op.entries)
		if code != 0 {
			op.fail(code, msg)
			op.throttled = throttled
		} else {
			written = op.takeBatchResults(results[i:i+n], lost, written)
		}
		i += n
		if op.producerID >= 0 && failed[op.producerID] && op.errCode == 0 {
			w.gw.log.Error().Str("topic", w.key.topic).Int32("partition", w.key.partition).Int64("producer_id", op.producerID).
				Int64("base_offset", op.baseOffset).
				Msg("DIS failed a batch of an idempotent producer and stored a later one of the same call: the log holds this producer's batches out of order (Config.PutRecordsKeepsOrder is wrong for this DIS)")
		}
		if op.errCode != 0 {
			if op.producerID >= 0 {
				failed[op.producerID] = true
				w.producerFailed(op)
			}
			continue
		}
		for j := range op.entries {
			info, _ := protocol.ParseBatchInfo(op.entries[j].Data)
			w.gw.metrics.producedRecs.Add(float64(info.NumRecords))
		}
	}
	for j := range written {
		if written[j].seq != wantSeq+int64(j) {
			w.gw.log.Warn().Str("topic", w.key.topic).Int32("partition", w.key.partition).
				Int64("sequence_number", written[j].seq).Int64("expected", wantSeq+int64(j)).
				Msg("someone else wrote this partition between two writes of this gateway; offsets are recovered again from DIS")
			ps.forget()
			break
		}
	}
	ps.appended(written)
	if len(written) > 0 {
		ps.scheduleWatermark()
	}
	w.gw.queues.release(w, cost)
	for _, op := range ops {
		op.finish()
	}
}

// callFailure is how a PutRecords call failed whose stored records were
// then found (partitionWriter.landed): the records not found failed so.
type callFailure struct {
	code      int16
	msg       string
	throttled bool
}

// takeBatchResults takes the per-record results of a kafka op: every batch
// DIS stored goes into written, as a copy that aliases no request frame;
// the op fails with the first record's error. A result with neither a
// sequence number nor an error is a record of the failed call lost that
// did not land.
func (op *appendOp) takeBatchResults(results []disclient.PutRecordsResult, lost *callFailure, written []cachedBatch) []cachedBatch {
	for j, r := range results {
		if r.ErrorCode == "" && r.SequenceNumber == "" && lost != nil {
			if op.errCode == 0 {
				op.fail(lost.code, lost.msg)
				op.throttled = lost.throttled
			}
			continue
		}
		if r.ErrorCode != "" {
			if op.errCode == 0 {
				op.fail(kafkaCodeForDIS(&disclient.Error{Code: r.ErrorCode, Message: r.ErrorMessage}), r.ErrorCode+": "+r.ErrorMessage)
				op.throttled = isThrottle(r.ErrorCode)
			}
			continue
		}
		seq, err := strconv.ParseInt(r.SequenceNumber, 10, 64)
		if err != nil {
			op.fail(kerr.UnknownServerError.Code, "DIS returned sequence number "+strconv.Quote(r.SequenceNumber))
			continue
		}
		data := op.entries[j].Data
		info, _ := protocol.ParseBatchInfo(data)
		written = append(written, cachedBatch{
			batchLoc: batchLoc{seq: seq, base: info.BaseOffset, last: info.LastOffset()},
			maxTS:    info.MaxTimestamp,
			data:     append([]byte(nil), data...),
		})
	}
	return written
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
	ctx, cancel := context.WithTimeout(w.gw.ctx, landedTimeout)
	defer cancel()
	t, err := w.key.tenant.catalog.refresh(ctx, w.key.topic)
	if err != nil || int(w.key.partition) >= len(t.partitions) {
		return nil, false
	}
	var stored []disclient.Record
	if next := t.partitions[w.key.partition].next; next > wantSeq {
		if stored, err = w.state.readRange(ctx, wantSeq, next); err != nil {
			return nil, false
		}
	}
	results := make([]disclient.PutRecordsResult, len(entries))
	j := 0
	for _, r := range stored {
		for j < len(entries) && !sameBatch(entries[j].Data, r.Data) {
			j++
		}
		if j == len(entries) {
			return nil, false
		}
		results[j] = disclient.PutRecordsResult{PartitionID: disclient.PartitionID(w.key.partition), SequenceNumber: r.SequenceNumber}
		j++
	}
	if len(stored) > 0 {
		w.gw.log.Warn().Str("topic", w.key.topic).Int32("partition", w.key.partition).Int("stored", len(stored)).Int("sent", len(entries)).
			Msg("a failed PutRecords call stored some of its batches; they are answered as written")
	}
	return results, true
}

// sameBatch reports whether stored is the batch sent: the same base offset,
// length and CRC.
func sameBatch(sent, stored []byte) bool {
	return len(sent) == len(stored) && len(sent) >= protocol.BatchHeaderSize &&
		string(sent[:8]) == string(stored[:8]) && string(sent[17:21]) == string(stored[17:21])
}
