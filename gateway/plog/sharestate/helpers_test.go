package sharestate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// t0 is the injected clock's start; tests move time by passing later ones.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus sec seconds.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// testConfig is Kafka's defaults with the smallest in-flight cap, so tests
// reach it quickly: delivery limit 5, lock 30 s, max lock 60 s.
func testConfig() Config { return Config{MaxInFlight: 100} }

// newPartition starts a partition at start whose first snapshot is
// persisted, so answers are released as soon as their record is.
func newPartition(t *testing.T, cfg Config, start int64) *Partition {
	t.Helper()
	p, err := New(cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	flush(p)
	return p
}

// flush writes every record Ready asks for at once, as a driver whose
// writes always succeed, and returns the answers released.
func flush(p *Partition) []Answer {
	var out []Answer
	for {
		rd := p.Ready()
		out = append(out, rd.Answers...)
		if rd.Record == nil {
			return out
		}
		p.Persisted(rd.Record.Seq)
	}
}

// r is the batch or range [first, last].
func r(first, last int64) Range { return Range{first, last} }

// acquire runs an Acquire of member reading from from and returns what it
// got as "first-last#count" runs.
func acquire(t *testing.T, p *Partition, sec int, member string, maxRecords int, from int64, batches ...Range) string {
	t.Helper()
	got, err := p.Acquire(at(sec), AcquireRequest{Member: member, From: from, Batches: batches, MaxRecords: maxRecords})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	checkStructure(t, p)
	return fmtAcquired(got)
}

func fmtAcquired(got []AcquiredRecords) string {
	var parts []string
	for _, a := range got {
		parts = append(parts, fmt.Sprintf("%d-%d#%d", a.First, a.Last, a.DeliveryCount))
	}
	return strings.Join(parts, " ")
}

// ack runs member's acknowledgement of ranges, persists it, and returns
// the codes of its answer.
func ack(t *testing.T, p *Partition, sec int, member string, ranges ...AckRange) []int16 {
	t.Helper()
	p.Acknowledge(at(sec), AckRequest{ID: 7, Member: member, Ranges: ranges})
	checkStructure(t, p)
	answers := flush(p)
	if len(answers) != 1 || answers[0].ID != 7 {
		t.Fatalf("acknowledge answered %+v", answers)
	}
	return answers[0].Codes
}

// ar is an acknowledgement range with one type, or one per offset.
func ar(first, last int64, types ...AckType) AckRange {
	return AckRange{First: first, Last: last, Types: types}
}

// dump shows the state as "SPSO-SPEO: first-last state ...", the state
// as the member's name and delivery count when acquired, av<count>,
// ok, ar<count>, or gap.
func dump(p *Partition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d-%d:", p.start, p.end)
	for _, e := range p.entries {
		fmt.Fprintf(&b, " %d-%d ", e.first, e.last)
		switch {
		case e.state == Available:
			fmt.Fprintf(&b, "av%d", e.count)
		case e.state == Acquired:
			fmt.Fprintf(&b, "%s%d", e.member, e.count)
		case e.state == Acknowledged:
			b.WriteString("ok")
		case e.gap():
			b.WriteString("gap")
		default:
			fmt.Fprintf(&b, "ar%d", e.count)
		}
	}
	return b.String()
}

// checkStructure checks what every call leaves true: entries cover
// [SPSO, SPEO) in order without holes, no two neighbours the same, the
// first not done, an acquired run has a member and a lock and nothing else
// has, no available record at the delivery count limit, the in-flight cap
// held, and the dirty set inside [SPSO, SPEO).
func checkStructure(t *testing.T, p *Partition) {
	t.Helper()
	next := p.start
	for i, e := range p.entries {
		if e.first != next || e.last < e.first {
			t.Fatalf("entry %d [%d, %d] does not continue at %d: %s", i, e.first, e.last, next, dump(p))
		}
		if i > 0 && p.entries[i-1].same(e) {
			t.Fatalf("entries %d and %d could be one: %s", i-1, i, dump(p))
		}
		if (e.state == Acquired) != (e.member != "" && e.deadline != 0) {
			t.Fatalf("entry %d [%d, %d] state %d member %q deadline %d", i, e.first, e.last, e.state, e.member, e.deadline)
		}
		if e.state == Available && int(e.count) >= p.cfg.DeliveryCountLimit {
			t.Fatalf("entry %d [%d, %d] available at delivery count %d: %s", i, e.first, e.last, e.count, dump(p))
		}
		if e.state == Available && e.first < p.logStart {
			t.Fatalf("entry %d [%d, %d] available below the log start %d", i, e.first, e.last, p.logStart)
		}
		next = e.last + 1
	}
	if next != p.end {
		t.Fatalf("entries end at %d, SPEO %d: %s", next, p.end, dump(p))
	}
	if len(p.entries) > 0 && p.entries[0].done() {
		t.Fatalf("SPSO %d is done: %s", p.start, dump(p))
	}
	if n := p.inFlight(); n > int64(p.cfg.MaxInFlight) {
		t.Fatalf("%d records in flight, cap %d", n, p.cfg.MaxInFlight)
	}
	for _, d := range p.dirty {
		if d.First < p.start || d.Last >= p.end {
			t.Fatalf("dirty [%d, %d] outside [%d, %d)", d.First, d.Last, p.start, p.end)
		}
	}
}
