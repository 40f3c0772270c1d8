package sharestate

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Acknowledge applies a member's acknowledgements; the answer, a code per
// range, comes in a later Ready once what it reports is durable. Each
// range is applied whole or not at all:
//
//   - INVALID_REQUEST: a range that is empty, whose types are neither one
//     nor one per offset, with an unknown type, or reaching SPEO (never
//     delivered);
//   - INVALID_RECORD_STATE: an offset not acquired by the member (another
//     member's, available, done, or its lock expired), except that a Gap
//     of an archived offset is accepted as the no-op it is;
//   - 0 otherwise, also for the offsets below SPSO, which are done already
//     (Kafka answers them so too).
//
// Kafka fails the whole partition's acknowledgements at the first bad
// range; here the good ranges still take effect, so a member whose lock on
// one batch expired does not see its other batches redelivered.
func (p *Partition) Acknowledge(now time.Time, req AckRequest) {
	p.advance(now)
	deadline := now.Add(p.cfg.lockFor(req.Lock)).UnixNano()
	codes := make([]int16, len(req.Ranges))
	for i, r := range req.Ranges {
		codes[i] = p.acknowledge(req.Member, r, deadline)
	}
	p.settle()
	p.answer(Answer{ID: req.ID, Codes: codes})
}

// ackRun is a part of an acknowledgement range with one type.
type ackRun struct {
	first, last int64
	typ         AckType
}

// acknowledge applies one range, or none of it, and returns its code.
func (p *Partition) acknowledge(member string, r AckRange, deadline int64) int16 {
	if !validAck(r) {
		return kerr.InvalidRequest.Code
	}
	if r.Last < p.start {
		return 0
	}
	if r.Last >= p.end {
		return kerr.InvalidRequest.Code
	}
	runs := ackRuns(r, max(r.First, p.start))
	for _, run := range runs {
		if !p.canAck(member, run) {
			return kerr.InvalidRecordState.Code
		}
	}
	for _, run := range runs {
		p.ack(run, deadline)
	}
	return 0
}

// validAck checks a range's shape and types.
func validAck(r AckRange) bool {
	if r.First < 0 || r.First > r.Last || len(r.Types) == 0 {
		return false
	}
	if len(r.Types) > 1 && uint64(len(r.Types)-1) != uint64(r.Last-r.First) {
		return false
	}
	for _, t := range r.Types {
		if t < Gap || t > Renew {
			return false
		}
	}
	return true
}

// ackRuns cuts r from offset from on into runs of one type: one run when
// r has one type, else as many as the type changes.
func ackRuns(r AckRange, from int64) []ackRun {
	if len(r.Types) == 1 {
		return []ackRun{{from, r.Last, r.Types[0]}}
	}
	var runs []ackRun
	for off := from; off <= r.Last; off++ {
		t := r.Types[off-r.First]
		if n := len(runs); n > 0 && runs[n-1].typ == t {
			runs[n-1].last = off
			continue
		}
		runs = append(runs, ackRun{off, off, t})
	}
	return runs
}

// canAck reports whether the member may acknowledge run: every offset is
// acquired by it, or archived already for a Gap.
func (p *Partition) canAck(member string, run ackRun) bool {
	for pos := run.first; pos <= run.last; {
		e := p.entries[p.find(pos)]
		if !(e.state == Acquired && e.member == member || run.typ == Gap && e.state == Archived) {
			return false
		}
		pos = e.last + 1
	}
	return true
}

// ack applies a run canAck allowed.
func (p *Partition) ack(run ackRun, deadline int64) {
	i, j := p.isolate(run.first, run.last)
	for k := i; k < j; k++ {
		e := p.entries[k]
		if e.state != Acquired {
			continue
		}
		switch run.typ {
		case Renew:
			e.deadline = deadline
			p.put(k, e)
			continue
		case Release:
			p.put(k, p.release(e))
			continue
		case Accept:
			e.state = Acknowledged
		case Gap, Reject:
			e.state = Archived
		}
		e.member, e.deadline = "", 0
		p.put(k, e)
	}
}

// ReleaseMember gives back everything member holds, when it left the group
// or closed its share session: its records become available again, or
// archived at the delivery count limit, as if their locks expired.
func (p *Partition) ReleaseMember(now time.Time, member string) {
	p.advance(now)
	for i, e := range p.entries {
		if e.state == Acquired && e.member == member {
			p.put(i, p.release(e))
		}
	}
	p.settle()
}
