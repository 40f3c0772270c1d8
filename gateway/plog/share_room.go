package plog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/sharestore"
)

// shareRoom is one share group's share-partition on this partition (a
// room of the partition log, docs/design.md §14): its state machine, the
// token its writes carry, the acknowledgements waiting for their effect to
// be durable, and the timer that expires locks. The partition's owner holds
// it; it is made on a share fetch's first use and dropped with the
// partition's state.
type shareRoom struct {
	ps  *Partition
	key sharestore.Key
	// loaded is closed once the load ended: state is set, or code says
	// why not (the room is then out of the partition's map already).
	loaded chan struct{}
	code   int16

	mu    sync.Mutex
	state *sharestate.Partition
	token uint64
	// closed is set when the room was dropped or abandoned: it answers
	// and writes nothing more, and a new use loads the state again.
	closed  bool
	writing bool // a record is being persisted
	nextID  uint64
	waiting map[uint64]chan []int16
	timer   *time.Timer
	// avail is closed, and replaced, whenever records may have become
	// available (released, rejected locks expired, a member gone), to
	// wake share fetches waiting with nothing to acquire.
	avail chan struct{}
}

// shareRoom returns group's share-partition here, loading it on first
// use: from the kept state, or from start (share.auto.offset.reset, or an
// admin's offset) when none was kept. A partition this gateway does not
// lead has none: NOT_LEADER_OR_FOLLOWER.
func (ps *Partition) shareRoom(ctx context.Context, group string, start func(ctx context.Context) (int64, error)) (*shareRoom, int16) {
	ps.shareMu.Lock()
	r := ps.shares[group]
	if r == nil {
		if ps.borrowed || ps.moved.Load() || ps.gone.Load() {
			ps.shareMu.Unlock()
			return nil, kerr.NotLeaderForPartition.Code
		}
		if !ps.d.ShareBudget.take() {
			ps.shareMu.Unlock()
			ps.d.Log.Warn().Str("group", group).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
				Msg("share fetch refused: the gateway holds as many share-partitions as --max-share-partitions allows")
			return nil, kerr.PolicyViolation.Code
		}
		r = &shareRoom{
			ps:      ps,
			key:     ps.shareKey(group),
			loaded:  make(chan struct{}),
			waiting: make(map[uint64]chan []int16),
			avail:   make(chan struct{}),
		}
		if ps.shares == nil {
			ps.shares = make(map[string]*shareRoom)
		}
		ps.shares[group] = r
		ps.shareMu.Unlock()
		r.load(ctx, start)
	} else {
		ps.shareMu.Unlock()
	}
	select {
	case <-r.loaded:
	case <-ctx.Done():
		return nil, kerr.RequestTimedOut.Code
	}
	if r.code != 0 {
		return nil, r.code
	}
	return r, 0
}

// heldShareRoom is group's share-partition when this gateway holds it
// loaded, else nil: for calls that must not start one.
func (ps *Partition) heldShareRoom(group string) *shareRoom {
	ps.shareMu.Lock()
	r := ps.shares[group]
	ps.shareMu.Unlock()
	if r == nil {
		return nil
	}
	select {
	case <-r.loaded:
		if r.code != 0 {
			return nil
		}
		return r
	default:
		return nil
	}
}

// load takes the room's kept state, or starts it at start's offset, and
// asks for its first record. On a failure the room leaves the map, so the
// next use tries again.
func (r *shareRoom) load(ctx context.Context, start func(ctx context.Context) (int64, error)) {
	defer close(r.loaded)
	d := r.ps.d
	st, token, found, err := d.Shares.Take(ctx, r.key)
	if err == nil && !found {
		var off int64
		if off, err = start(ctx); err == nil {
			st, err = sharestate.New(d.ShareLimits, off)
		}
	}
	if err != nil {
		r.code = shareCode(d, err)
		if ctx.Err() == nil && d.Ctx.Err() == nil {
			d.Log.Warn().Err(err).Str("group", r.key.Group).Str("topic", r.key.Topic).Int32("partition", r.key.Partition).
				Msg("share group: loading the share-partition's state failed")
		}
		r.drop()
		return
	}
	r.ps.shareMu.Lock()
	kept := r.ps.shares[r.key.Group] == r
	r.ps.shareMu.Unlock()
	if !kept {
		// Dropped while loading (closeShares): the partition's state
		// went, and the token just taken is left to fence no one.
		r.code = kerr.NotLeaderForPartition.Code
		return
	}
	r.mu.Lock()
	r.state, r.token = st, token
	r.afterLocked(time.Now())
	r.mu.Unlock()
}

// shareCode is the Kafka code a member gets when the share-partition's
// state could not be loaded or written: retriable, so it asks again.
func shareCode(d *Deps, err error) int16 {
	var ke *kerr.Error
	switch {
	case errors.Is(err, ErrShareFenced):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	case errors.As(err, &ke):
		return ke.Code
	}
	if code := d.KafkaCode(err); code != 0 {
		return code
	}
	return kerr.UnknownServerError.Code
}

