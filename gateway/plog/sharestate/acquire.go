package sharestate

import (
	"errors"
	"fmt"
	"math"
	"time"
)

var (
	errNegative = errors.New("sharestate: negative offset")
	errNoMember = errors.New("sharestate: acquiring without a member id")
)

// Acquire hands records of a share fetch to req.Member: the available
// records in flight that the read covers first, lowest offsets first, then
// new records from SPEO on, at most req.MaxRecords in all and never more
// in flight than Config.MaxInFlight. A batch is taken whole unless a cap
// falls inside it. Offsets the read covers but no batch holds are never
// delivered: available ones in flight are archived (their record is gone),
// new ones are noted as gaps. The records stay the member's until it
// acknowledges or releases them, leaves, or the lock expires.
//
// The answer does not wait for a write: the acquisition (the delivery
// counts) goes into the next record, as Kafka's share fetch does not wait
// either, so a crash before that record is written costs at most this
// delivery's count. An error means the request was malformed (the read
// starting past SPEO among others: MoveLogStart first), and nothing
// changed.
func (p *Partition) Acquire(now time.Time, req AcquireRequest) ([]AcquiredRecords, error) {
	if err := p.checkRead(req); err != nil {
		return nil, err
	}
	p.advance(now)
	a := acquisition{
		p:        p,
		member:   req.Member,
		deadline: now.Add(p.cfg.lockFor(req.Lock)).UnixNano(),
		budget:   math.MaxInt64,
		room:     int64(p.cfg.MaxInFlight) - p.inFlight(),
	}
	if req.MaxRecords > 0 {
		a.budget = int64(req.MaxRecords)
	}
	pos := max(req.From, p.start)
	for _, b := range req.Batches {
		if b.Last < pos {
			continue
		}
		first := max(b.First, pos)
		if first > pos {
			a.segment(pos, first-1, false)
		}
		if !a.segment(first, b.Last, true) {
			break
		}
		pos = b.Last + 1
	}
	p.settle()
	return a.got, nil
}

// checkRead refuses a read the partition cannot make sense of.
func (p *Partition) checkRead(req AcquireRequest) error {
	if req.Member == "" {
		return errNoMember
	}
	if req.From < 0 {
		return errNegative
	}
	if req.From > p.end {
		return fmt.Errorf("sharestate: read from %d, past SPEO %d (has the log start moved?)", req.From, p.end)
	}
	for i, b := range req.Batches {
		if b.First < 0 || b.First > b.Last || i > 0 && b.First <= req.Batches[i-1].Last {
			return fmt.Errorf("sharestate: batch %d [%d, %d] is not after the one before, or empty", i, b.First, b.Last)
		}
	}
	return nil
}

// acquisition is one Acquire under way.
type acquisition struct {
	p        *Partition
	member   string
	deadline int64
	budget   int64 // records the request may still take
	room     int64 // new records the in-flight cap still allows
	got      []AcquiredRecords
}

// segment takes in the offsets [first, last] of the read, all in one batch
// or all in none. It reports whether the read may go on: false once a cap
// stopped it short of last among new records, which only a batch can.
func (a *acquisition) segment(first, last int64, batch bool) bool {
	p := a.p
	for pos := first; pos <= last && pos < p.end; {
		e := p.entries[p.find(pos)]
		hi := min(last, e.last)
		switch {
		case e.state != Available:
		case !batch:
			i, _ := p.isolate(pos, hi)
			e = p.entries[i]
			e.state = Archived
			p.put(i, e)
		case a.budget > 0:
			if hi-pos+1 > a.budget {
				hi = pos + a.budget - 1
			}
			i, _ := p.isolate(pos, hi)
			e = p.entries[i]
			e.state, e.count, e.member, e.deadline = Acquired, e.count+1, a.member, a.deadline
			p.put(i, e)
			a.took(pos, hi, e.count)
		}
		pos = hi + 1
	}
	from := max(first, p.end)
	if from > last {
		return true
	}
	if !batch {
		p.push(entry{first: from, last: last, state: Archived})
		return true
	}
	n := min(last-from+1, a.budget, a.room)
	if n > 0 {
		p.push(entry{first: from, last: from + n - 1, state: Acquired, count: 1, member: a.member, deadline: a.deadline})
		a.took(from, from+n-1, 1)
		a.room -= n
	}
	return n == last-from+1
}

// took adds [first, last] to the answer, joined to the run before it when
// they continue each other with the same count.
func (a *acquisition) took(first, last int64, count int16) {
	a.budget -= last - first + 1
	if n := len(a.got); n > 0 && a.got[n-1].Last+1 == first && a.got[n-1].DeliveryCount == count {
		a.got[n-1].Last = last
		return
	}
	a.got = append(a.got, AcquiredRecords{First: first, Last: last, DeliveryCount: count})
}
