package gateway

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConcurrency is how many DIS calls one request makes at once when
// it needs several (DescribeStream, GetCheckpoint).
const describeConcurrency = 16

// callBudget is how many more DIS calls of one kind one request may make,
// so that what a client names in a request, not DIS, bounds its cost
// (docs/operations.md, "DIS calls per request"). It is safe for concurrent
// use by the goroutines serving one request.
type callBudget struct{ left atomic.Int64 }

func newCallBudget(n int) *callBudget {
	b := &callBudget{}
	b.left.Store(int64(n))
	return b
}

// takeUpTo spends at most n calls and returns how many it got.
func (b *callBudget) takeUpTo(n int) int {
	for {
		left := b.left.Load()
		got := min(int64(n), left)
		if got <= 0 {
			return 0
		}
		if b.left.CompareAndSwap(left, left-got) {
			return int(got)
		}
	}
}

// take spends one call, reporting whether there was one left.
func (b *callBudget) take() bool { return b.takeUpTo(1) == 1 }

// readCommittedOffsets fills in group's committed offsets of topics (each
// partition answered -1 so far): one GetCheckpoint per partition that
// exists, describeConcurrency at once, at most reads of them. A partition of
// a topic DIS does not have, or past its partitions, answers -1 without a
// DIS call, as Kafka answers a partition nothing was committed to. Past the
// budget a partition answers POLICY_VIOLATION: asking again would not help.
func (gw *Gateway) readCommittedOffsets(ctx context.Context, tn *tenant, group string, topics []kmsg.OffsetFetchResponseGroupTopic, describes, reads *callBudget) {
	names := make([]string, len(topics))
	for i := range topics {
		names[i] = topics[i].Topic
	}
	found := tn.catalog.getMany(ctx, names, describes)
	var jobs []*kmsg.OffsetFetchResponseGroupTopicPartition
	var jobTopics []string
	refused := 0
	for ti := range topics {
		lk := found[topics[ti].Topic]
		for pi := range topics[ti].Partitions {
			rp := &topics[ti].Partitions[pi]
			switch {
			case errors.Is(lk.err, errUnknownTopic), lk.t != nil && !lk.t.readable(rp.Partition):
			case !reads.take():
				rp.ErrorCode = kerr.PolicyViolation.Code
				refused++
			default:
				jobs = append(jobs, rp)
				jobTopics = append(jobTopics, topics[ti].Topic)
			}
		}
	}
	if refused > 0 {
		gw.log.Warn().Str("group", group).Int("partitions", refused).Int("max", gw.cfg.MaxCheckpointReadsPerRequest).
			Msg("OffsetFetch names more partitions than one request may read checkpoints of (--max-checkpoint-reads-per-request)")
	}
	gw.parallel(len(jobs), func(i int) {
		rp := jobs[i]
		var meta *string
		rp.Offset, meta, rp.ErrorCode = gw.committedOffset(ctx, tn, group, jobTopics[i], rp.Partition)
		if meta != nil {
			rp.Metadata = meta
		}
	})
}