// drop takes the room out of its partition's map, if it is still there.
func (r *shareRoom) drop() {
	ps := r.ps
	ps.shareMu.Lock()
	if ps.shares[r.key.Group] == r {
		delete(ps.shares, r.key.Group)
		ps.d.ShareBudget.release()
	}
	ps.shareMu.Unlock()
}

// closeLocked gives the room up: every waiting acknowledgement is answered
// code, the timer stops, waiting fetches wake, and the room leaves the
// map; its successor loads what was durable.
func (r *shareRoom) closeLocked(code int16) {
	if r.closed {
		return
	}
	r.closed = true
	if r.state != nil {
		r.deliverLocked(r.state.Abandon(code))
	}
	for id, ch := range r.waiting {
		ch <- nil
		delete(r.waiting, id)
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	close(r.avail)
	r.avail = make(chan struct{})
}

// afterLocked carries out what the state machine asks after a call:
// answers released, the next record written, the lock timer set.
func (r *shareRoom) afterLocked(now time.Time) {
	if r.closed {
		return
	}
	rd := r.state.Ready()
	r.deliverLocked(rd.Answers)
	if rd.Record != nil {
		r.writing = true
		rec := *rd.Record
		r.ps.d.Go("persist share-partition state", func() { r.persist(rec) })
	}
	r.setTimerLocked(now)
}

// deliverLocked hands answers to the acknowledgements waiting for them.
func (r *shareRoom) deliverLocked(answers []sharestate.Answer) {
	for _, a := range answers {
		if ch, ok := r.waiting[a.ID]; ok {
			ch <- a.Codes
			delete(r.waiting, a.ID)
		}
	}
}

// wakeLocked wakes the share fetches waiting for records to become
// available.
func (r *shareRoom) wakeLocked() {
	close(r.avail)
	r.avail = make(chan struct{})
}

// setTimerLocked makes the timer fire at the next lock deadline.
func (r *shareRoom) setTimerLocked(now time.Time) {
	next := r.state.NextDeadline()
	if next.IsZero() {
		if r.timer != nil {
			r.timer.Stop()
		}
		return
	}
	wait := max(next.Sub(now), time.Millisecond)
	if r.timer == nil {
		r.timer = time.AfterFunc(wait, r.tick)
		return
	}
	r.timer.Reset(wait)
}

// tick expires the locks due.
func (r *shareRoom) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	now := time.Now()
	r.state.Tick(now)
	r.wakeLocked()
	r.afterLocked(now)
}

// persist writes rec and reports it durable, or on a failure abandons the
// room: its waiting answers get a retriable code and the next use loads
// the durable state again.
func (r *shareRoom) persist(rec sharestate.Record) {
	d := r.ps.d
	ctx, cancel := context.WithTimeout(d.Ctx, d.RequestTimeout)
	err := d.Shares.Persist(ctx, r.key, r.token, rec)
	cancel()
	d.ShareWritten(err == nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writing = false
	if r.closed {
		return
	}
	if err != nil {
		if d.Ctx.Err() == nil {
			d.Log.Warn().Err(err).Str("group", r.key.Group).Str("topic", r.key.Topic).Int32("partition", r.key.Partition).
				Msg("share group: writing the share-partition's state failed; it is loaded again from what is durable")
		}
		r.closeLocked(shareCode(d, err))
		r.drop()
		return
	}
	r.state.Persisted(rec.Seq)
	r.afterLocked(time.Now())
}

// busyLocked reports whether dropping the room now would lose more than a
// reload restores: records are acquired (their locks are not kept) or a
// write or an acknowledgement is in progress.
func (r *shareRoom) busyLocked() bool {
	return !r.closed && (r.writing || len(r.waiting) > 0 || (r.state != nil && !r.state.NextDeadline().IsZero()))
}

// sharesBusy reports whether any of the partition's share rooms is busy,
// which keeps the partition from idle eviction.
func (ps *Partition) sharesBusy() bool {
	ps.shareMu.Lock()
	rooms := make([]*shareRoom, 0, len(ps.shares))
	for _, r := range ps.shares {
		rooms = append(rooms, r)
	}
	ps.shareMu.Unlock()
	for _, r := range rooms {
		select {
		case <-r.loaded:
		default:
			return true
		}
		r.mu.Lock()
		busy := r.busyLocked()
		r.mu.Unlock()
		if busy {
			return true
		}
	}
	return false
}

// closeShares drops every share room of the partition, answering what
// waits NOT_LEADER_OR_FOLLOWER: the partition's state is being dropped
// (moved away, evicted, its stream deleted).
func (ps *Partition) closeShares() {
	ps.shareMu.Lock()
	rooms := ps.shares
	ps.shares = nil
	ps.shareMu.Unlock()
	for range rooms {
		ps.d.ShareBudget.release()
	}
	for _, r := range rooms {
		select {
		case <-r.loaded:
		default:
			continue // its load fails or lands in a room no one finds
		}
		r.mu.Lock()
		r.closeLocked(kerr.NotLeaderForPartition.Code)
		r.mu.Unlock()
	}
}
