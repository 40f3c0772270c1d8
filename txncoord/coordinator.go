package txncoord

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's broker defaults, and the caps Kafka does not have.
const (
	defaultMaxTimeout        = 15 * time.Minute
	defaultIDExpiration      = 7 * 24 * time.Hour
	defaultMaxPartitions     = 10000
	defaultMaxPendingOffsets = 10000
	defaultMaxIDs            = 100000
)

// Marker, offset commit and coordinator-initiated write retries back off
// from minBackoff, doubling to maxBackoff, so a partition that is down
// costs a request every few seconds, not a loop.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// exhaustedEpoch is the epoch from which an id moves to a new producer id:
// Kafka keeps 32767 back so the coordinator can always fence one more time.
const exhaustedEpoch = math.MaxInt16 - 1

// Coordinator is Kafka's transaction coordinator as a deterministic state
// machine, so that every path through it, crashes included, can be driven
// by a test. It is not safe for concurrent use; the driver serializes
// calls.
type Coordinator struct {
	cfg   Config
	log   zerolog.Logger
	parts map[int32]int32 // loaded state partitions → coordinator epoch
	txns  map[string]*txn
	// seqs maps each Persist, Markers and CommitOffsets in flight to its
	// id, so a report for an id unloaded since is recognised and dropped.
	seqs    map[uint64]*txn
	lastSeq uint64
	nextPID int64 // for the default NewProducerID
	timers  timerHeap
	touched []*txn // ids changed by the current call, to reschedule
	// pending indexes the ids holding uncommitted offsets by group, for
	// PendingOffsets.
	pending map[string]map[*txn]struct{}

	persists  []Persist
	markers   []Markers
	ended     []Ended
	commits   []CommitOffsets
	responses []Response
}

// New returns a coordinator owning no state partition: every request is
// answered NOT_COORDINATOR until Load.
func New(cfg Config) *Coordinator {
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = defaultMaxTimeout
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = defaultIDExpiration
	}
	if cfg.MaxPartitions <= 0 {
		cfg.MaxPartitions = defaultMaxPartitions
	}
	if cfg.MaxPendingOffsets <= 0 {
		cfg.MaxPendingOffsets = defaultMaxPendingOffsets
	}
	if cfg.MaxIDs <= 0 {
		cfg.MaxIDs = defaultMaxIDs
	}
	if cfg.PartitionOf == nil {
		cfg.PartitionOf = func(string) int32 { return 0 }
	}
	c := &Coordinator{
		cfg:     cfg,
		log:     cfg.Logger,
		parts:   make(map[int32]int32),
		txns:    make(map[string]*txn),
		seqs:    make(map[uint64]*txn),
		pending: make(map[string]map[*txn]struct{}),
	}
	if c.cfg.NewProducerID == nil {
		c.cfg.NewProducerID = func() int64 { c.nextPID++; return c.nextPID }
	}
	return c
}

// Step feeds one client request at time now; its answer comes in a later
// Ready as Response{ID: id}, once the state record it depends on is
// persisted. req is an InitProducerId (with a transactional id),
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn or TxnOffsetCommit request
// with its Version set (see the package documentation for what each
// does); any other type is a programming error and gets no answer.
//
// Deadlines at or before now are carried out first, so the outcome does
// not depend on whether the caller ticked in between.
func (c *Coordinator) Step(now time.Time, id uint64, req kmsg.Request) error {
	var handle func()
	switch r := req.(type) {
	case *kmsg.InitProducerIDRequest:
		if r != nil {
			handle = func() { c.initProducerID(now, id, r) }
		}
	case *kmsg.AddPartitionsToTxnRequest:
		if r != nil {
			handle = func() { c.addPartitions(now, id, r) }
		}
	case *kmsg.AddOffsetsToTxnRequest:
		if r != nil {
			handle = func() { c.addOffsets(now, id, r) }
		}
	case *kmsg.EndTxnRequest:
		if r != nil {
			handle = func() { c.endTxn(now, id, r) }
		}
	case *kmsg.TxnOffsetCommitRequest:
		if r != nil {
			handle = func() { c.txnOffsetCommit(now, id, r) }
		}
	}
	if handle == nil {
		return fmt.Errorf("txncoord: cannot step a %T", req)
	}
	c.advance(now)
	handle()
	c.advance(now)
	return nil
}

// Tick advances time: aborts transactions past their timeout, expires idle
// ids and retries markers, offset commits and writes whose backoff passed.
// Each deadline is carried out as of its own time, so one late Tick ends
// in the same state as many punctual ones.
func (c *Coordinator) Tick(now time.Time) { c.advance(now) }

// Ready returns and clears everything to do, each list in the order it
// became due, and when to call Tick next.
func (c *Coordinator) Ready() Ready {
	rd := Ready{Persist: c.persists, Markers: c.markers, Commits: c.commits, Responses: c.responses, Ended: c.ended}
	c.persists, c.markers, c.commits, c.responses, c.ended = nil, nil, nil, nil, nil
	if len(c.timers) > 0 {
		rd.NextTick = c.timers[0].next
	}
	return rd
}

