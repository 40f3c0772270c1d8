package sharestate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// recordVersion is the encoding's version; Decode refuses any other, so a
// gateway never misreads a record written by a newer one.
const recordVersion = 1

// The kinds of record, the encoding's second byte.
const (
	kindSnapshot = 1
	kindUpdate   = 2
)

// minStateBytes is the least an encoded StateRange takes (four one-byte
// fields): Decode bounds the count it allocates for by it.
const minStateBytes = 4

// snapshot is the whole state as the record numbered lastSeq.
func (p *Partition) snapshot() Record {
	r := Record{Seq: p.lastSeq, Snapshot: true, Start: p.start, End: p.end}
	for _, e := range p.entries {
		r.States = appendDurable(r.States, e, e.first, e.last)
	}
	return r
}

// update is the change since the last record as the record numbered
// lastSeq: SPSO, SPEO and what is persisted of the offsets touched since.
func (p *Partition) update() Record {
	r := Record{Seq: p.lastSeq, Start: p.start, End: p.end}
	for _, d := range p.dirty {
		for pos := d.First; pos <= d.Last; {
			e := p.entries[p.find(pos)]
			last := min(d.Last, e.last)
			r.States = appendDurable(r.States, e, pos, last)
			pos = last + 1
		}
	}
	return r
}

// appendDurable appends what is persisted of e's offsets first to last,
// joined to the run before when they continue it in the same state.
func appendDurable(out []StateRange, e entry, first, last int64) []StateRange {
	st, c := e.durable()
	if n := len(out); n > 0 && out[n-1].Last+1 == first && out[n-1].State == st && out[n-1].DeliveryCount == c {
		out[n-1].Last = last
		return out
	}
	return append(out, StateRange{First: first, Last: last, State: st, DeliveryCount: c})
}

// Encode is the record as stored: a version byte, a kind byte, then
// varints (seq, SPSO, SPEO-SPSO, the count of states, and per state the
// distance from the end of the one before, its length less one, its state
// byte and delivery count). A run of any length costs a few bytes, so a
// snapshot of the largest in-flight state stays in the tens of kilobytes.
// It expects a record that Ready made or Decode read.
func (r Record) Encode() []byte {
	kind := byte(kindUpdate)
	if r.Snapshot {
		kind = kindSnapshot
	}
	b := make([]byte, 0, 16+6*len(r.States))
	b = append(b, recordVersion, kind)
	b = binary.AppendUvarint(b, r.Seq)
	b = binary.AppendUvarint(b, uint64(r.Start))
	b = binary.AppendUvarint(b, uint64(r.End-r.Start))
	b = binary.AppendUvarint(b, uint64(len(r.States)))
	prev := r.Start
	for _, s := range r.States {
		b = binary.AppendUvarint(b, uint64(s.First-prev))
		b = binary.AppendUvarint(b, uint64(s.Last-s.First))
		b = append(b, byte(s.State))
		b = binary.AppendUvarint(b, uint64(s.DeliveryCount))
		prev = s.Last + 1
	}
	return b
}

// Decode reads a record Encode wrote, refusing anything else with an
// error (another version, a truncated or overlong input, states out of
// order or outside SPSO and SPEO); it never panics, whatever the input.
func Decode(b []byte) (Record, error) {
	if len(b) < 2 {
		return Record{}, errors.New("sharestate: record too short")
	}
	if b[0] != recordVersion {
		return Record{}, fmt.Errorf("sharestate: record version %d, want %d", b[0], recordVersion)
	}
	if b[1] != kindSnapshot && b[1] != kindUpdate {
		return Record{}, fmt.Errorf("sharestate: record of unknown kind %d", b[1])
	}
	d := decoder{b: b[2:]}
	r := Record{Snapshot: b[1] == kindSnapshot, Seq: d.uvarint()}
	r.Start = d.offset()
	r.End = d.sum(r.Start, d.offset())
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/minStateBytes) {
		d.err = errors.New("more states than bytes")
	}
	prev := r.Start
	for i := uint64(0); i < n && d.err == nil; i++ {
		var s StateRange
		s.First = d.sum(prev, d.offset())
		s.Last = d.sum(s.First, d.offset())
		s.State = State(d.readByte())
		count := d.uvarint()
		if count > math.MaxInt16 {
			d.fail("delivery count %d too large", count)
		}
		s.DeliveryCount = int16(count)
		// Checked here too, not only by validate, so prev cannot overflow.
		if d.err == nil && s.Last >= r.End {
			d.fail("state [%d, %d] past SPEO %d", s.First, s.Last, r.End)
		}
		r.States = append(r.States, s)
		prev = s.Last + 1
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the record", len(d.b))
	}
	if d.err != nil {
		return Record{}, fmt.Errorf("sharestate: decoding a record: %w", d.err)
	}
	return r, r.validate()
}

// decoder reads varints, keeping the first error so a caller checks once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// offset reads a non-negative int64.
func (d *decoder) offset() int64 {
	v := d.uvarint()
	if v > math.MaxInt64 {
		d.fail("offset %d too large", v)
		return 0
	}
	return int64(v)
}

// sum adds two non-negative offsets, failing rather than overflowing.
func (d *decoder) sum(a, b int64) int64 {
	if b > math.MaxInt64-a {
		d.fail("offset overflow")
		return 0
	}
	return a + b
}

func (d *decoder) readByte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// validate checks what Load relies on: SPSO not past SPEO, states in
// order, inside [Start, End), persisted ones only, and a snapshot's
// covering [Start, End) with no hole.
func (r Record) validate() error {
	if r.Start < 0 || r.Start > r.End {
		return fmt.Errorf("sharestate: record %d: SPSO %d, SPEO %d", r.Seq, r.Start, r.End)
	}
	next := r.Start // the lowest offset the next state may begin at
	for _, s := range r.States {
		switch {
		case s.First < next || s.First > s.Last || s.Last >= r.End:
			return fmt.Errorf("sharestate: record %d: state [%d, %d] out of order or outside [%d, %d)", r.Seq, s.First, s.Last, r.Start, r.End)
		case r.Snapshot && s.First != next:
			return fmt.Errorf("sharestate: snapshot %d: no state for offsets %d to %d", r.Seq, next, s.First-1)
		case s.State != Available && s.State != Acknowledged && s.State != Archived:
			return fmt.Errorf("sharestate: record %d: state %d is not persisted", r.Seq, s.State)
		case s.DeliveryCount < 0:
			return fmt.Errorf("sharestate: record %d: delivery count %d", r.Seq, s.DeliveryCount)
		}
		next = s.Last + 1
	}
	if r.Snapshot && next != r.End {
		return fmt.Errorf("sharestate: snapshot %d: no state for offsets %d to %d", r.Seq, next, r.End-1)
	}
	return nil
}
