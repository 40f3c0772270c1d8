package sharestate

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's codes as the tests expect them.
var (
	badRequest = kerr.InvalidRequest.Code
	badState   = kerr.InvalidRecordState.Code
)

// TestAcknowledge: each acknowledgement type and each error, on a
// partition where member a holds 0-9 (delivered once), b holds 10-14, and
// 15-19 are available after one delivery.
func TestAcknowledge(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ranges    []AckRange
		want      []int16
		wantState string
	}{
		{
			name:   "accept the whole batch: SPSO passes it",
			ranges: []AckRange{ar(0, 9, Accept)},
			want:   []int16{0}, wantState: "10-20: 10-14 b1 15-19 av1",
		},
		{
			name:   "accept part of a batch splits it",
			ranges: []AckRange{ar(3, 5, Accept)},
			want:   []int16{0}, wantState: "0-20: 0-2 a1 3-5 ok 6-9 a1 10-14 b1 15-19 av1",
		},
		{
			name:   "reject archives",
			ranges: []AckRange{ar(0, 1, Reject), ar(5, 5, Reject)},
			want:   []int16{0, 0}, wantState: "2-20: 2-4 a1 5-5 ar1 6-9 a1 10-14 b1 15-19 av1",
		},
		{
			name:   "release makes available again, with its count",
			ranges: []AckRange{ar(8, 9, Release)},
			want:   []int16{0}, wantState: "0-20: 0-7 a1 8-9 av1 10-14 b1 15-19 av1",
		},
		{
			name:   "gap archives",
			ranges: []AckRange{ar(9, 9, Gap)},
			want:   []int16{0}, wantState: "0-20: 0-8 a1 9-9 ar1 10-14 b1 15-19 av1",
		},
		{
			name:   "one type per offset",
			ranges: []AckRange{ar(0, 4, Accept, Accept, Release, Reject, Accept)},
			want:   []int16{0}, wantState: "2-20: 2-2 av1 3-3 ar1 4-4 ok 5-9 a1 10-14 b1 15-19 av1",
		},
		{
			name:   "renew changes nothing but the lock",
			ranges: []AckRange{ar(0, 9, Renew)},
			want:   []int16{0}, wantState: "0-20: 0-9 a1 10-14 b1 15-19 av1",
		},
		{
			name:   "another member's records are INVALID_RECORD_STATE, and the range changes nothing",
			ranges: []AckRange{ar(8, 11, Accept)},
			want:   []int16{badState}, wantState: "0-20: 0-9 a1 10-14 b1 15-19 av1",
		},
		{
			name:   "available records are INVALID_RECORD_STATE",
			ranges: []AckRange{ar(15, 15, Accept)},
			want:   []int16{badState}, wantState: "0-20: 0-9 a1 10-14 b1 15-19 av1",
		},
		{
			name:   "a good range still applies beside a bad one",
			ranges: []AckRange{ar(15, 15, Release), ar(0, 9, Accept)},
			want:   []int16{badState, 0}, wantState: "10-20: 10-14 b1 15-19 av1",
		},
		{
			name:   "acknowledging twice in one request: the second is INVALID_RECORD_STATE",
			ranges: []AckRange{ar(2, 2, Accept), ar(2, 2, Reject)},
			want:   []int16{0, badState}, wantState: "0-20: 0-1 a1 2-2 ok 3-9 a1 10-14 b1 15-19 av1",
		},
		{
			name:   "reaching SPEO is INVALID_REQUEST",
			ranges: []AckRange{ar(5, 20, Accept)},
			want:   []int16{badRequest}, wantState: "0-20: 0-9 a1 10-14 b1 15-19 av1",
		},
		{
			name: "malformed ranges are INVALID_REQUEST",
			ranges: []AckRange{
				ar(5, 4, Accept), ar(-1, 2, Accept), ar(0, 1), ar(0, 2, Accept, Accept),
				ar(0, 0, AckType(5)), ar(0, 0, AckType(-1)),
			},
			want:      []int16{badRequest, badRequest, badRequest, badRequest, badRequest, badRequest},
			wantState: "0-20: 0-9 a1 10-14 b1 15-19 av1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ackFixture(t)
			if got := ack(t, p, 1, "a", tc.ranges...); !slices.Equal(got, tc.want) {
				t.Errorf("codes %v, want %v", got, tc.want)
			}
			if got := dump(p); got != tc.wantState {
				t.Errorf("state %q, want %q", got, tc.wantState)
			}
		})
	}
}

