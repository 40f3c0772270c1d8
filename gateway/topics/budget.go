package topics

import "sync/atomic"

// DescribeConcurrency is how many DIS calls one request makes at once when
// it needs several (DescribeStream, GetCheckpoint).
const DescribeConcurrency = 16

// CallBudget is how many more DIS calls of one kind one request may make,
// so that what a client names in a request, not DIS, bounds its cost
// (docs/operations.md, "DIS calls per request"). It is safe for concurrent
// use by the goroutines serving one request.
type CallBudget struct{ left atomic.Int64 }

// NewCallBudget returns a budget of n calls, for one request: made per
// request, not shared, so one client's request never spends another's.
func NewCallBudget(n int) *CallBudget {
	b := &CallBudget{}
	b.left.Store(int64(n))
	return b
}

// TakeUpTo spends at most n calls and returns how many it got.
func (b *CallBudget) TakeUpTo(n int) int {
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

// Take spends one call, reporting whether there was one left.
func (b *CallBudget) Take() bool { return b.TakeUpTo(1) == 1 }
