package plog

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/gateway/plog/sharestate"
)

// The calls ShareFetch and ShareAcknowledge make on a partition's share
// rooms (docs/design.md §14). A share fetch asks where to read
// (ShareFetchOffset), reads with Tenant.Fetch like any fetch, and hands
// what it read to the member (ShareAcquire); acknowledgements return once
// durable.

// ShareFetchOffset is where group's next share fetch reads this partition
// from, loading its share-partition on first use (starting it at start's
// offset when none was kept). ok is false when a read could acquire
// nothing (the in-flight cap is reached); avail is closed when records
// may have become available, for a fetch that waits.
func (ps *Partition) ShareFetchOffset(ctx context.Context, group string, start func(ctx context.Context) (int64, error)) (offset int64, ok bool, avail <-chan struct{}, code int16) {
	r, code := ps.shareRoom(ctx, group, start)
	if code != 0 {
		return 0, false, nil, code
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, false, nil, kerr.NotLeaderForPartition.Code
	}
	now := time.Now()
	r.state.Tick(now)
	r.afterLocked(now)
	offset, ok = r.state.FetchOffset()
	return offset, ok, r.avail, 0
}

// ShareAcquire hands member the records a read found (req), as
// sharestate.Partition.Acquire does. The share-partition must have been
// loaded by ShareFetchOffset; if it was dropped since, the member is told
// NOT_LEADER_OR_FOLLOWER and asks again.
func (ps *Partition) ShareAcquire(group string, req sharestate.AcquireRequest) ([]sharestate.AcquiredRecords, int16) {
	r := ps.heldShareRoom(group)
	if r == nil {
		return nil, kerr.NotLeaderForPartition.Code
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, kerr.NotLeaderForPartition.Code
	}
	now := time.Now()
	got, err := r.state.Acquire(now, req)
	if err != nil {
		ps.d.Log.Error().Err(err).Str("group", group).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
			Msg("share fetch: acquiring records failed")
		return nil, kerr.UnknownServerError.Code
	}
	r.afterLocked(now)
	return got, 0
}

// ShareMoveLogStart tells group's share-partition that the log now starts
// at offset (a read found it so): what it held below is archived.
func (ps *Partition) ShareMoveLogStart(group string, offset int64) {
	r := ps.heldShareRoom(group)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	now := time.Now()
	r.state.MoveLogStart(now, offset)
	r.afterLocked(now)
}

// ShareAcknowledge applies member's acknowledgements of this partition and
// returns a code per range once their effect is durable; code is for the
// whole partition (its share-partition dropped meanwhile, or ctx done).
// Acknowledgements of a share-partition not held here are of records this
// gateway never handed out: INVALID_RECORD_STATE.
func (ps *Partition) ShareAcknowledge(ctx context.Context, group string, req sharestate.AckRequest) (codes []int16, code int16) {
	r := ps.heldShareRoom(group)
	if r == nil {
		codes = make([]int16, len(req.Ranges))
		for i := range codes {
			codes[i] = kerr.InvalidRecordState.Code
		}
		return codes, 0
	}
	ch, code := r.acknowledge(req)
	if code != 0 {
		return nil, code
	}
	select {
	case codes = <-ch:
	case <-ctx.Done():
		return nil, kerr.RequestTimedOut.Code
	}
	if codes == nil && len(req.Ranges) > 0 {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return codes, 0
}

// acknowledge steps req and returns where its answer comes.
func (r *shareRoom) acknowledge(req sharestate.AckRequest) (<-chan []int16, int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, kerr.NotLeaderForPartition.Code
	}
	r.nextID++
	req.ID = r.nextID
	ch := make(chan []int16, 1)
	r.waiting[req.ID] = ch
	now := time.Now()
	r.state.Acknowledge(now, req)
	r.wakeLocked()
	r.afterLocked(now)
	return ch, 0
}

// ShareReleaseMember makes what member of group holds on this partition
// available again: its share session closed, or it left the group.
func (ps *Partition) ShareReleaseMember(group, member string) {
	r := ps.heldShareRoom(group)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	now := time.Now()
	r.state.ReleaseMember(now, member)
	r.wakeLocked()
	r.afterLocked(now)
}
