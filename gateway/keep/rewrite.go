package keep

import "github.com/disgw/disgw/protocol"

// Policy is what a kept topic's configs ask of its rewrites, in Kafka's
// terms (docs/kafka-api.md has each config).
type Policy struct {
	// Compact and Delete are cleanup.policy: compact keeps the latest
	// record of every key, delete drops records past retention.
	Compact, Delete bool
	// RetentionMs is retention.ms, -1 for ever; RetentionBytes is
	// retention.bytes, -1 for no bound. Both apply only with Delete.
	RetentionMs, RetentionBytes int64
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone
	// stays after it was first compacted.
	DeleteRetentionMs int64
	// MinCompactionLagMs is min.compaction.lag.ms: a record younger than
	// this (by its batch's max timestamp) is not compacted yet.
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms: a record is compacted
	// at most this long after it was written.
	MaxCompactionLagMs int64
}

// Due reports whether a partition whose current commit is c (nil for
// none) needs a rewrite at nowMs, when DIS keeps records for disRetentionMs.
// The records a partition depends on were all written at or after
// c.StartedMs, so half a retention after it leaves the other half for the
// rewrite to finish, and for a gateway to be down, before DIS expires
// anything. A compacted topic is also rewritten once max.compaction.lag.ms
// has passed. hasRecords says whether the partition has any record: one
// that never had a commit is rewritten as soon as it has, since when its
// records were written is not known.
func Due(c *Commit, p Policy, nowMs, disRetentionMs int64, hasRecords bool) bool {
	if c == nil {
		return hasRecords
	}
	age := nowMs - c.StartedMs
	if age >= disRetentionMs/2 {
		return true
	}
	return p.Compact && p.MaxCompactionLagMs > 0 && age >= p.MaxCompactionLagMs && c.Clean < c.Cut
}

// Rewrite is one rewrite of a partition, fed the batches it reads and
// answering what to write. It runs in two passes over the records in offset
// order: Map reads the records not yet compacted into the key map (compacted
// topics only), then Decide is asked about every batch of the current
// generation and of the topic's stream up to the cut, and Commit names the
// new generation.
type Rewrite struct {
	p        Policy
	prev     *Commit
	prevSeq  int64
	now      int64
	logStart int64
	cut      int64
	keys     *OffsetMap
	// clean is the new generation's first offset not compacted; mapping
	// moves it up.
	clean int64
	// retainFrom is the first offset kept by retention (time and bytes),
	// found as batches are decided; excess is how many bytes retention.bytes
	// still has to drop.
	retainFrom int64
	retained   bool
	excess     int64
	// batches, kafkaRecords, bytes and records (DIS's) count what Wrote
	// was told, for the commit.
	batches      int64
	kafkaRecords int64
	bytes        int64
	records      int64
}

// NewRewrite starts a rewrite of a partition whose current commit is prev
// at prevSeq (nil and -1 for none), whose log start (DeleteRecords) is
// logStart and whose next offset, the new cut, is next. keys is the key map
// for a compacted topic, reset here; nil otherwise.
func NewRewrite(p Policy, prev *Commit, prevSeq, logStart, next, nowMs int64, keys *OffsetMap) *Rewrite {
	w := &Rewrite{p: p, prev: prev, prevSeq: prevSeq, now: nowMs, logStart: logStart, cut: next, keys: keys}
	if prev != nil {
		w.logStart = max(w.logStart, prev.LogStart)
	}
	w.clean = w.MapFrom()
	if keys != nil {
		keys.Reset()
	}
	if !p.Compact {
		w.clean = next
	}
	return w
}

// MapFrom is the first offset Map wants: the first not compacted yet.
func (w *Rewrite) MapFrom() int64 {
	if w.prev != nil {
		return max(w.prev.Clean, w.logStart)
	}
	return w.logStart
}

// Cut is the new generation's cut: the partition's next offset when the
// rewrite began.
func (w *Rewrite) Cut() int64 { return w.cut }

// Sized tells the rewrite how many bytes the batches it will be asked
// about hold, so that retention.bytes can drop the oldest: Kafka deletes
// its oldest segment while the rest still holds retention.bytes, and the
// rewrite does that a batch at a time. Without it retention.bytes is not
// applied.
func (w *Rewrite) Sized(total int64) {
	if w.p.Delete && w.p.RetentionBytes >= 0 {
		w.excess = total - w.p.RetentionBytes
	}
}

// Map takes the next batch from MapFrom on, decoded, in offset order; it
// reports false when the rewrite compacts nothing from this batch on (the
// map is full, or the batch is younger than min.compaction.lag.ms), and
// the caller stops feeding it. A batch is mapped whole or not at all.
func (w *Rewrite) Map(b *protocol.Batch) bool {
	if !w.p.Compact || b.BaseOffset >= w.cut {
		return false
	}
	if w.p.MinCompactionLagMs > 0 && b.MaxTimestamp > w.now-w.p.MinCompactionLagMs {
		return false
	}
	if w.keys.Len()+len(b.Records) > w.keys.limit && !w.fits(b) {
		return false
	}
	for i := range b.Records {
		if r := &b.Records[i]; r.Key != nil {
			w.keys.Put(r.Key, r.Offset)
		}
	}
	last := b.BaseOffset + int64(b.LastOffsetDelta) + 1
	w.clean = max(w.clean, min(last, w.cut))
	return true
}

