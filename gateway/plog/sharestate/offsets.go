package sharestate

import (
	"fmt"
	"time"
)

// MoveLogStart tells the partition that the log no longer holds the
// offsets below offset (retention, DeleteRecords): available records there
// are archived, and records still acquired there are archived rather than
// made available when they come back. SPEO moves up to offset when it was
// below, over a gap. Kafka moves SPSO to the log start outright; here SPSO
// follows once the records a member still holds are done, so every offset
// below SPSO stays done.
func (p *Partition) MoveLogStart(now time.Time, offset int64) {
	p.advance(now)
	p.logStart = max(p.logStart, offset)
	if p.logStart > p.end {
		p.push(entry{first: p.end, last: p.logStart - 1, state: Archived})
	}
	p.settle()
}

// ResetStartOffset moves SPSO to offset, for an admin's
// AlterShareGroupOffsets or a reset of the group's start, which Kafka
// allows only while the group has no members: here only while nothing is
// acquired, else it is an error and nothing changes. Moving forward keeps
// what is known of the offsets from there on (a record already
// acknowledged there is not delivered again); moving back, or past SPEO,
// starts the partition over at offset with nothing in flight. The next
// record is a snapshot.
func (p *Partition) ResetStartOffset(now time.Time, offset int64) error {
	if offset < 0 {
		return errNegative
	}
	p.advance(now)
	for _, e := range p.entries {
		if e.state == Acquired {
			return fmt.Errorf("sharestate: cannot reset the start offset while %q holds offsets %d to %d", e.member, e.first, e.last)
		}
	}
	if offset < p.start || offset >= p.end {
		p.entries = nil
		p.start, p.end = offset, offset
	} else {
		p.split(offset)
		p.entries = p.entries[p.find(offset):]
		p.start = offset
	}
	p.dirty, p.changed, p.wantSnapshot = nil, true, true
	p.settle()
	return nil
}