// ackFixture is TestAcknowledge's partition.
func ackFixture(t *testing.T) *Partition {
	t.Helper()
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 9))
	mustAcquire(t, p, 0, "b", 0, 10, r(10, 14), r(15, 19))
	ack(t, p, 0, "b", ar(15, 19, Release))
	if got, want := dump(p), "0-20: 0-9 a1 10-14 b1 15-19 av1"; got != want {
		t.Fatalf("fixture %q, want %q", got, want)
	}
	return p
}

// TestAcknowledgeBelowStart: offsets below SPSO are done already and
// answered 0, as Kafka answers them; a range straddling SPSO is judged on
// the part above.
func TestAcknowledgeBelowStart(t *testing.T) {
	p := ackFixture(t)
	ack(t, p, 1, "a", ar(0, 9, Accept))
	if got := ack(t, p, 1, "a", ar(0, 9, Reject), ar(5, 12, Accept)); !slices.Equal(got, []int16{0, badState}) {
		t.Fatalf("codes %v", got)
	}
	if got := ack(t, p, 1, "b", ar(5, 12, Accept, Accept, Accept, Accept, Accept, Reject, Reject, Accept)); !slices.Equal(got, []int16{0}) {
		t.Fatalf("codes %v", got)
	}
	if got, want := dump(p), "13-20: 13-14 b1 15-19 av1"; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
}

// TestAcknowledgeGapOfArchived: a Gap of an offset archived already (a
// gap of the log, or one rejected) is the no-op it claims to be, also
// beside acquired offsets.
func TestAcknowledgeGapOfArchived(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 2), r(6, 8))
	if got := ack(t, p, 1, "a", ar(1, 7, Gap)); !slices.Equal(got, []int16{0}) {
		t.Fatalf("codes %v", got)
	}
	if got, want := dump(p), "0-9: 0-0 a1 1-2 ar1 3-5 gap 6-7 ar1 8-8 a1"; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
	if got := ack(t, p, 1, "a", ar(1, 2, Accept)); !slices.Equal(got, []int16{badState}) {
		t.Fatalf("accepting archived records: codes %v", got)
	}
}

// TestDeliveryLimit: a record released or expiring at its fifth delivery
// is archived, not made available.
func TestDeliveryLimit(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	for i := 1; i <= 4; i++ {
		if got := acquire(t, p, 0, "a", 0, 0, r(0, 1)); got != "0-1#"+string(rune('0'+i)) {
			t.Fatalf("delivery %d: %q", i, got)
		}
		ack(t, p, 0, "a", ar(0, 1, Release))
	}
	if got := acquire(t, p, 0, "a", 0, 0, r(0, 1)); got != "0-1#5" {
		t.Fatalf("delivery 5: %q", got)
	}
	ack(t, p, 0, "a", ar(0, 0, Release))
	p.Tick(at(30))
	if got := dump(p); got != "2-2:" {
		t.Fatalf("state %q, want everything archived and passed", got)
	}
}

// TestRenew: RENEW restarts the lock from the acknowledgement's time, so
// the record outlives its first deadline; an expired lock cannot be
// renewed.
func TestRenew(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 4))
	if got := ack(t, p, 20, "a", ar(0, 1, Renew)); !slices.Equal(got, []int16{0}) {
		t.Fatalf("codes %v", got)
	}
	if got := p.NextDeadline(); !got.Equal(at(30)) {
		t.Fatalf("deadline %v, want the unrenewed one first", got)
	}
	p.Tick(at(30))
	if got, want := dump(p), "0-5: 0-1 a1 2-4 av1"; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
	if got := p.NextDeadline(); !got.Equal(at(50)) {
		t.Fatalf("deadline %v, want %v", got, at(50))
	}
	if got := ack(t, p, 50, "a", ar(0, 0, Renew)); !slices.Equal(got, []int16{badState}) {
		t.Fatalf("renewing at the deadline: codes %v", got)
	}
}
