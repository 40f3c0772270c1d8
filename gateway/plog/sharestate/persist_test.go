package sharestate

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestNewSnapshot: a new partition's first record is its snapshot, and a
// bad start or config is refused.
func TestNewSnapshot(t *testing.T) {
	p, err := New(testConfig(), 42)
	if err != nil {
		t.Fatal(err)
	}
	rd := p.Ready()
	want := Record{Seq: 1, Snapshot: true, Start: 42, End: 42}
	if rd.Record == nil || !reflect.DeepEqual(*rd.Record, want) {
		t.Fatalf("first record %+v, want %+v", rd.Record, want)
	}
	if _, err := New(testConfig(), -1); err == nil {
		t.Fatal("New at -1")
	}
	if _, err := New(Config{DeliveryCountLimit: 1}, 0); err == nil {
		t.Fatal("New with a bad config")
	}
}

// TestAnswerWaitsForRecord: an acknowledgement is answered only once the
// record holding it is persisted; while one record is being written no
// other is asked for, and what changed meanwhile goes into the next.
func TestAnswerWaitsForRecord(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 9))
	rd := p.Ready()
	acqRec := rd.Record
	if acqRec == nil || acqRec.Snapshot || !reflect.DeepEqual(acqRec.States, []StateRange{{0, 9, Available, 1}}) {
		t.Fatalf("acquisition record %+v", acqRec)
	}
	p.Acknowledge(at(1), AckRequest{ID: 1, Member: "a", Ranges: []AckRange{ar(0, 3, Accept)}})
	p.Acknowledge(at(1), AckRequest{ID: 2, Member: "a", Ranges: []AckRange{ar(4, 4, Reject)}})
	if rd := p.Ready(); rd.Record != nil || len(rd.Answers) != 0 {
		t.Fatalf("with record %d unwritten: %+v", acqRec.Seq, rd)
	}
	p.Persisted(acqRec.Seq + 1) // not the one being written: ignored
	p.Persisted(acqRec.Seq)
	rd = p.Ready()
	if len(rd.Answers) != 0 {
		t.Fatalf("answered %+v before the record holding it", rd.Answers)
	}
	want := Record{Seq: acqRec.Seq + 1, Start: 5, End: 10}
	if rd.Record == nil || !reflect.DeepEqual(*rd.Record, want) {
		t.Fatalf("record %+v, want %+v", rd.Record, want)
	}
	// An acknowledgement that changes nothing durable still waits for
	// what was decided before it.
	p.Acknowledge(at(1), AckRequest{ID: 3, Member: "b", Ranges: []AckRange{ar(5, 5, Accept)}})
	p.Persisted(rd.Record.Seq)
	rd = p.Ready()
	if rd.Record != nil || len(rd.Answers) != 3 || rd.Answers[0].ID != 1 || rd.Answers[1].ID != 2 || rd.Answers[2].ID != 3 {
		t.Fatalf("after the write: %+v", rd)
	}
	// With everything durable, an answer needing no write comes at once.
	p.Acknowledge(at(1), AckRequest{ID: 4, Member: "a", Ranges: []AckRange{ar(5, 5, Renew)}})
	if rd := p.Ready(); rd.Record != nil || len(rd.Answers) != 1 || rd.Answers[0].ID != 4 {
		t.Fatalf("renew: %+v", rd)
	}
}

// TestUpdateCarriesChanges: an update holds SPSO, SPEO and the persisted
// state of what changed, acquisitions as available with their count;
// expiry and renewal change nothing persisted and write nothing.
func TestUpdateCarriesChanges(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 9), r(12, 15))
	ack(t, p, 0, "a", ar(2, 3, Accept), ar(5, 5, Reject))
	mustAcquire(t, p, 0, "b", 0, 16, r(16, 16))
	ack(t, p, 0, "a", ar(8, 9, Release))
	p.Tick(at(30))
	p.Acknowledge(at(30), AckRequest{ID: 9, Member: "b", Ranges: []AckRange{ar(16, 16, Renew)}})
	if rd := p.Ready(); rd.Record != nil {
		t.Fatalf("expiry and renew wrote %+v", rd.Record)
	}
	mustAcquire(t, p, 30, "c", 3, 0, r(0, 15))
	rd := p.Ready()
	want := []StateRange{{0, 1, Available, 2}, {4, 4, Available, 2}}
	if rd.Record == nil || rd.Record.Start != 0 || rd.Record.End != 17 || !reflect.DeepEqual(rd.Record.States, want) {
		t.Fatalf("record %+v, want states %+v", rd.Record, want)
	}
}

// TestSnapshotCadence: every UpdatesPerSnapshot-th record is a snapshot,
// and WantSnapshot asks for one even with nothing changed.
func TestSnapshotCadence(t *testing.T) {
	cfg := testConfig()
	cfg.UpdatesPerSnapshot = 3
	p := newPartition(t, cfg, 0)
	var kinds []bool
	for i := range int64(7) {
		mustAcquire(t, p, 0, "a", 0, i, r(i, i))
		rd := p.Ready()
		kinds = append(kinds, rd.Record.Snapshot)
		p.Persisted(rd.Record.Seq)
	}
	if want := []bool{false, false, true, false, false, true, false}; !slices.Equal(kinds, want) {
		t.Fatalf("snapshots %v, want %v", kinds, want)
	}
	p.WantSnapshot()
	if rd := p.Ready(); rd.Record == nil || !rd.Record.Snapshot || len(rd.Record.States) != 1 {
		t.Fatalf("wanted snapshot: %+v", rd.Record)
	}
}

