package txncoord

import (
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endKind says who ends a transaction, which decides the epoch moves.
type endKind uint8

const (
	endV1      endKind = iota // a version 1 EndTxn: the epoch stays
	endV2                     // a version 2 EndTxn: the epoch is bumped
	endFence                  // InitProducerId found it open: bump to fence the old producer
	endTimeout                // it ran past its timeout: bump to fence the producer
)

// endTxn serves EndTxn: validate (a write in flight first, so a retry is
// never taken for a stale producer), then Ongoing moves to Prepare*, which
// is answered once persisted; retries of an end already decided are
// answered as the first was.
func (c *Coordinator) endTxn(now time.Time, id uint64, r *kmsg.EndTxnRequest) {
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	fail := func(code int16) {
		resp.ErrorCode = code
		c.respond(id, resp)
	}
	t, code := c.lookup(r.TransactionalID)
	switch {
	case r.TransactionalID == "":
		fail(kerr.InvalidRequest.Code)
		return
	case code != 0:
		fail(code)
		return
	case t == nil || t.fresh:
		fail(kerr.InvalidProducerIDMapping.Code)
		return
	case t.write != nil:
		fail(kerr.ConcurrentTransactions.Code)
		return
	}
	rec := &t.rec
	reqV2 := r.Version >= 5
	// Under version 2 the id's epoch is one past the one its producer
	// ended with, so a retry carries the epoch before (or, after the
	// epoch ran out, the last one of the previous producer id).
	bumpRetry := rec.Version2 && int(rec.Epoch) == int(r.ProducerEpoch)+1
	overflowRetry := rec.Version2 && rec.ProducerID != r.ProducerID && rec.LastProducerID == r.ProducerID &&
		r.ProducerEpoch == exhaustedEpoch && rec.Epoch == 0
	current := r.ProducerEpoch == rec.Epoch
	if r.ProducerID != rec.ProducerID && !overflowRetry {
		fail(kerr.InvalidProducerIDMapping.Code)
		return
	}
	var valid bool
	switch {
	case rec.State == Ongoing || rec.State == Empty:
		valid = current
	case !rec.Version2:
		valid = current
	case rec.State.preparing():
		valid = bumpRetry
	default: // Complete* under version 2: a retry, or the end of a new, empty transaction
		valid = bumpRetry || overflowRetry || current && reqV2
	}
	if !valid {
		fail(fencedCode(r.Version < 2))
		return
	}
	succeed := func(pid int64, epoch int16) {
		if reqV2 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		fail(0)
	}
	kind := endV1
	if reqV2 {
		kind = endV2
	}
	answer := func(code int16) {
		if code != 0 {
			fail(code)
			return
		}
		succeed(t.rec.clientProducer())
	}
	switch rec.State {
	case Ongoing:
		c.prepareEnd(now, t, kind, r.Commit, answer)
	case Empty:
		if reqV2 && !r.Commit {
			c.prepareEnd(now, t, kind, false, answer)
			return
		}
		fail(kerr.InvalidTxnState.Code)
	case PrepareCommit, PrepareAbort:
		if r.Commit == (rec.State == PrepareCommit) {
			fail(kerr.ConcurrentTransactions.Code)
			return
		}
		fail(kerr.InvalidTxnState.Code)
	case CompleteCommit, CompleteAbort:
		if rec.Version2 && current && !r.Commit {
			c.prepareEnd(now, t, kind, false, answer)
			return
		}
		if rec.Version2 && current || r.Commit != (rec.State == CompleteCommit) {
			fail(kerr.InvalidTxnState.Code)
			return
		}
		succeed(rec.ProducerID, rec.Epoch)
	default:
		fail(kerr.InvalidTxnState.Code)
	}
}

// clientProducer is the producer id and epoch the client goes on with
// once the record's end is decided: under version 2, when the epoch ran
// out, the next producer id at epoch 0.
func (r *Record) clientProducer() (int64, int16) {
	if r.NextProducerID >= 0 {
		return r.NextProducerID, 0
	}
	return r.ProducerID, r.Epoch
}

// prepareEnd writes Prepare* for t's transaction (open, or an empty one a
// version 2 producer aborts); answer, if any, is told the write's outcome,
// and once it is persisted the markers start.
func (c *Coordinator) prepareEnd(now time.Time, t *txn, kind endKind, commit bool, answer func(code int16)) {
	next := t.rec.clone()
	next.State = PrepareAbort
	if commit {
		next.State = PrepareCommit
	}
	next.UpdateMillis = millis(now)
	switch kind {
	case endV1:
		next.Version2 = false
	case endV2:
		next.Version2 = true
		next.LastEpoch = next.Epoch
		if next.Epoch >= exhaustedEpoch {
			next.NextProducerID = c.cfg.NewProducerID()
		}
		if next.Epoch < math.MaxInt16 {
			next.Epoch++
		}
	case endFence, endTimeout:
		// The old producer must not pass for a retry of the bump.
		next.Version2 = false
		next.LastEpoch = -1
		if next.Epoch < math.MaxInt16 {
			next.Epoch++
		}
	}
	var answers []func(int16)
	if answer != nil {
		answers = append(answers, answer)
	}
	c.persist(t, next, answers, func(now time.Time, ok bool) {
		switch {
		case ok:
			c.startEnd(now, t)
		case kind == endTimeout:
			t.nextBackoff(now)
		}
	})
}

// startEnd begins delivering the decided end of t's transaction: its
// markers, then for a commit its groups' offsets, then Complete*.
func (c *Coordinator) startEnd(now time.Time, t *txn) {
	e := &ending{
		left:       make(map[TopicPartition]struct{}, len(t.rec.Partitions)),
		groups:     make(map[string]uint64),
		commitSeqs: make(map[uint64]string),
	}
	for _, tp := range t.rec.Partitions {
		e.left[tp] = struct{}{}
	}
	if t.rec.State == PrepareCommit {
		for g, offs := range t.rec.PendingOffsets {
			if len(offs) > 0 {
				e.groups[g] = 0
			}
		}
	}
	t.end = e
	t.retryAt, t.backoff = time.Time{}, 0
	c.drive(now, t)
}

// drive takes t's ending one step on, unless it waits for a report or a
// backoff: send the markers not yet written, then the offsets not yet
// committed, then write Complete*.
func (c *Coordinator) drive(now time.Time, t *txn) {
	e := t.end
	c.touch(t)
	if e.stopped || t.write != nil || e.markerSeq != 0 || now.Before(t.retryAt) {
		return
	}
	t.retryAt = time.Time{}
	if len(e.left) > 0 {
		m := Markers{
			TxnID:            t.rec.TxnID,
			ProducerID:       t.rec.ProducerID,
			Epoch:            t.rec.Epoch,
			Commit:           t.rec.State == PrepareCommit,
			CoordinatorEpoch: c.parts[t.part],
		}
		for tp := range e.left {
			m.Partitions = append(m.Partitions, tp)
		}
		slices.SortFunc(m.Partitions, compareTP)
		m.Seq = c.newSeq(t)
		e.markerSeq = m.Seq
		c.markers = append(c.markers, m)
		return
	}
	if len(e.groups) > 0 {
		for _, g := range sortedIDs(e.groups) {
			if e.groups[g] != 0 {
				continue
			}
			seq := c.newSeq(t)
			e.groups[g] = seq
			e.commitSeqs[seq] = g
			c.commits = append(c.commits, CommitOffsets{
				Seq:        seq,
				TxnID:      t.rec.TxnID,
				ProducerID: t.rec.ProducerID,
				Epoch:      t.rec.Epoch,
				Group:      g,
				Offsets:    slices.Clone(t.rec.PendingOffsets[g]),
			})
		}
		return
	}
	c.complete(now, t)
}

// complete writes Complete* once everything of the end is delivered; the
// id is then idle. Under version 2 with the epoch run out, the id moves to
// its next producer id here.
func (c *Coordinator) complete(now time.Time, t *txn) {
	next := t.rec.clone()
	next.State = CompleteAbort
	if t.rec.State == PrepareCommit {
		next.State = CompleteCommit
	}
	if next.NextProducerID >= 0 {
		next.LastProducerID, next.LastEpoch = next.ProducerID, next.Epoch
		next.ProducerID, next.Epoch = next.NextProducerID, 0
		next.NextProducerID = -1
	}
	next.idle()
	next.UpdateMillis = millis(now)
	c.persist(t, next, nil, func(now time.Time, ok bool) {
		if ok {
			t.end = nil
			c.ended = append(c.ended, Ended{TxnID: next.TxnID, Commit: next.State == CompleteCommit})
			return
		}
		t.nextBackoff(now)
	})
}