// Persisted reports the outcome of the Persist with seq. On success the
// record becomes the id's state and what waited on it goes on; on failure
// the id keeps the state it had, the requests that waited are answered
// COORDINATOR_NOT_AVAILABLE (Kafka's answer to a failed append, which
// clients retry), and a write the coordinator started itself is retried
// after a backoff. A seq the coordinator no longer knows (its partition
// was unloaded) is ignored.
func (c *Coordinator) Persisted(now time.Time, seq uint64, ok bool) {
	c.advance(now)
	t := c.seqs[seq]
	if t == nil || t.write == nil || t.write.seq != seq {
		return
	}
	delete(c.seqs, seq)
	w := t.write
	t.write = nil
	c.touch(t)
	code := int16(0)
	switch {
	case ok && w.tombstone:
		c.log.Info().Str("txn", t.rec.TxnID).Msg("transactional id expired")
		c.forget(t)
	case ok:
		c.setRecord(t, w.rec)
		t.fresh = false
	default:
		code = kerr.CoordinatorNotAvailable.Code
		c.log.Warn().Str("txn", t.rec.TxnID).Stringer("to", w.rec.State).Msg("state write failed, state kept")
		if t.fresh {
			c.forget(t)
		}
	}
	for _, a := range w.answers {
		a(code)
	}
	if w.then != nil && !t.gone {
		w.then(now, ok)
	}
	c.advance(now)
}

// respond queues msg as the answer to the request with handle id.
func (c *Coordinator) respond(id uint64, msg kmsg.Response) {
	c.responses = append(c.responses, Response{ID: id, Msg: msg})
}

// reply is an answer that waits for several parts (a batched
// AddPartitionsToTxn's transactions, each maybe waiting for its own
// write) and goes out when the last is filled in.
type reply struct {
	id   uint64
	msg  kmsg.Response
	left int
}

// newReply starts an answer with one part held by the handler itself,
// released when it has started every other part.
func newReply(id uint64, msg kmsg.Response) *reply { return &reply{id: id, msg: msg, left: 1} }

// release marks one part of r filled in, answering when none is left.
func (c *Coordinator) release(r *reply) {
	r.left--
	if r.left == 0 {
		c.respond(r.id, r.msg)
	}
}

// newSeq numbers a Persist, Markers or CommitOffsets of t.
func (c *Coordinator) newSeq(t *txn) uint64 {
	c.lastSeq++
	c.seqs[c.lastSeq] = t
	return c.lastSeq
}

// lookup finds the id's state: NOT_COORDINATOR when its partition is not
// loaded here, nil when the partition is loaded but the id unknown (or
// not yet persisted, which a request other than InitProducerId may not
// see).
func (c *Coordinator) lookup(txnID string) (*txn, int16) {
	if _, ok := c.parts[c.cfg.PartitionOf(txnID)]; !ok {
		return nil, kerr.NotCoordinator.Code
	}
	return c.txns[txnID], 0
}

// persist starts writing next as t's state. answers are the requests
// waiting on it (given 0 when it is persisted, else the error to answer);
// then continues the coordinator's own work once it reports.
func (c *Coordinator) persist(t *txn, next Record, answers []func(code int16), then func(now time.Time, ok bool)) {
	c.persistRecord(t, next, false, answers, then)
}

// persistRecord is persist, or with tombstone the write that forgets t.
func (c *Coordinator) persistRecord(t *txn, next Record, tombstone bool, answers []func(code int16), then func(now time.Time, ok bool)) {
	next.CoordinatorEpoch = c.parts[t.part]
	seq := c.newSeq(t)
	t.write = &write{seq: seq, rec: next, tombstone: tombstone, answers: answers, then: then}
	c.persists = append(c.persists, Persist{Seq: seq, Partition: t.part, Record: next.clone(), Tombstone: tombstone})
	c.touch(t)
}

// setRecord makes rec t's durable state and keeps the pending-offsets
// index in step. A successful write also ends any backoff of an earlier
// failed one.
func (c *Coordinator) setRecord(t *txn, rec Record) {
	c.unindex(t)
	t.rec = rec
	t.retryAt, t.backoff = time.Time{}, 0
	for g := range rec.PendingOffsets {
		m := c.pending[g]
		if m == nil {
			m = make(map[*txn]struct{})
			c.pending[g] = m
		}
		m[t] = struct{}{}
	}
}

// unindex takes t out of the pending-offsets index.
func (c *Coordinator) unindex(t *txn) {
	for g := range t.rec.PendingOffsets {
		delete(c.pending[g], t)
		if len(c.pending[g]) == 0 {
			delete(c.pending, g)
		}
	}
}

// forget drops t from memory, with everything it had in flight.
func (c *Coordinator) forget(t *txn) {
	c.unindex(t)
	c.unschedule(t)
	if t.write != nil {
		delete(c.seqs, t.write.seq)
	}
	if t.end != nil {
		delete(c.seqs, t.end.markerSeq)
		for seq := range t.end.commitSeqs {
			delete(c.seqs, seq)
		}
	}
	delete(c.txns, t.rec.TxnID)
	t.gone = true
}

// sortedIDs lists ids in order, so that what a call does to many ids comes
// out in the same order every run.
func sortedIDs[T any](m map[string]T) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