// fits reports whether every new key of b finds room in the map.
func (w *Rewrite) fits(b *protocol.Batch) bool {
	fresh := 0
	for i := range b.Records {
		if k := b.Records[i].Key; k != nil {
			if _, ok := w.keys.Get(k); !ok {
				fresh++
			}
		}
	}
	return w.keys.Len()+fresh <= w.keys.limit
}

// Action is what Decide says to do with a batch.
type Action int

// The actions.
const (
	// Drop leaves the batch out of the new generation.
	Drop Action = iota
	// Copy writes the batch as it is.
	Copy
	// Filter writes the batch with the records Keep accepts
	// (protocol.FilterBatch), or drops it when none is left.
	Filter
)

// Decide says what to do with the batch info describes, of size bytes, read
// in offset order from the current generation and then from the topic's
// stream up to the cut. Batches of the stream at or after the cut are not
// the rewrite's.
func (w *Rewrite) Decide(info protocol.BatchInfo, size int) Action {
	last := info.LastOffset()
	if last < w.logStart || info.BaseOffset >= w.cut {
		return Drop
	}
	if w.p.Delete && !w.retained {
		expired := w.p.RetentionMs >= 0 && info.MaxTimestamp < w.now-w.p.RetentionMs
		if expired || w.excess >= int64(size) {
			w.excess -= int64(size)
			return Drop
		}
		w.retained, w.retainFrom = true, info.BaseOffset
	}
	if w.p.Compact && info.BaseOffset < w.clean {
		return Filter
	}
	return Copy
}

// Keep says whether record r, of a batch Decide answered Filter, stays: its
// key's latest record and, for a tombstone, within delete.retention.ms of
// when it was first compacted. A record without a key is not kept: a
// compacted topic refuses them, and Kafka's cleaner drops any it finds.
func (w *Rewrite) Keep(r *protocol.Record) bool {
	switch {
	case r.Offset < w.logStart:
		return false
	case r.Offset >= w.clean:
		return true
	case r.Key == nil:
		return false
	}
	if latest, ok := w.keys.Get(r.Key); ok && latest > r.Offset {
		return false
	}
	if r.Value != nil {
		return true
	}
	at := w.now
	if w.prev != nil {
		if t, ok := w.prev.CompactedAt(r.Offset); ok {
			at = t
		}
	}
	return w.now-at <= w.p.DeleteRetentionMs
}

// Wrote counts a batch of size bytes and kafkaRecords Kafka records
// written to the new generation in records DIS records.
func (w *Rewrite) Wrote(size int, kafkaRecords int, records int64) {
	w.batches++
	w.kafkaRecords += int64(kafkaRecords)
	w.bytes += int64(size)
	w.records += records
}

// Commit is the new generation's commit record, for batches written from
// sequence number first on, by writer, with the rewrite having begun at
// startedMs.
func (w *Rewrite) Commit(first, startedMs int64, writer string) *Commit {
	logStart := w.logStart
	if w.retained {
		logStart = max(logStart, w.retainFrom)
	} else if w.p.Delete {
		// Retention dropped everything below the cut.
		logStart = max(logStart, w.cut)
	}
	clean := min(max(w.clean, logStart), w.cut)
	c := &Commit{Prev: w.prevSeq, First: first, LogStart: logStart, Cut: w.cut, Clean: clean,
		StartedMs: startedMs, Batches: w.batches, KafkaRecords: w.kafkaRecords, Bytes: w.bytes, Records: w.records, Writer: writer, Gen: 1}
	if w.prev != nil {
		c.Gen = w.prev.Gen + 1
		for _, s := range w.prev.Compacted {
			if s.End > logStart {
				c.Compacted = append(c.Compacted, s)
			}
		}
	}
	if w.p.Compact {
		c.Compacted = mergeExpired(c.Compacted, w.now-w.p.DeleteRetentionMs)
		if end := lastEnd(c.Compacted); clean > end {
			c.Compacted = append(c.Compacted, Span{End: clean, CompactedMs: w.now})
		}
	} else {
		c.Compacted = nil
	}
	return c
}

// lastEnd is where the last span ends, or -1.
func lastEnd(spans []Span) int64 {
	if len(spans) == 0 {
		return -1
	}
	return spans[len(spans)-1].End
}

// mergeExpired joins the leading spans compacted before expiredMs into one,
// since their tombstones are all gone: the list stays short however many
// rewrites a partition sees.
func mergeExpired(spans []Span, expiredMs int64) []Span {
	n := 0
	for n < len(spans) && spans[n].CompactedMs < expiredMs {
		n++
	}
	if n < 2 {
		return spans
	}
	merged := Span{End: spans[n-1].End, CompactedMs: spans[n-1].CompactedMs}
	return append([]Span{merged}, spans[n:]...)
}
