package sharestate

import (
	"testing"
	"time"
)

// TestAcquire: each way a read becomes acquired records, gaps and
// archives, and what it leaves in the state.
func TestAcquire(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup runs before the acquire under test, at time 0.
		setup     func(t *testing.T, p *Partition)
		member    string
		max       int
		from      int64
		batches   []Range
		want      string // what the acquire got
		wantState string // dump after
	}{
		{
			name: "new batches are taken whole, as one run", member: "a",
			from: 0, batches: []Range{r(0, 4), r(5, 9)},
			want: "0-9#1", wantState: "0-10: 0-9 a1",
		},
		{
			name: "nothing read, nothing taken", member: "a", from: 0,
			want: "", wantState: "0-0:",
		},
		{
			name: "a partition starting later takes nothing below SPSO", member: "a",
			setup: func(t *testing.T, p *Partition) {
				if err := p.ResetStartOffset(at(0), 3); err != nil {
					t.Fatal(err)
				}
			},
			from: 3, batches: []Range{r(0, 4), r(5, 6)},
			want: "3-6#1", wantState: "3-7: 3-6 a1",
		},
		{
			name: "offsets between batches and before the first are gaps, never delivered", member: "a",
			from: 0, batches: []Range{r(2, 3), r(7, 8)},
			want: "2-3#1 7-8#1", wantState: "2-9: 2-3 a1 4-6 gap 7-8 a1",
		},
		{
			name: "a gap at SPSO is passed over at once", member: "a",
			setup: func(t *testing.T, p *Partition) {
				mustAcquire(t, p, 0, "b", 0, 0, r(0, 1))
				ack(t, p, 0, "b", ar(0, 1, Accept))
			},
			from: 2, batches: []Range{r(5, 6)},
			want: "5-6#1", wantState: "5-7: 5-6 a1",
		},
		{
			name: "max records splits a batch", member: "a", max: 3,
			from: 0, batches: []Range{r(0, 4), r(5, 9)},
			want: "0-2#1", wantState: "0-3: 0-2 a1",
		},
		{
			name: "the in-flight cap splits a batch and stops the read", member: "a",
			setup: func(t *testing.T, p *Partition) {
				mustAcquire(t, p, 0, "b", 0, 0, r(0, 97))
			},
			from: 98, batches: []Range{r(98, 103), r(104, 110)},
			want: "98-99#1", wantState: "0-100: 0-97 b1 98-99 a1",
		},
		{
			name: "gaps do not count against the cap, and one known is kept when the cap stops the read", member: "a",
			setup: func(t *testing.T, p *Partition) {
				mustAcquire(t, p, 0, "b", 0, 0, r(0, 0), r(500, 597))
			},
			from: 598, batches: []Range{r(598, 598), r(900, 905)},
			want: "598-598#1", wantState: "0-900: 0-0 b1 1-499 gap 500-597 b1 598-598 a1 599-899 gap",
		},
		{
			name: "available records are redelivered first, lowest first, then new ones", member: "a",
			setup: func(t *testing.T, p *Partition) {
				mustAcquire(t, p, 0, "b", 0, 0, r(0, 9))
				ack(t, p, 0, "b", ar(2, 3, Release), ar(6, 7, Release))
			},
			max: 5, from: 2, batches: []Range{r(0, 9), r(10, 14)},
			want: "2-3#2 6-7#2 10-10#1", wantState: "0-11: 0-1 b1 2-3 a2 4-5 b1 6-7 a2 8-9 b1 10-10 a1",
		},
		{
			name: "an available record the read no longer finds is archived", member: "a",
			setup: func(t *testing.T, p *Partition) {
				mustAcquire(t, p, 0, "b", 0, 0, r(0, 9))
				ack(t, p, 0, "b", ar(0, 9, Release))
			},
			from: 0, batches: []Range{r(4, 9)},
			want: "4-9#2", wantState: "4-10: 4-9 a2",
		},
		{
			name: "a record held by another member is skipped", member: "a",
			setup: func(t *testing.T, p *Partition) {
				mustAcquire(t, p, 0, "b", 0, 0, r(0, 9))
				ack(t, p, 0, "b", ar(0, 0, Release))
			},
			from: 0, batches: []Range{r(0, 9), r(10, 11)},
			want: "0-0#2 10-11#1", wantState: "0-12: 0-0 a2 1-9 b1 10-11 a1",
		},
		{
			name: "an expired lock is taken over at the same call", member: "a",
			setup: func(t *testing.T, p *Partition) {
				mustAcquire(t, p, -30, "b", 0, 0, r(0, 4))
			},
			from: 0, batches: []Range{r(0, 4)},
			want: "0-4#2", wantState: "0-5: 0-4 a2",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition(t, testConfig(), 0)
			if tc.setup != nil {
				tc.setup(t, p)
			}
			if got := acquire(t, p, 0, tc.member, tc.max, tc.from, tc.batches...); got != tc.want {
				t.Errorf("acquired %q, want %q", got, tc.want)
			}
			if got := dump(p); got != tc.wantState {
				t.Errorf("state %q, want %q", got, tc.wantState)
			}
		})
	}
}

