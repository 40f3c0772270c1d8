package plog

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/disgw/disgw/disclient"
)

// WatermarkApp is the reserved DIS app whose LAST_READ checkpoint on each
// partition of a kafka-format stream holds the partition's next Kafka
// offset, and the log start offset DeleteRecords set, in its metadata
// (docs/record-formats.md), so offsets go on growing after retention has
// emptied the partition and every gateway agrees on where the log starts.
// No group maps to it: encoded group app names end in a hash.
const WatermarkApp = "disgw-offsets"

// watermarkMeta is the checkpoint's metadata: the next offset in decimal,
// or, once DeleteRecords moved the log start or the partition had
// transactional data, a JSON object with them and the pointer to the
// partition's transaction state (txn_snapshot.go). A partition nobody
// deleted records from and that never had transactions keeps the plain
// form.
type watermarkMeta struct {
	Next     int64       `json:"next"`
	LogStart int64       `json:"log_start"`
	Txn      *txnPointer `json:"txn,omitempty"`
}

func (m watermarkMeta) String() string {
	if m.LogStart <= 0 && m.Txn == nil {
		return strconv.FormatInt(m.Next, 10)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// parseWatermark reads a checkpoint's metadata; ok is false for metadata
// that is neither form, which counts as no watermark.
func parseWatermark(s string) (m watermarkMeta, ok bool) {
	if strings.HasPrefix(s, "{") {
		if json.Unmarshal([]byte(s), &m) != nil || m.Next < 0 || m.LogStart < 0 || m.LogStart > m.Next ||
			(m.Txn != nil && (m.Txn.UpTo < 0 || m.Txn.UpTo > m.Next || m.Txn.Seq < -1)) {
			return watermarkMeta{}, false
		}
		return m, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return watermarkMeta{}, false
	}
	return watermarkMeta{Next: n}, true
}

// readWatermark returns the next offset the watermark checkpoint holds, or
// -1 when there is none, the log start offset it holds (0 for none) and
// its transaction state pointer (unset for none).
func (ps *Partition) readWatermark(ctx context.Context) (next, logStart int64, ptr txnPointer, err error) {
	cp, err := ps.d.DIS.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{
		AppName: WatermarkApp, StreamName: ps.key.Stream,
		PartitionID: disclient.PartitionID(ps.key.Partition), CheckpointType: disclient.CheckpointLastRead,
	})
	switch {
	case disclient.IsCode(err, disclient.CodeAppNotFound), disclient.IsCode(err, disclient.CodeNoCheckpoint):
		return -1, 0, txnPointer{}, nil
	case err != nil:
		return 0, 0, txnPointer{}, err
	}
	m, ok := parseWatermark(cp.Metadata)
	if !ok {
		return -1, 0, txnPointer{}, nil
	}
	if m.Txn != nil {
		ptr = *m.Txn
		ptr.set = true
	}
	return m.Next, m.LogStart, ptr, nil
}

// writeWatermark stores the next offset and the log start in the watermark
// checkpoint, at the partition's last sequence number so that it is inside
// the valid range. It writes only when the next offset moved past what the
// checkpoint holds; a failure is logged, unless the gateway is stopping
// (which flushes the watermarks itself), and the next write tries again.
func (ps *Partition) writeWatermark(ctx context.Context) {
	ps.markMu.Lock()
	defer ps.markMu.Unlock()
	if err := ps.writeWatermarkLocked(ctx, -1, nil); err != nil && ps.d.Ctx.Err() == nil {
		ps.d.Log.Warn().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
			Msg("writing the partition's offset watermark checkpoint failed; it is written again after the next produce")
	}
}

// writeWatermarkLocked writes the checkpoint, with the log start raised to
// logStart when that is above the partition's; -1 writes only a next
// offset that moved. ptr, when set, is a new transaction state pointer to
// write whatever moved; without it the pointer is the partition's, moved
// up to the next offset when its snapshot still is the state
// (txnPointerLocked). The caller holds markMu, so checkpoints land in the
// order of the states they hold.
func (ps *Partition) writeWatermarkLocked(ctx context.Context, logStart int64, ptr *txnPointer) error {
	ps.mu.Lock()
	m := watermarkMeta{Next: ps.next, LogStart: max(ps.logStart, logStart)}
	nextSeq, earliest, have, cur := ps.nextSeq, ps.earliestSeq, ps.watermark, ps.logStart
	if ptr == nil {
		ptr = ps.txnPointerLocked()
	}
	if ptr.set {
		m.Txn = ptr
	}
	ps.mu.Unlock()
	if m.LogStart == cur && (nextSeq == 0 || m.Next <= have) && !ptr.forced {
		return nil
	}
	// The last record, or where the next one goes when retention has
	// emptied the partition: DIS refuses a checkpoint outside its range.
	at := max(nextSeq-1, earliest, 0)
	req := &disclient.CommitCheckpointRequest{
		AppName: WatermarkApp, CheckpointType: disclient.CheckpointLastRead, StreamName: ps.key.Stream,
		PartitionID: disclient.PartitionID(ps.key.Partition), SequenceNumber: strconv.FormatInt(at, 10),
		Metadata: m.String(),
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
		return err
	}
	ps.mu.Lock()
	ps.watermark = max(ps.watermark, m.Next)
	ps.logStart = max(ps.logStart, m.LogStart)
	ps.watermarkAt = time.Now()
	if ptr.set && (ptr.forced || ptr.UpTo >= ps.txn.ptr.UpTo) {
		ps.txn.ptr = *ptr
		ps.txn.ptr.forced = false
	}
	ps.mu.Unlock()
	return nil
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

// ErrBeyondEnd is DeleteRecords' answer to an offset past the high
// watermark: Kafka's OFFSET_OUT_OF_RANGE.
var ErrBeyondEnd = errors.New("offset is beyond the partition's high watermark")

// DeleteBefore makes offset the partition's log start, as DeleteRecords
// does: stored in the watermark checkpoint before it returns, so that
// every gateway and every restart agrees; -1 means the high watermark. It
// returns the log start after the call (the low watermark), which may be
// above offset when the log already started later. DIS reclaims the space
// when it expires the records.
func (ps *Partition) DeleteBefore(ctx context.Context, earliestSeq, offset int64) (int64, error) {
	next, err := ps.Next(ctx)
	if err != nil {
		return 0, err
	}
	if offset == -1 {
		offset = next
	}
	if offset < 0 || offset > next {
		return 0, ErrBeyondEnd
	}
	ps.markMu.Lock()
	err = ps.writeWatermarkLocked(ctx, offset, nil)
	ps.markMu.Unlock()
	if err != nil {
		return 0, err
	}
	return ps.Earliest(ctx, earliestSeq)
}