// TestAbandon: answers not yet durable get the code given, the ranges
// that failed anyway keep theirs, and released answers are handed out as
// they were.
func TestAbandon(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 9))
	flush(p)
	p.Acknowledge(at(1), AckRequest{ID: 1, Member: "a", Ranges: []AckRange{ar(0, 0, Renew)}})
	p.Acknowledge(at(1), AckRequest{ID: 2, Member: "a", Ranges: []AckRange{ar(0, 0, Accept), ar(20, 20, Accept)}})
	got := p.Abandon(kerr.NotLeaderForPartition.Code)
	want := []Answer{{1, []int16{0}}, {2, []int16{kerr.NotLeaderForPartition.Code, badRequest}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("abandoned %+v, want %+v", got, want)
	}
}

// TestLoad: a partition rebuilt from its snapshot and updates equals the
// one that wrote them, acquired records come back available with their
// count, and the next record is a snapshot.
func TestLoad(t *testing.T) {
	p := newPartition(t, testConfig(), 0)
	var recs []Record
	write := func() {
		for {
			rd := p.Ready()
			if rd.Record == nil {
				return
			}
			recs = append(recs, *rd.Record)
			p.Persisted(rd.Record.Seq)
		}
	}
	mustAcquire(t, p, 0, "a", 0, 0, r(0, 9), r(20, 29))
	write()
	p.Acknowledge(at(0), AckRequest{Member: "a", Ranges: []AckRange{ar(0, 2, Accept), ar(5, 6, Release), ar(22, 22, Reject)}})
	write()
	mustAcquire(t, p, 0, "b", 0, 5, r(5, 9), r(20, 29), r(30, 31))
	write()
	q, err := Load(testConfig(), Record{Seq: 1, Snapshot: true}, recs...)
	if err != nil {
		t.Fatal(err)
	}
	checkStructure(t, q)
	if got, want := dump(q), "3-32: 3-4 av1 5-6 av2 7-9 av1 10-19 gap 20-21 av1 22-22 ar1 23-31 av1"; got != want {
		t.Fatalf("loaded %q, want %q", got, want)
	}
	if !reflect.DeepEqual(q.snapshot(), p.snapshot()) {
		t.Fatalf("loaded %+v, wrote %+v", q.snapshot(), p.snapshot())
	}
	rd := q.Ready()
	if rd.Record == nil || !rd.Record.Snapshot || rd.Record.Seq != recs[len(recs)-1].Seq+1 {
		t.Fatalf("first record after the load: %+v", rd.Record)
	}
}

// TestLoadErrors: records that cannot be the partition's history are
// refused, and old or repeated updates skipped.
func TestLoadErrors(t *testing.T) {
	snap := Record{Seq: 5, Snapshot: true, Start: 10, End: 14, States: []StateRange{{10, 13, Available, 1}}}
	up := func(seq uint64, start, end int64, states ...StateRange) Record {
		return Record{Seq: seq, Start: start, End: end, States: states}
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		snap    Record
		updates []Record
	}{
		{"bad config", Config{MaxInFlight: 1}, snap, nil},
		{"an update for a snapshot", testConfig(), up(5, 10, 14, StateRange{10, 13, Available, 1}), nil},
		{"a snapshot with a hole", testConfig(), Record{Seq: 5, Snapshot: true, Start: 10, End: 14, States: []StateRange{{10, 11, Available, 1}, {13, 13, Available, 1}}}, nil},
		{"a missing update", testConfig(), snap, []Record{up(7, 10, 14)}},
		{"a snapshot among updates", testConfig(), snap, []Record{snap, {Seq: 6, Snapshot: true, Start: 10, End: 10}}},
		{"SPSO going back", testConfig(), snap, []Record{up(6, 9, 14)}},
		{"SPEO going back", testConfig(), snap, []Record{up(6, 10, 13)}},
		{"new offsets without a state", testConfig(), snap, []Record{up(6, 10, 16, StateRange{15, 15, Available, 1})}},
		{"SPEO beyond the states", testConfig(), snap, []Record{up(6, 10, 16, StateRange{14, 14, Available, 1})}},
		{"an acquired state", testConfig(), snap, []Record{up(6, 10, 14, StateRange{11, 11, Acquired, 1})}},
		{"a state outside SPSO and SPEO", testConfig(), snap, []Record{up(6, 11, 14, StateRange{10, 10, Archived, 1})}},
		{"states out of order", testConfig(), snap, []Record{up(6, 10, 14, StateRange{12, 12, Archived, 1}, StateRange{11, 11, Archived, 1})}},
		{"a negative delivery count", testConfig(), snap, []Record{up(6, 10, 14, StateRange{11, 11, Archived, -1})}},
		{"SPSO past SPEO", testConfig(), snap, []Record{up(6, 15, 14)}},
		{"a snapshot short of SPEO", testConfig(), Record{Seq: 5, Snapshot: true, Start: 10, End: 14, States: []StateRange{{10, 12, Available, 1}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := Load(tc.cfg, tc.snap, tc.updates...); err == nil {
				t.Fatalf("loaded %s", dump(p))
			}
		})
	}
	p, err := Load(testConfig(), snap,
		up(4, 12, 14), // before the snapshot
		up(6, 11, 16, StateRange{12, 12, Acknowledged, 1}, StateRange{14, 15, Available, 1}),
		up(6, 13, 16), // written twice: the first counts
		up(7, 16, 16),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dump(p), "16-16:"; got != want || p.lastSeq != 7 {
		t.Fatalf("loaded %q at %d, want %q at 7", got, p.lastSeq, want)
	}
}