// mustAcquire is acquire for setups, which do not check what they got.
func mustAcquire(t *testing.T, p *Partition, sec int, member string, maxRecords int, from int64, batches ...Range) {
	t.Helper()
	acquire(t, p, sec, member, maxRecords, from, batches...)
}

// TestAcquireErrors: a malformed read is refused and changes nothing.
func TestAcquireErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  AcquireRequest
	}{
		{"no member", AcquireRequest{From: 0, Batches: []Range{r(0, 1)}}},
		{"negative from", AcquireRequest{Member: "a", From: -1}},
		{"read past SPEO", AcquireRequest{Member: "a", From: 11, Batches: []Range{r(11, 12)}}},
		{"empty batch", AcquireRequest{Member: "a", From: 10, Batches: []Range{r(12, 11)}}},
		{"negative batch", AcquireRequest{Member: "a", From: 10, Batches: []Range{r(-2, 11)}}},
		{"batches out of order", AcquireRequest{Member: "a", From: 10, Batches: []Range{r(12, 13), r(10, 11)}}},
		{"batches overlapping", AcquireRequest{Member: "a", From: 10, Batches: []Range{r(10, 12), r(12, 13)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition(t, testConfig(), 0)
			mustAcquire(t, p, 0, "b", 0, 0, r(0, 9))
			before := dump(p)
			if got, err := p.Acquire(at(1), tc.req); err == nil {
				t.Fatalf("acquired %v, want an error", got)
			}
			if dump(p) != before {
				t.Fatalf("state %q, was %q", dump(p), before)
			}
		})
	}
}

// TestAcquireLock: the lock is the default, what the request asks for, or
// at most the maximum; NextDeadline is the earliest.
func TestAcquireLock(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	if !p.NextDeadline().IsZero() {
		t.Fatalf("deadline %v with nothing acquired", p.NextDeadline())
	}
	for _, tc := range []struct {
		lock time.Duration
		want time.Duration
	}{{0, 30 * time.Second}, {10 * time.Second, 10 * time.Second}, {time.Hour, 60 * time.Second}} {
		p, _ := New(testConfig(), 0)
		if _, err := p.Acquire(t0, AcquireRequest{Member: "a", Batches: []Range{r(0, 0)}, Lock: tc.lock}); err != nil {
			t.Fatal(err)
		}
		if got := p.NextDeadline(); !got.Equal(t0.Add(tc.want)) {
			t.Errorf("lock %v: deadline %v, want %v", tc.lock, got.Sub(t0), tc.want)
		}
	}
	mustAcquire(t, p, 5, "a", 0, 0, r(0, 0))
	mustAcquire(t, p, 0, "b", 0, 1, r(1, 1))
	if got := p.NextDeadline(); !got.Equal(at(30)) {
		t.Errorf("deadline %v, want the earliest, %v", got, at(30))
	}
}

// TestFetchOffset: where to read from, and whether reading is of use.
func TestFetchOffset(t *testing.T) {
	p := newPartition(t, testConfig(), 4)
	check := func(want int64, wantOK bool) {
		t.Helper()
		if got, ok := p.FetchOffset(); got != want || ok != wantOK {
			t.Fatalf("FetchOffset %d, %v; want %d, %v (%s)", got, ok, want, wantOK, dump(p))
		}
	}
	check(4, true)
	mustAcquire(t, p, 0, "a", 0, 4, r(4, 103))
	check(104, false)
	ack(t, p, 0, "a", ar(50, 50, Release))
	check(50, true)
	if p.InFlight() != 100 || p.StartOffset() != 4 || p.EndOffset() != 104 {
		t.Fatalf("in flight %d, SPSO %d, SPEO %d", p.InFlight(), p.StartOffset(), p.EndOffset())
	}
}
