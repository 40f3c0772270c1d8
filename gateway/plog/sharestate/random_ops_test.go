package sharestate

import (
	"reflect"
	"slices"
	"time"
)

// member is one of the three members, at random.
func (w *world) member() string { return []string{"a", "b", "c"}[w.rng.IntN(3)] }

// produce appends n batches to the log, some after a gap.
func (w *world) produce(n int) {
	for range n {
		if w.rng.IntN(3) == 0 {
			w.logEnd += int64(1 + w.rng.IntN(12))
		}
		size := int64(1 + w.rng.IntN(8))
		w.log = append(w.log, Range{w.logEnd, w.logEnd + size - 1})
		w.logEnd += size
	}
}

// acquire reads from where the partition says (or elsewhere, sometimes
// past SPEO, which must fail) and acquires what it read, for partition and
// model alike, checking what was handed out.
func (w *world) acquire() {
	from, _ := w.p.FetchOffset()
	switch w.rng.IntN(10) {
	case 0:
		from = w.p.start + w.rng.Int64N(w.p.end-w.p.start+1)
	case 1:
		from = w.p.end + 1
	}
	req := AcquireRequest{Member: w.member(), From: from, Lock: time.Duration(w.rng.IntN(3)) * 25 * time.Second}
	if w.rng.IntN(2) == 0 {
		req.MaxRecords = 1 + w.rng.IntN(30)
	}
	read := max(from, w.logStart)
	reads := 1 + w.rng.IntN(5)
	for _, b := range w.log {
		if b.Last >= read && len(req.Batches) < reads {
			req.Batches = append(req.Batches, b)
		}
	}
	before := w.m.expanded()
	beforeStart := w.m.start
	got, err := w.p.Acquire(w.now, req)
	want, werr := w.m.acquire(w.now, req)
	if (err != nil) != (werr != nil) || !reflect.DeepEqual(got, want) {
		w.t.Fatalf("acquire %+v: got %v, %v; the model %v, %v", req, got, err, want, werr)
	}
	for _, a := range got {
		if a.DeliveryCount < 1 || int(a.DeliveryCount) > w.cfg.DeliveryCountLimit {
			w.t.Fatalf("acquired %+v: delivery count outside [1, %d]", a, w.cfg.DeliveryCountLimit)
		}
		for o := a.First; o <= a.Last; o++ {
			if w.final[o] {
				w.t.Fatalf("offset %d delivered again after its acceptance or rejection was answered", o)
			}
			if i := o - beforeStart; i >= 0 && i < int64(len(before)) {
				if r := before[i]; r.state == Acquired && r.deadline > w.now.UnixNano() {
					w.t.Fatalf("offset %d handed to %s while %s holds it", o, req.Member, r.member)
				}
			}
		}
	}
}

// acknowledge sends an acknowledgement of what a member holds, or of
// anything, with one type, a type per offset, or malformed.
func (w *world) acknowledge() {
	member := w.member()
	var held []int64
	for o, r := range w.m.recs {
		if r.state == Acquired && r.member == member {
			held = append(held, o)
		}
	}
	slices.Sort(held)
	var ranges []AckRange
	for range 1 + w.rng.IntN(3) {
		var first, last int64
		if len(held) > 0 && w.rng.IntN(4) > 0 {
			o := held[w.rng.IntN(len(held))]
			first, last = max(0, o-w.rng.Int64N(3)), o+w.rng.Int64N(6)
		} else {
			first = max(0, w.p.start-3+w.rng.Int64N(w.p.end-w.p.start+6))
			last = first + w.rng.Int64N(5)
		}
		r := AckRange{First: first, Last: last, Types: []AckType{AckType(w.rng.IntN(5))}}
		switch w.rng.IntN(10) {
		case 0:
			r.Types = []AckType{AckType(w.rng.IntN(7) - 1), Accept}
		case 1, 2, 3:
			r.Types = nil
			for range last - first + 1 {
				r.Types = append(r.Types, AckType(w.rng.IntN(5)))
			}
		}
		ranges = append(ranges, r)
	}
	w.nextID++
	req := AckRequest{ID: w.nextID, Member: member, Ranges: ranges, Lock: time.Duration(w.rng.IntN(3)) * 25 * time.Second}
	w.p.Acknowledge(w.now, req)
	w.requests[req.ID] = &sent{req: req, codes: w.m.acknowledge(w.now, req)}
}

// answered records what an answer says and checks it against the model's
// codes for the same request.
func (w *world) answered(a Answer) {
	s, ok := w.requests[a.ID]
	if !ok {
		w.t.Fatalf("answer %+v to no request, or twice", a)
	}
	delete(w.requests, a.ID)
	if !slices.Equal(a.Codes, s.codes) {
		w.t.Fatalf("answer %+v to %+v, the model's codes %v", a, s.req, s.codes)
	}
	for i, r := range s.req.Ranges {
		if a.Codes[i] != 0 || s.stale {
			continue
		}
		for o := r.First; o <= r.Last; o++ {
			typ := r.Types[0]
			if len(r.Types) > 1 {
				typ = r.Types[o-r.First]
			}
			if typ == Accept || typ == Reject || typ == Gap {
				w.final[o] = true
			}
		}
	}
}

// moveLogStart drops the log's first batches, as retention drops
// segments, or compacts one batch away from the middle.
func (w *world) moveLogStart() {
	if w.rng.IntN(2) == 0 && len(w.log) > 2 {
		i := 1 + w.rng.IntN(len(w.log)-1)
		w.log = slices.Delete(w.log, i, i+1)
	}
	w.log = w.log[min(w.rng.IntN(3), len(w.log)):]
	w.logStart = w.logEnd
	if len(w.log) > 0 {
		w.logStart = w.log[0].First
	}
	w.p.MoveLogStart(w.now, w.logStart)
	w.m.moveLogStart(w.now, w.logStart)
}

// reset moves SPSO anywhere near the in-flight offsets; both refuse while
// anything is acquired. Moving back reopens what it moves over.
func (w *world) reset() {
	w.p.Tick(w.now)
	w.m.advance(w.now)
	to := max(0, w.p.start-10+w.rng.Int64N(w.p.end-w.p.start+20))
	back := to < w.p.start
	err := w.p.ResetStartOffset(w.now, to)
	if werr := w.m.reset(w.now, to); (err != nil) != (werr != nil) {
		w.t.Fatalf("reset to %d: %v, the model %v", to, err, werr)
	}
	if err != nil {
		return
	}
	if back {
		for o := range w.final {
			if o >= to {
				delete(w.final, o)
			}
		}
		for _, s := range w.requests {
			s.stale = true
		}
	}
	w.p.MoveLogStart(w.now, w.logStart)
	w.m.moveLogStart(w.now, w.logStart)
	w.lastStart = w.p.start
}
