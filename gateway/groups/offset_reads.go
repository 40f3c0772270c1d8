package groups

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/topics"
)

// ReadCommittedOffsets fills in the committed offsets of ts of tn's group
// (each partition answered -1 so far), for OffsetFetch: one GetCheckpoint
// per partition that exists, topics.DescribeConcurrency at once, at most
// reads of them. A partition of a topic DIS does not have, or past its
// partitions, answers -1 without a DIS call, as Kafka answers a partition
// nothing was committed to. Past the budget a partition answers
// POLICY_VIOLATION: asking again would not help.
func (d *Driver[T]) ReadCommittedOffsets(ctx context.Context, tn T, group string, ts []kmsg.OffsetFetchResponseGroupTopic, describes, reads *topics.CallBudget) {
	names := make([]string, len(ts))
	for i := range ts {
		names[i] = ts[i].Topic
	}
	found := d.deps.Catalog(tn).GetMany(ctx, names, describes)
	var jobs []*kmsg.OffsetFetchResponseGroupTopicPartition
	var jobTopics []string
	refused := 0
	for ti := range ts {
		lk := found[ts[ti].Topic]
		for pi := range ts[ti].Partitions {
			rp := &ts[ti].Partitions[pi]
			switch {
			case errors.Is(lk.Err, topics.ErrUnknownTopic), lk.Meta != nil && !lk.Meta.Readable(rp.Partition):
			case !reads.Take():
				rp.ErrorCode = kerr.PolicyViolation.Code
				refused++
			default:
				jobs = append(jobs, rp)
				jobTopics = append(jobTopics, ts[ti].Topic)
			}
		}
	}
	if refused > 0 {
		d.deps.Log.Warn().Str("group", group).Int("partitions", refused).Int("max", d.deps.MaxCheckpointReads).
			Msg("OffsetFetch names more partitions than one request may read checkpoints of (--max-checkpoint-reads-per-request)")
	}
	d.deps.Parallel(len(jobs), func(i int) {
		rp := jobs[i]
		var meta *string
		rp.Offset, meta, rp.ErrorCode = d.committedOffset(ctx, tn, group, jobTopics[i], rp.Partition)
		if meta != nil {
			rp.Metadata = meta
		}
	})
}
