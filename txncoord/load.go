package txncoord

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Load takes over a state partition: records are its records in log
// order, the later record of an id replacing the earlier and a Record
// with State Dead (a tombstone) forgetting the id; coordinatorEpoch is the
// epoch the caller took, one above the highest it read, and goes on every
// record and marker from here on. A record of a lower coordinator epoch
// than one before it was written by a coordinator already fenced, and is
// skipped. Afterwards prepared transactions resume their markers, open
// ones keep their timeout from when they began (one already past it is
// aborted now), and idle ids wait for their expiration. Loading a
// partition already loaded starts it over, as Unload then Load.
func (c *Coordinator) Load(now time.Time, partition int32, coordinatorEpoch int32, records []Record) {
	c.advance(now)
	if c.Loaded(partition) {
		c.Unload(partition)
	}
	c.parts[partition] = coordinatorEpoch
	latest := make(map[string]Record)
	highest := int32(math.MinInt32)
	for _, r := range records {
		if r.CoordinatorEpoch < highest {
			continue
		}
		highest = r.CoordinatorEpoch
		switch {
		case r.TxnID == "" || c.cfg.PartitionOf(r.TxnID) != partition:
			c.log.Warn().Str("txn", r.TxnID).Int32("partition", partition).Msg("skipping a state record that does not belong to the partition")
		case r.State == Dead:
			delete(latest, r.TxnID)
		case r.State < Empty || r.State > Dead:
			c.log.Warn().Str("txn", r.TxnID).Int8("state", int8(r.State)).Msg("skipping a state record of an unknown state")
		default:
			r = r.clone()
			r.normalize()
			latest[r.TxnID] = r
		}
	}
	for _, id := range sortedIDs(latest) {
		t := &txn{part: partition, heapIndex: -1}
		c.setRecord(t, latest[id])
		c.txns[id] = t
		c.touch(t)
		if t.rec.State.preparing() {
			c.startEnd(now, t)
		}
	}
	c.settle()
	c.advance(now)
}

// Unload forgets a state partition whose ownership moved: requests waiting
// on its ids are answered NOT_COORDINATOR, and reports of what its ids had
// in flight are ignored when they come.
func (c *Coordinator) Unload(partition int32) {
	if !c.Loaded(partition) {
		return
	}
	delete(c.parts, partition)
	for _, id := range sortedIDs(c.txns) {
		t := c.txns[id]
		if t.part != partition {
			continue
		}
		if t.write != nil {
			for _, a := range t.write.answers {
				a(kerr.NotCoordinator.Code)
			}
		}
		c.forget(t)
	}
	c.persists = keepKnown(c, c.persists, func(p Persist) uint64 { return p.Seq })
	c.markers = keepKnown(c, c.markers, func(m Markers) uint64 { return m.Seq })
	c.commits = keepKnown(c, c.commits, func(o CommitOffsets) uint64 { return o.Seq })
}

// keepKnown drops from a Ready list what belongs to forgotten ids, so the
// caller never writes for a partition it gave up.
func keepKnown[T any](c *Coordinator, list []T, seq func(T) uint64) []T {
	out := list[:0]
	for _, x := range list {
		if c.seqs[seq(x)] != nil {
			out = append(out, x)
		}
	}
	return out
}

// Loaded reports whether the coordinator holds the state partition.
func (c *Coordinator) Loaded(partition int32) bool {
	_, ok := c.parts[partition]
	return ok
}
