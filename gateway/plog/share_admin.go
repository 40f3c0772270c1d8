package plog

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/sharestore"
)

// ShareStartOffset reports group's share-partition start offset on this
// partition, for DescribeShareGroupOffsets: the held state's when this
// gateway serves it, else the kept one; found is false when the group
// never read the partition.
func (ps *Partition) ShareStartOffset(ctx context.Context, group string) (start int64, found bool, code int16) {
	if r := ps.heldShareRoom(group); r != nil {
		r.mu.Lock()
		closed := r.closed
		if !closed {
			start = r.state.StartOffset()
		}
		r.mu.Unlock()
		if !closed {
			return start, true, 0
		}
	}
	start, found, err := ps.d.Shares.Start(ctx, ps.shareKey(group))
	if err != nil {
		return 0, false, shareCode(ps.d, err)
	}
	return start, found, 0
}

// ShareResetStart moves group's share-partition start offset to offset
// (AlterShareGroupOffsets), starting the share-partition there when it
// has none, and returns once that is durable. It fails with
// INVALID_REQUEST while a member still holds records: the admin APIs
// refuse a group with members, whose records are released as they leave.
func (ps *Partition) ShareResetStart(ctx context.Context, group string, offset int64) int16 {
	r, code := ps.shareRoom(ctx, group, func(context.Context) (int64, error) { return offset, nil })
	if code != 0 {
		return code
	}
	ch, code := r.reset(offset)
	if code != 0 {
		return code
	}
	select {
	case codes := <-ch:
		if codes == nil {
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	case <-ctx.Done():
		return kerr.RequestTimedOut.Code
	}
}

// reset moves the start offset and returns where the answer comes once it
// is durable: an acknowledgement of nothing, which is answered when
// everything decided before it is.
func (r *shareRoom) reset(offset int64) (<-chan []int16, int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, kerr.NotLeaderForPartition.Code
	}
	now := time.Now()
	if err := r.state.ResetStartOffset(now, offset); err != nil {
		r.ps.d.Log.Info().Err(err).Str("group", r.key.Group).Msg("alter share group offsets refused")
		return nil, kerr.InvalidRequest.Code
	}
	r.nextID++
	ch := make(chan []int16, 1)
	r.waiting[r.nextID] = ch
	r.state.Acknowledge(now, sharestate.AckRequest{ID: r.nextID})
	r.wakeLocked()
	r.afterLocked(now)
	return ch, 0
}

// ShareDelete forgets group's share-partition here and as kept
// (DeleteShareGroupOffsets, DeleteGroups).
func (ps *Partition) ShareDelete(ctx context.Context, group string) int16 {
	if r := ps.heldShareRoom(group); r != nil {
		r.mu.Lock()
		r.closeLocked(kerr.NotLeaderForPartition.Code)
		r.mu.Unlock()
		r.drop()
	}
	if err := ps.d.Shares.Delete(ctx, ps.shareKey(group)); err != nil {
		ps.d.Log.Warn().Err(err).Str("group", group).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
			Msg("deleting a share-partition's state failed")
		return shareCode(ps.d, err)
	}
	return 0
}

// shareKey names group's share-partition of this partition.
func (ps *Partition) shareKey(group string) sharestore.Key {
	return sharestore.Key{Group: group, Topic: ps.key.Topic, Stream: ps.key.StreamID, Partition: ps.key.Partition}
}

// ReleaseShareMember makes the records member of group holds on every
// share-partition of this tenant available again: the member left or its
// session expired (groupcoord's Ready.ShareDepartures).
func (tn *Tenant) ReleaseShareMember(group, member string) {
	for _, ps := range tn.All() {
		ps.ShareReleaseMember(group, member)
	}
}
