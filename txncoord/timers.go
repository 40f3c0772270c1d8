package txncoord

import (
	"container/heap"
	"time"
)

// deadline is t's next deadline, zero when it waits for none: while a
// write is in flight it waits for that; an ending waits for its retry
// backoff; an Ongoing transaction for its timeout; an idle id for its
// expiration. A failed write the coordinator started itself pushes the
// deadline to its backoff.
func (c *Coordinator) deadline(t *txn) time.Time {
	if t.write != nil || t.fresh {
		return time.Time{}
	}
	if t.end != nil {
		if t.end.stopped {
			return time.Time{}
		}
		return t.retryAt
	}
	var at time.Time
	switch t.rec.State {
	case Ongoing:
		at = time.UnixMilli(t.rec.StartMillis + int64(t.rec.TimeoutMillis))
	case Empty, CompleteCommit, CompleteAbort:
		at = time.UnixMilli(t.rec.UpdateMillis).Add(c.cfg.IDExpiration)
	default:
		return time.Time{}
	}
	if t.retryAt.After(at) {
		return t.retryAt
	}
	return at
}

// fire carries out t's due deadline as of its own time at.
func (c *Coordinator) fire(at time.Time, t *txn) {
	c.touch(t)
	switch {
	case t.end != nil:
		c.drive(at, t)
	case t.rec.State == Ongoing:
		c.log.Info().Str("txn", t.rec.TxnID).Int32("timeout_ms", t.rec.TimeoutMillis).Msg("aborting a transaction past its timeout")
		c.prepareEnd(at, t, endTimeout, false, nil)
	default:
		c.expire(at, t)
	}
}

// expire writes the tombstone of an id idle past IDExpiration; it is
// forgotten once the tombstone is persisted, and retried after a backoff
// if the write fails.
func (c *Coordinator) expire(at time.Time, t *txn) {
	next := t.rec.clone()
	next.State = Dead
	next.UpdateMillis = millis(at)
	c.persistRecord(t, next, true, nil, func(now time.Time, ok bool) {
		if !ok {
			t.nextBackoff(now)
		}
	})
}

// advance carries out every deadline at or before now, earliest first.
// Ids the call changed are rescheduled first, so a deadline that passed
// while a write was in flight is due now.
func (c *Coordinator) advance(now time.Time) {
	c.settle()
	for len(c.timers) > 0 && !c.timers[0].next.After(now) {
		t := c.timers[0]
		c.fire(t.next, t)
		c.settle()
	}
}

// schedule places t in the timer heap by its deadline, or takes it out
// when it waits for none.
func (c *Coordinator) schedule(t *txn) {
	t.next = c.deadline(t)
	switch {
	case t.next.IsZero() && t.heapIndex >= 0:
		heap.Remove(&c.timers, t.heapIndex)
	case t.next.IsZero():
	case t.heapIndex >= 0:
		heap.Fix(&c.timers, t.heapIndex)
	default:
		heap.Push(&c.timers, t)
	}
}

// unschedule takes t out of the timer heap for good.
func (c *Coordinator) unschedule(t *txn) {
	if t.heapIndex >= 0 {
		heap.Remove(&c.timers, t.heapIndex)
	}
}

// timerHeap orders ids by deadline (ties by id, so simultaneous deadlines
// fire in a fixed order) so Tick and Ready cost O(log ids).
type timerHeap []*txn

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].next.Equal(h[j].next) {
		return h[i].next.Before(h[j].next)
	}
	return h[i].rec.TxnID < h[j].rec.TxnID
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

func (h *timerHeap) Push(x any) {
	t := x.(*txn)
	t.heapIndex = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.heapIndex = -1
	return t
}
