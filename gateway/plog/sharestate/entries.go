package sharestate

import (
	"slices"
	"sort"
)

// entry is a run of consecutive offsets in one state: a batch as it was
// acquired, or the part of one that a later change split off.
type entry struct {
	first, last int64
	state       State
	count       int16  // deliveries so far
	member      string // the holder while Acquired
	deadline    int64  // the lock's end in Unix nanoseconds while Acquired
}

// done reports whether the offsets need nothing more: SPSO moves over them.
func (e entry) done() bool { return e.state == Acknowledged || e.state == Archived }

// gap reports whether e holds no record: archived without ever being
// delivered. Gaps do not count against the in-flight cap, so a compacted
// log does not stall the partition.
func (e entry) gap() bool { return e.state == Archived && e.count == 0 }

// same reports whether e and o may be one run.
func (e entry) same(o entry) bool {
	return e.state == o.state && e.count == o.count && e.member == o.member && e.deadline == o.deadline
}

// durable is what is persisted of e: a lock ends with the process holding
// it, so Acquired is kept as Available with its delivery count.
func (e entry) durable() (State, int16) {
	if e.state == Acquired {
		return Available, e.count
	}
	return e.state, e.count
}

// find is the index of the entry holding off, which must lie in
// [start, end).
func (p *Partition) find(off int64) int {
	return sort.Search(len(p.entries), func(i int) bool { return p.entries[i].last >= off })
}

// split makes an entry begin at off, when off lies inside one.
func (p *Partition) split(off int64) {
	if off <= p.start || off >= p.end {
		return
	}
	i := p.find(off)
	e := p.entries[i]
	if e.first == off {
		return
	}
	lo, hi := e, e
	lo.last, hi.first = off-1, off
	p.entries = slices.Insert(p.entries, i+1, hi)
	p.entries[i] = lo
}

// isolate splits entries so that [first, last] (inside [start, end)) is
// exactly entries[i:j].
func (p *Partition) isolate(first, last int64) (i, j int) {
	p.split(first)
	p.split(last + 1)
	return p.find(first), p.find(last) + 1
}

// put replaces entries[i] with e, noting its offsets for the next record
// when what is persisted of them changed.
func (p *Partition) put(i int, e entry) {
	os, oc := p.entries[i].durable()
	p.entries[i] = e
	if ns, nc := e.durable(); ns != os || nc != oc {
		p.touch(e.first, e.last)
	}
}

// push appends e at SPEO, which it moves: offsets taken in for the first
// time are always persisted.
func (p *Partition) push(e entry) {
	p.entries = append(p.entries, e)
	p.end = e.last + 1
	p.touch(e.first, e.last)
}

// release ends e's acquisition: Available again, or Archived once it was
// delivered DeliveryCountLimit times.
func (p *Partition) release(e entry) entry {
	e.member, e.deadline = "", 0
	e.state = Available
	if int(e.count) >= p.cfg.DeliveryCountLimit {
		e.state = Archived
	}
	return e
}

// settle restores what every call leaves true: nothing available below the
// log start, runs as long as they can be, SPSO at the first offset not
// done.
func (p *Partition) settle() {
	p.archiveBelowLogStart()
	p.normalize()
	p.advanceStart()
}

// archiveBelowLogStart archives the available records the log no longer
// holds: they can never be delivered again.
func (p *Partition) archiveBelowLogStart() {
	if p.logStart <= p.start {
		return
	}
	p.split(p.logStart)
	for i := 0; i < len(p.entries) && p.entries[i].last < p.logStart; i++ {
		if e := p.entries[i]; e.state == Available {
			e.state = Archived
			p.put(i, e)
		}
	}
}

// normalize merges neighbouring entries in the same state, undoing the
// splits a change did not need.
func (p *Partition) normalize() {
	out := p.entries[:0]
	for _, e := range p.entries {
		if n := len(out); n > 0 && out[n-1].same(e) {
			out[n-1].last = e.last
			continue
		}
		out = append(out, e)
	}
	p.entries = out
}

// advanceStart moves SPSO over the done prefix and forgets it.
func (p *Partition) advanceStart() {
	k := 0
	for k < len(p.entries) && p.entries[k].done() {
		k++
	}
	if k == 0 {
		return
	}
	p.entries = slices.Delete(p.entries, 0, k)
	p.start = p.end
	if len(p.entries) > 0 {
		p.start = p.entries[0].first
	}
	p.changed = true
	p.dirty.dropBelow(p.start)
}

// inFlight counts the records between SPSO and SPEO, gaps left out.
func (p *Partition) inFlight() int64 {
	var n int64
	for _, e := range p.entries {
		if !e.gap() {
			n += e.last - e.first + 1
		}
	}
	return n
}
