package txncoord

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffsetCommit serves the transaction's side of TxnOffsetCommit (the
// caller has checked the group's member and generation): the offsets are
// kept in the id's state, so a new coordinator still has them, until the
// transaction commits them to the group or aborts. Before version 5 the
// group must have joined with AddOffsetsToTxn; from version 5 (transaction
// version 2) it joins here.
func (c *Coordinator) txnOffsetCommit(now time.Time, id uint64, r *kmsg.TxnOffsetCommitRequest) {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var offs []Offset
	for _, tt := range r.Topics {
		for _, p := range tt.Partitions {
			offs = append(offs, Offset{Topic: tt.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata})
		}
	}
	answer := func(code int16) {
		for _, tt := range r.Topics {
			rt := kmsg.TxnOffsetCommitResponseTopic{Topic: tt.Topic, TopicID: tt.TopicID}
			for _, p := range tt.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		c.respond(id, resp)
	}
	a := addition{
		txnID:      r.TransactionalID,
		producerID: r.ProducerID,
		epoch:      r.ProducerEpoch,
		group:      r.Group,
		offsets:    offs,
		inGroup:    r.Version < 5,
		v2:         r.Version >= 5,
		oldFence:   r.Version < 3,
	}
	c.add(now, a, answer)
}

// addOffsets merges offs into the group's pending offsets, a later offset
// of a partition replacing the earlier, sorted by partition; false when
// the transaction would hold more than max.
func (r *Record) addOffsets(group string, offs []Offset, max int) bool {
	if r.PendingOffsets == nil {
		r.PendingOffsets = make(map[string][]Offset)
	}
	cur := r.PendingOffsets[group]
	for _, o := range offs {
		i, found := slices.BinarySearchFunc(cur, o, compareOffset)
		if found {
			cur[i] = o
		} else {
			cur = slices.Insert(cur, i, o)
		}
	}
	r.PendingOffsets[group] = cur
	n := 0
	for _, g := range r.PendingOffsets {
		n += len(g)
	}
	return n <= max
}

// compareOffset orders offsets by topic, then partition.
func compareOffset(a, b Offset) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}
