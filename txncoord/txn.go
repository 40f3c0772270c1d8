package txncoord

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// txn is one transactional id held by the coordinator.
type txn struct {
	rec  Record // the durable state: last persisted or loaded
	part int32
	// fresh is an id whose first record is not persisted yet: were the
	// write to fail, the id would never have existed.
	fresh bool
	gone  bool   // forgotten; late callbacks must not touch it
	write *write // the state write in flight, at most one
	end   *ending
	// retryAt is when a failed step of the coordinator's own (a marker
	// round, an offset commit, a state write it started) is tried again;
	// backoff is the last wait, doubled on each failure in a row.
	retryAt time.Time
	backoff time.Duration

	next      time.Time // the deadline the timer heap holds t by
	heapIndex int
	touched   bool
}

// write is a state record on its way to the log.
type write struct {
	seq       uint64
	rec       Record
	tombstone bool
	// answers are the requests answered when the write reports: 0 when
	// persisted, else the error code to give.
	answers []func(code int16)
	// then is the coordinator's own next step.
	then func(now time.Time, ok bool)
}

// ending is a transaction in Prepare*, from its record being durable to
// Complete*: markers to write, then (commit only) offsets to commit.
type ending struct {
	left      map[TopicPartition]struct{} // markers not yet written
	markerSeq uint64                      // the Markers in flight, 0 none
	// groups are the groups whose offsets are still to commit: 0 waiting
	// to be sent, else the seq of the CommitOffsets in flight.
	groups     map[string]uint64
	commitSeqs map[uint64]string
	// stopped is set when a partition refused a marker as fenced: Kafka
	// stops there and leaves the id in Prepare* until the partition is
	// loaded again.
	stopped bool
}

var stateNames = [...]string{
	Empty:          "Empty",
	Ongoing:        "Ongoing",
	PrepareCommit:  "PrepareCommit",
	PrepareAbort:   "PrepareAbort",
	CompleteCommit: "CompleteCommit",
	CompleteAbort:  "CompleteAbort",
	Dead:           "Dead",
}

// String is the state's Kafka name, what DescribeTransactions and
// ListTransactions report.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// stateByName is the inverse of String, for List's filter and Decode.
func stateByName(name string) (State, bool) {
	for s, n := range stateNames {
		if n == name {
			return State(s), true
		}
	}
	return 0, false
}

// preparing reports a transaction whose end is decided and under way.
func (s State) preparing() bool { return s == PrepareCommit || s == PrepareAbort }

// clone copies r deeply, so the next state can be built without touching
// the durable one.
func (r Record) clone() Record {
	r.Partitions = slices.Clone(r.Partitions)
	r.Groups = slices.Clone(r.Groups)
	if r.PendingOffsets != nil {
		m := make(map[string][]Offset, len(r.PendingOffsets))
		for g, offs := range r.PendingOffsets {
			m[g] = slices.Clone(offs)
		}
		r.PendingOffsets = m
	}
	return r
}

// idle clears what belongs to an open transaction.
func (r *Record) idle() {
	r.Partitions, r.Groups, r.PendingOffsets = nil, nil, nil
	r.StartMillis = -1
}

// hasPartition reports whether tp is in the record's transaction.
func (r *Record) hasPartition(tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(r.Partitions, tp, compareTP)
	return ok
}

// compareTP orders partitions by topic, then number.
func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// fencedCode is Kafka's answer to a stale epoch: PRODUCER_FENCED, or
// INVALID_PRODUCER_EPOCH to request versions from before it existed.
func fencedCode(old bool) int16 {
	if old {
		return kerr.InvalidProducerEpoch.Code
	}
	return kerr.ProducerFenced.Code
}

// millis is t in Unix milliseconds, as records keep times.
func millis(t time.Time) int64 { return t.UnixMilli() }

// touch marks t for rescheduling at the end of the current call.
func (c *Coordinator) touch(t *txn) {
	if !t.touched {
		t.touched = true
		c.touched = append(c.touched, t)
	}
}

// settle reschedules every id the current call changed.
func (c *Coordinator) settle() {
	for _, t := range c.touched {
		t.touched = false
		if !t.gone {
			c.schedule(t)
		}
	}
	c.touched = c.touched[:0]
}

// nextBackoff arms t's retry after a failure, doubling the wait.
func (t *txn) nextBackoff(now time.Time) {
	t.backoff = min(max(2*t.backoff, minBackoff), maxBackoff)
	t.retryAt = now.Add(t.backoff)
}
