package sharestate

import (
	"math"
	"time"
)

// Partition is one share-partition's delivery state. It is not safe for
// concurrent use: its owner, the partition log, serializes calls.
type Partition struct {
	cfg        Config
	start, end int64 // SPSO and SPEO
	// logStart is the first offset the log still holds, as last told;
	// nothing below it is made available again.
	logStart int64
	// entries cover [start, end) in order, no two neighbours the same.
	entries []entry

	dirty         rangeSet // offsets whose persisted state changed since the last record
	changed       bool     // something to persist since the last record
	wantSnapshot  bool     // the next record is a snapshot
	sinceSnapshot int      // updates since the last snapshot
	lastSeq       uint64   // the last record's Seq
	durable       uint64   // the highest Seq persisted

	waiting  []waiter // answers held until their record is durable, in order
	released []Answer // answers for the next Ready
}

// waiter is an answer held until the record numbered seq is durable.
type waiter struct {
	seq    uint64
	answer Answer
}

// New starts a share-partition whose SPSO is start (found by the group's
// share.auto.offset.reset, or given by an admin), with nothing in flight.
// Its first record is a snapshot, the partition's durable beginning.
func New(cfg Config, start int64) (*Partition, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if start < 0 {
		return nil, errNegative
	}
	return &Partition{cfg: cfg.WithDefaults(), start: start, end: start, wantSnapshot: true}, nil
}

// Ready returns and clears what the driver must do: the record to write,
// when one is due and none is being written, and the answers released.
// Call it after every other call.
func (p *Partition) Ready() Ready {
	rd := Ready{Answers: p.released}
	p.released = nil
	if p.durable < p.lastSeq || !(p.changed || p.wantSnapshot) {
		return rd
	}
	p.lastSeq++
	var rec Record
	if p.wantSnapshot || p.sinceSnapshot+1 >= p.cfg.UpdatesPerSnapshot {
		rec = p.snapshot()
		p.sinceSnapshot = 0
	} else {
		rec = p.update()
		p.sinceSnapshot++
	}
	p.dirty, p.changed, p.wantSnapshot = nil, false, false
	rd.Record = &rec
	return rd
}

// Persisted reports that the record numbered seq, and so every record
// before it, is durable: the answers waiting on it are released, and the
// next Ready may ask for the next record. Any other seq is ignored.
func (p *Partition) Persisted(seq uint64) {
	if seq != p.lastSeq || seq <= p.durable {
		return
	}
	p.durable = seq
	k := 0
	for k < len(p.waiting) && p.waiting[k].seq <= seq {
		p.released = append(p.released, p.waiting[k].answer)
		k++
	}
	p.waiting = p.waiting[k:]
}

// Abandon gives the partition up, when its record could not be written
// (the state in memory may then be ahead of the durable one, which only a
// Load can tell) or its ownership moved. It returns every answer not yet
// handed out, the ranges whose outcome is not durable given code (a
// retriable one, so the member tries again against the reloaded state).
// The partition must not be used afterwards.
func (p *Partition) Abandon(code int16) []Answer {
	out := p.released
	for _, w := range p.waiting {
		for i, c := range w.answer.Codes {
			if c == 0 {
				w.answer.Codes[i] = code
			}
		}
		out = append(out, w.answer)
	}
	p.released, p.waiting = nil, nil
	return out
}

// WantSnapshot makes the next record a snapshot, also when nothing
// changed: the driver asks for one when the stream keeping the records
// would otherwise expire the last snapshot.
func (p *Partition) WantSnapshot() { p.wantSnapshot = true }

// answer queues the answer to an acknowledgement, held until everything
// decided before it is durable: the record to come when something is
// still unwritten, else the last one.
func (p *Partition) answer(a Answer) {
	seq := p.lastSeq
	if p.changed || p.wantSnapshot {
		seq++
	}
	if seq <= p.durable {
		p.released = append(p.released, a)
		return
	}
	p.waiting = append(p.waiting, waiter{seq: seq, answer: a})
}

// StartOffset is SPSO: every offset below it is acknowledged or archived
// (DescribeShareGroupOffsets reports it).
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is SPEO: one past the last offset ever taken in.
func (p *Partition) EndOffset() int64 { return p.end }

// InFlight counts the records between SPSO and SPEO, gaps left out: what
// the in-flight cap limits.
func (p *Partition) InFlight() int { return int(p.inFlight()) }

// FetchOffset is where the next share fetch should read the log from: the
// first available record, else SPEO. ok is false when reading is useless,
// nothing being available and the in-flight cap reached.
func (p *Partition) FetchOffset() (offset int64, ok bool) {
	for _, e := range p.entries {
		if e.state == Available {
			return e.first, true
		}
	}
	return p.end, p.inFlight() < int64(p.cfg.MaxInFlight)
}

// NextDeadline is the earliest lock to expire, when Tick has something to
// do; zero when nothing is acquired.
func (p *Partition) NextDeadline() time.Time {
	next := int64(math.MaxInt64)
	for _, e := range p.entries {
		if e.state == Acquired {
			next = min(next, e.deadline)
		}
	}
	if next == math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, next)
}

// Tick expires the locks due at or before now: their records become
// available again, or archived at the delivery count limit.
func (p *Partition) Tick(now time.Time) { p.advance(now) }

// advance expires the locks due at or before now. Every call taking a time
// runs it first, so an outcome never depends on whether the driver ticked
// in between.
func (p *Partition) advance(now time.Time) {
	ns := now.UnixNano()
	for i, e := range p.entries {
		if e.state == Acquired && e.deadline <= ns {
			p.put(i, p.release(e))
		}
	}
	p.settle()
}
