package sharestate

import (
	"errors"
	"time"
)

// model is the share-partition's semantics written the plain way, one
// offset at a time in a map, for the random histories to compare the
// range-keeping Partition against: it shares no code with it.
type model struct {
	cfg        Config
	start, end int64
	logStart   int64
	recs       map[int64]mrec
}

// mrec is one offset's state in the model (and a Partition's, expanded).
type mrec struct {
	state    State
	count    int16
	member   string
	deadline int64
}

func (r mrec) done() bool { return r.state == Acknowledged || r.state == Archived }

func newModel(cfg Config, start int64) *model {
	return &model{cfg: cfg.WithDefaults(), start: start, end: start, recs: map[int64]mrec{}}
}

func (m *model) release(r mrec) mrec {
	r.member, r.deadline, r.state = "", 0, Available
	if int(r.count) >= m.cfg.DeliveryCountLimit {
		r.state = Archived
	}
	return r
}

func (m *model) settle() {
	for o := m.start; o < m.end && o < m.logStart; o++ {
		if r := m.recs[o]; r.state == Available {
			r.state = Archived
			m.recs[o] = r
		}
	}
	for m.start < m.end && m.recs[m.start].done() {
		delete(m.recs, m.start)
		m.start++
	}
}

func (m *model) advance(now time.Time) {
	for o := m.start; o < m.end; o++ {
		if r := m.recs[o]; r.state == Acquired && r.deadline <= now.UnixNano() {
			m.recs[o] = m.release(r)
		}
	}
	m.settle()
}

func (m *model) inFlight() int64 {
	var n int64
	for o := m.start; o < m.end; o++ {
		if r := m.recs[o]; r.state != Archived || r.count != 0 {
			n++
		}
	}
	return n
}

var errModel = errors.New("model: refused")

func (m *model) acquire(now time.Time, req AcquireRequest) ([]AcquiredRecords, error) {
	if req.Member == "" || req.From < 0 || req.From > m.end {
		return nil, errModel
	}
	for i, b := range req.Batches {
		if b.First < 0 || b.First > b.Last || i > 0 && b.First <= req.Batches[i-1].Last {
			return nil, errModel
		}
	}
	m.advance(now)
	lock := req.Lock
	if lock <= 0 {
		lock = m.cfg.LockDuration
	}
	deadline := now.Add(min(lock, m.cfg.MaxLockDuration)).UnixNano()
	budget, room := int64(1<<62), int64(m.cfg.MaxInFlight)-m.inFlight()
	if req.MaxRecords > 0 {
		budget = int64(req.MaxRecords)
	}
	inBatch := func(o int64) bool {
		for _, b := range req.Batches {
			if b.First <= o && o <= b.Last {
				return true
			}
		}
		return false
	}
	var got []AcquiredRecords
	took := func(o int64, count int16) {
		budget--
		if n := len(got); n > 0 && got[n-1].Last+1 == o && got[n-1].DeliveryCount == count {
			got[n-1].Last = o
			return
		}
		got = append(got, AcquiredRecords{o, o, count})
	}
	readEnd := int64(0)
	if n := len(req.Batches); n > 0 {
		readEnd = req.Batches[n-1].Last + 1
	}
	for o := max(req.From, m.start); o < readEnd; o++ {
		if o < m.end {
			r := m.recs[o]
			switch {
			case r.state != Available:
			case !inBatch(o):
				r.state = Archived
				m.recs[o] = r
			case budget > 0:
				r = mrec{Acquired, r.count + 1, req.Member, deadline}
				m.recs[o] = r
				took(o, r.count)
			}
			continue
		}
		if !inBatch(o) {
			m.recs[o] = mrec{state: Archived}
		} else if budget > 0 && room > 0 {
			m.recs[o] = mrec{Acquired, 1, req.Member, deadline}
			took(o, 1)
			room--
		} else {
			break
		}
		m.end++
	}
	m.settle()
	return got, nil
}

