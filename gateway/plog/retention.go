package plog

import (
	"context"
	"math"
	"time"
)

// A retention.ms below DIS's shortest retention (24 hours) is honoured by
// the gateway on kafka-format topics: the partition's log start moves to
// the first batch whose max timestamp is within retention, as Kafka deletes
// a segment once its largest timestamp is older than retention.ms. It is
// worked out again at most every RetentionCheckInterval, when a reader asks
// for the log start, and kept as DeleteRecords keeps it (the watermark
// checkpoint), so it only moves forward and every gateway agrees; the
// records stay in DIS until it expires them, unreadable through the
// gateway (docs/design.md §12).

// RetentionCheckInterval is how often a partition of a topic whose
// retention.ms the gateway honours works out its log start again: often
// enough for retentions of minutes, one DIS read a partition at most.
const RetentionCheckInterval = 30 * time.Second

// applyRetention moves the log start past the batches retention.ms
// expired, when it was last worked out over RetentionCheckInterval ago.
func (ps *Partition) applyRetention(ctx context.Context) error {
	now := time.Now()
	ps.mu.Lock()
	due := now.Sub(ps.retainedAt) >= RetentionCheckInterval
	ps.mu.Unlock()
	if !due {
		return nil
	}
	ms, err := ps.d.RetentionMs(ctx, ps.key.Topic)
	if err != nil || ms <= 0 {
		return err
	}
	start, err := ps.firstRetained(ctx, now.UnixMilli()-ms)
	if err != nil {
		return err
	}
	ps.markMu.Lock()
	err = ps.writeWatermarkLocked(ctx, start, nil)
	ps.markMu.Unlock()
	if err != nil {
		return err
	}
	ps.mu.Lock()
	ps.retainedAt = now
	ps.mu.Unlock()
	return nil
}

// firstRetained is the base offset of the first batch whose max timestamp
// reaches cutoff, the next offset when there is none, or 0 when DIS keeps
// nothing older than cutoff anyway.
func (ps *Partition) firstRetained(ctx context.Context, cutoff int64) (int64, error) {
	c, ts, err := ps.TimestampCursor(ctx, cutoff)
	if err != nil {
		return 0, err
	}
	if ts == math.MinInt64 {
		return 0, nil
	}
	recs, err := ps.readWhole(ctx, c.PartitionCursor)
	if err != nil {
		return 0, err
	}
	ps.mu.Lock()
	next, nextSeq := ps.next, ps.nextSeq
	ps.mu.Unlock()
	batches, err := labelRecords(recs, noContext, func(seq int64) int64 { return next - (nextSeq - seq) })
	if err != nil {
		return 0, err
	}
	if len(batches) == 0 {
		return next, nil
	}
	return batches[0].base, nil
}
