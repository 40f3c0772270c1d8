package sharestate

import (
	"errors"
	"fmt"
	"slices"
)

// Load rebuilds a share-partition from its durable records, after a
// restart or when its ownership moved: the latest snapshot, then the
// updates written after it, in order. Updates numbered at or below the one
// before them are skipped (written before the snapshot, or twice); a
// missing number is an error, as is an update going back, leaving a hole,
// or any record that validate refuses. What was acquired comes back
// available with its delivery count, so it is redelivered and the count
// goes on, or archived when that count reached the limit: a restart ends
// every lock as if it expired. The log start is not persisted: the driver tells it again with
// MoveLogStart before the first Acquire.
//
// The first record of the loaded partition is a snapshot, so the updates
// of an owner before it never need reading again, and one that such an
// owner still wrote late, behind it, is skipped by its number.
func Load(cfg Config, snapshot Record, updates ...Record) (*Partition, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !snapshot.Snapshot {
		return nil, errors.New("sharestate: loading from an update, not a snapshot")
	}
	if err := snapshot.validate(); err != nil {
		return nil, err
	}
	p := &Partition{cfg: cfg.WithDefaults(), start: snapshot.Start, end: snapshot.End}
	for _, s := range snapshot.States {
		p.entries = append(p.entries, entry{first: s.First, last: s.Last, state: s.State, count: s.DeliveryCount})
	}
	seq := snapshot.Seq
	for _, u := range updates {
		if u.Seq <= seq {
			continue
		}
		if u.Seq != seq+1 {
			return nil, fmt.Errorf("sharestate: record %d follows %d: records are missing", u.Seq, seq)
		}
		if err := p.apply(u); err != nil {
			return nil, err
		}
		seq = u.Seq
	}
	for i, e := range p.entries {
		if e.state == Available {
			p.entries[i] = p.release(e)
		}
	}
	p.settle()
	p.lastSeq, p.durable = seq, seq
	p.dirty, p.changed, p.wantSnapshot = nil, false, true
	return p, nil
}

// apply lays an update over the state: SPSO and SPEO move up to its own,
// and its states replace what they cover.
func (p *Partition) apply(u Record) error {
	if u.Snapshot {
		return fmt.Errorf("sharestate: record %d is a snapshot among updates", u.Seq)
	}
	if err := u.validate(); err != nil {
		return err
	}
	if u.Start < p.start || u.End < p.end {
		return fmt.Errorf("sharestate: update %d goes back: [%d, %d) after [%d, %d)", u.Seq, u.Start, u.End, p.start, p.end)
	}
	if u.Start >= p.end {
		p.entries = nil
		p.end = u.Start
	} else {
		p.split(u.Start)
		p.entries = p.entries[p.find(u.Start):]
	}
	p.start = u.Start
	for _, s := range u.States {
		e := entry{first: s.First, last: s.Last, state: s.State, count: s.DeliveryCount}
		if s.First < p.end {
			e.last = min(s.Last, p.end-1)
			i, j := p.isolate(e.first, e.last)
			p.entries = slices.Replace(p.entries, i, j, e)
			e.first, e.last = e.last+1, s.Last
		}
		if e.first > e.last {
			continue
		}
		if e.first != p.end {
			return fmt.Errorf("sharestate: update %d leaves offsets %d to %d without a state", u.Seq, p.end, e.first-1)
		}
		p.push(e)
	}
	if p.end != u.End {
		return fmt.Errorf("sharestate: update %d leaves offsets %d to %d without a state", u.Seq, p.end, u.End-1)
	}
	return nil
}
