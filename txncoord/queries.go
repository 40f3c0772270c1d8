package txncoord

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe reports an id for DescribeTransactions; false when this
// coordinator does not hold it (unknown, not yet persisted, or its
// partition not loaded: the caller tells those apart with Loaded).
func (c *Coordinator) Describe(txnID string) (Describe, bool) {
	t := c.txns[txnID]
	if t == nil || t.fresh {
		return Describe{}, false
	}
	return Describe{
		State:         t.rec.State,
		ProducerID:    t.rec.ProducerID,
		Epoch:         t.rec.Epoch,
		TimeoutMillis: t.rec.TimeoutMillis,
		StartMillis:   t.rec.StartMillis,
		Partitions:    slices.Clone(t.rec.Partitions),
	}, true
}

// List answers ListTransactions over the ids this coordinator holds, by
// id: states filters by Kafka's state names (a name Kafka does not know
// matches nothing; the caller reports it), producerIDs by producer id
// (empty: all), minDurationMillis keeps transactions open longer than that
// (-1: all), and match by id (the caller's TransactionalIDPattern; nil:
// all).
func (c *Coordinator) List(now time.Time, states []string, producerIDs []int64, minDurationMillis int64, match func(string) bool) []kmsg.ListTransactionsResponseTransactionState {
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, id := range sortedIDs(c.txns) {
		t := c.txns[id]
		r := &t.rec
		switch {
		case t.fresh:
		case len(states) > 0 && !slices.Contains(states, r.State.String()):
		case len(producerIDs) > 0 && !slices.Contains(producerIDs, r.ProducerID):
		case minDurationMillis >= 0 && (r.StartMillis < 0 || millis(now)-r.StartMillis <= minDurationMillis):
		case match != nil && !match(id):
		default:
			out = append(out, kmsg.ListTransactionsResponseTransactionState{
				TransactionalID:  id,
				ProducerID:       r.ProducerID,
				TransactionState: r.State.String(),
			})
		}
	}
	return out
}

// PendingOffsets reports whether the group has an offset for the
// partition waiting in an open transaction (persisted, not yet committed
// to the group or dropped), for OffsetFetch's require_stable
// (UNSTABLE_OFFSET_COMMIT).
func (c *Coordinator) PendingOffsets(group, topic string, partition int32) bool {
	for t := range c.pending[group] {
		if _, found := slices.BinarySearchFunc(t.rec.PendingOffsets[group], Offset{Topic: topic, Partition: partition}, compareOffset); found {
			return true
		}
	}
	return false
}
