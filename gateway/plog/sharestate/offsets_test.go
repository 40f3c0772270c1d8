package sharestate

import (
	"testing"
)

// TestReleaseMember: a departing member's records come back, available or
// archived at the limit; the other members keep theirs.
func TestReleaseMember(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 4))
	mustAcquire(t, p, 0, "b", 0, 5, r(5, 9))
	for range 3 {
		ack(t, p, 0, "a", ar(0, 1, Release))
		mustAcquire(t, p, 0, "a", 2, 0, r(0, 4))
	}
	ack(t, p, 0, "a", ar(0, 1, Release))
	mustAcquire(t, p, 0, "a", 1, 0, r(0, 4))
	if got, want := dump(p), "0-10: 0-0 a5 1-1 av4 2-4 a1 5-9 b1"; got != want {
		t.Fatalf("setup %q, want %q", got, want)
	}
	p.ReleaseMember(at(1), "a")
	checkStructure(t, p)
	if got, want := dump(p), "1-10: 1-1 av4 2-4 av1 5-9 b1"; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
	p.ReleaseMember(at(1), "nobody")
	if got, want := dump(p), "1-10: 1-1 av4 2-4 av1 5-9 b1"; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
}

// TestTick: locks expire at their deadline, not before, each run on its
// own; a late Tick ends where punctual ones would.
func TestTick(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 4))
	mustAcquire(t, p, 10, "b", 0, 5, r(5, 9))
	p.Tick(at(29))
	if got, want := dump(p), "0-10: 0-4 a1 5-9 b1"; got != want {
		t.Fatalf("before the deadline: %q, want %q", got, want)
	}
	p.Tick(at(30))
	checkStructure(t, p)
	if got, want := dump(p), "0-10: 0-4 av1 5-9 b1"; got != want {
		t.Fatalf("at a's deadline: %q, want %q", got, want)
	}
	late := newPartition(t, testConfig(), 0)
	mustAcquire(t, late, 0, "a", 0, 0, r(0, 4))
	mustAcquire(t, late, 10, "b", 0, 5, r(5, 9))
	late.Tick(at(100))
	p.Tick(at(40))
	if dump(late) != dump(p) || dump(p) != "0-10: 0-9 av1" {
		t.Fatalf("late tick %q, punctual %q", dump(late), dump(p))
	}
}

// TestMoveLogStart: available records below the log start are archived,
// acquired ones stay with their member and are archived when they come
// back; SPSO follows; a log start past SPEO is a gap.
func TestMoveLogStart(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 9))
	ack(t, p, 0, "a", ar(0, 1, Release), ar(4, 6, Release))
	p.MoveLogStart(at(0), 5)
	checkStructure(t, p)
	if got, want := dump(p), "2-10: 2-3 a1 4-4 ar1 5-6 av1 7-9 a1"; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
	ack(t, p, 0, "a", ar(2, 3, Release))
	if got, want := dump(p), "5-10: 5-6 av1 7-9 a1"; got != want {
		t.Fatalf("released below the log start: %q, want %q", got, want)
	}
	p.MoveLogStart(at(0), 3) // back: ignored
	p.MoveLogStart(at(0), 20)
	checkStructure(t, p)
	if got, want := dump(p), "7-20: 7-9 a1 10-19 gap"; got != want {
		t.Fatalf("log start past SPEO: %q, want %q", got, want)
	}
	p.Tick(at(30))
	if got, want := dump(p), "20-20:"; got != want {
		t.Fatalf("expired below the log start: %q, want %q", got, want)
	}
	if got := acquire(t, p, 30, "b", 0, 20, r(20, 21)); got != "20-21#1" {
		t.Fatalf("acquired %q after the move", got)
	}
}

// TestResetStartOffset: refused while anything is acquired; forward keeps
// what is known above; back or past SPEO starts over; the next record is
// a snapshot.
func TestResetStartOffset(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 9))
	if err := p.ResetStartOffset(at(1), 5); err == nil {
		t.Fatal("reset while a holds records")
	}
	if err := p.ResetStartOffset(at(1), -1); err == nil {
		t.Fatal("reset to a negative offset")
	}
	ack(t, p, 1, "a", ar(0, 3, Release), ar(4, 4, Release), ar(5, 6, Accept), ar(7, 9, Release))
	for _, tc := range []struct {
		to   int64
		want string
	}{
		{4, "4-10: 4-4 av1 5-6 ok 7-9 av1"},
		{5, "7-10: 7-9 av1"},
		{2, "2-2:"},
		{12, "12-12:"},
	} {
		if err := p.ResetStartOffset(at(1), tc.to); err != nil {
			t.Fatalf("reset to %d: %v", tc.to, err)
		}
		checkStructure(t, p)
		if got := dump(p); got != tc.want {
			t.Fatalf("reset to %d: %q, want %q", tc.to, got, tc.want)
		}
		rd := p.Ready()
		if rd.Record == nil || !rd.Record.Snapshot || rd.Record.Start != p.start {
			t.Fatalf("reset to %d: record %+v, want a snapshot", tc.to, rd.Record)
		}
		p.Persisted(rd.Record.Seq)
	}
}