func (m *model) acknowledge(now time.Time, req AckRequest) []int16 {
	m.advance(now)
	lock := req.Lock
	if lock <= 0 {
		lock = m.cfg.LockDuration
	}
	deadline := now.Add(min(lock, m.cfg.MaxLockDuration)).UnixNano()
	codes := make([]int16, len(req.Ranges))
	for i, r := range req.Ranges {
		codes[i] = m.ackRange(req.Member, r, deadline)
	}
	m.settle()
	return codes
}

func (m *model) ackRange(member string, r AckRange, deadline int64) int16 {
	n := r.Last - r.First + 1
	if r.First < 0 || n <= 0 || len(r.Types) == 0 || len(r.Types) != 1 && int64(len(r.Types)) != n {
		return badRequest
	}
	for _, t := range r.Types {
		if t < Gap || t > Renew {
			return badRequest
		}
	}
	typ := func(o int64) AckType {
		if len(r.Types) == 1 {
			return r.Types[0]
		}
		return r.Types[o-r.First]
	}
	if r.Last < m.start {
		return 0
	}
	if r.Last >= m.end {
		return badRequest
	}
	for o := max(r.First, m.start); o <= r.Last; o++ {
		rec := m.recs[o]
		if !(rec.state == Acquired && rec.member == member || typ(o) == Gap && rec.state == Archived) {
			return badState
		}
	}
	for o := max(r.First, m.start); o <= r.Last; o++ {
		rec := m.recs[o]
		if rec.state != Acquired {
			continue
		}
		switch typ(o) {
		case Renew:
			rec.deadline = deadline
		case Release:
			rec = m.release(rec)
		case Accept:
			rec = mrec{state: Acknowledged, count: rec.count}
		default:
			rec = mrec{state: Archived, count: rec.count}
		}
		m.recs[o] = rec
	}
	return 0
}

func (m *model) releaseMember(now time.Time, member string) {
	m.advance(now)
	for o := m.start; o < m.end; o++ {
		if r := m.recs[o]; r.state == Acquired && r.member == member {
			m.recs[o] = m.release(r)
		}
	}
	m.settle()
}

func (m *model) moveLogStart(now time.Time, off int64) {
	m.advance(now)
	m.logStart = max(m.logStart, off)
	for ; m.end < m.logStart; m.end++ {
		m.recs[m.end] = mrec{state: Archived}
	}
	m.settle()
}

func (m *model) reset(now time.Time, off int64) error {
	if off < 0 {
		return errModel
	}
	m.advance(now)
	for o := m.start; o < m.end; o++ {
		if m.recs[o].state == Acquired {
			return errModel
		}
	}
	if off < m.start || off >= m.end {
		m.recs = map[int64]mrec{}
		m.start, m.end = off, off
	} else {
		for ; m.start < off; m.start++ {
			delete(m.recs, m.start)
		}
	}
	m.settle()
	return nil
}

// restarted is the model of a partition loaded from the persisted state
// v: what was acquired at the delivery count limit is archived, as an
// expired lock would be.
func restarted(cfg Config, v view) *model {
	m := &model{cfg: cfg.WithDefaults(), start: v.start, end: v.end, recs: map[int64]mrec{}}
	for i, r := range v.recs {
		if r.state == Available {
			r = m.release(r)
		}
		m.recs[v.start+int64(i)] = r
	}
	m.settle()
	return m
}

// expanded is the model's state offset by offset from SPSO to SPEO.
func (m *model) expanded() []mrec {
	out := make([]mrec, 0, m.end-m.start)
	for o := m.start; o < m.end; o++ {
		out = append(out, m.recs[o])
	}
	return out
}

// expanded is the partition's state offset by offset from SPSO to SPEO.
func (p *Partition) expanded() []mrec {
	out := make([]mrec, 0, p.end-p.start)
	for _, e := range p.entries {
		for range e.last - e.first + 1 {
			out = append(out, mrec{e.state, e.count, e.member, e.deadline})
		}
	}
	return out
}

// persisted is what survives a restart of an expanded state: locks end,
// acquired records are available with their count.
func persisted(recs []mrec) []mrec {
	out := make([]mrec, len(recs))
	for i, r := range recs {
		if r.state == Acquired {
			r = mrec{state: Available, count: r.count}
		}
		out[i] = r
	}
	return out
}
