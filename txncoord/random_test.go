package txncoord

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// client is one producer instance of a transactional id in the random
// test, with its view of its producer id and epoch.
type client struct {
	p  producer
	v2 bool
}

// TestRandom drives many random runs: several producers of two ids send
// every request at random (fenced ones included), while writes, markers
// and offset commits are held, failed and reordered at random, time jumps
// past timeouts and the state partition moves away and back. It checks
// that epochs never go back, that an answer never runs ahead of the
// record it depends on, that markers always say what the id decided and
// every Prepare* is followed by its Complete*, and at the end, with the
// world healthy again, that every transaction completed and every request
// was answered exactly once.
func TestRandom(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomRun(t, uint64(seed)) })
	}
}

func randomRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	h := newHarness(t, Config{MaxTimeout: time.Minute})
	h.holdPersist, h.holdMarkers, h.holdCommits = true, true, true
	h.onReady = func(rd Ready) { checkReady(h, rd) }
	clients := []*client{
		{p: producer{id: "a", pid: -1, epoch: -1}},
		{p: producer{id: "a", pid: -1, epoch: -1}, v2: true},
		{p: producer{id: "a", pid: -1, epoch: -1}},
		{p: producer{id: "b", pid: -1, epoch: -1}, v2: true},
	}
	ownerOf := make(map[uint64]*client)
	h.onAnswer = func(id uint64, req kmsg.Request, resp kmsg.Response) {
		checkAnswer(h, req, resp)
		cl := ownerOf[id]
		switch r := resp.(type) {
		case *kmsg.InitProducerIDResponse:
			if r.ErrorCode == 0 {
				cl.p.pid, cl.p.epoch = r.ProducerID, r.ProducerEpoch
			}
		case *kmsg.EndTxnResponse:
			if r.ErrorCode == 0 && r.Version >= 5 {
				cl.p.pid, cl.p.epoch = r.ProducerID, r.ProducerEpoch
			}
		}
	}
	topics := []TopicPartition{tp("t", 0), tp("t", 1), tp("u", 0)}
	coordEpoch := int32(1)
	for range 300 {
		cl := clients[rng.IntN(len(clients))]
		var req kmsg.Request
		switch rng.IntN(16) {
		case 0, 1:
			pid, epoch := int64(-1), int16(-1)
			if rng.IntN(2) == 0 && cl.p.pid >= 0 {
				pid, epoch = cl.p.pid, cl.p.epoch
			}
			req = initReq(4, cl.p.id, 30000, pid, epoch)
		case 2, 3, 4:
			if cl.v2 {
				req = batchReq(cl.p, false, topics[rng.IntN(len(topics))])
			} else {
				req = addPartsReq(3, cl.p, topics[rng.IntN(len(topics))])
			}
		case 5:
			req = batchReq(cl.p, true, topics[rng.IntN(len(topics))])
		case 6:
			if cl.v2 {
				req = txnCommitReq(5, cl.p, "g", Offset{Topic: "t", Partition: int32(rng.IntN(2)), Offset: rng.Int64N(100)})
			} else if rng.IntN(2) == 0 {
				req = addOffsetsReq(3, cl.p, "g")
			} else {
				req = txnCommitReq(3, cl.p, "g", Offset{Topic: "t", Partition: int32(rng.IntN(2)), Offset: rng.Int64N(100)})
			}
		case 7, 8:
			v := int16(3)
			if cl.v2 {
				v = 5
			}
			req = endReq(v, cl.p, rng.IntN(3) != 0)
		case 9, 10:
			for range 1 + rng.IntN(3) {
				if len(h.persists) > 0 {
					p := h.persists[0]
					h.persists = h.persists[1:]
					h.persistOne(p, rng.IntN(8) != 0)
				}
			}
		case 11:
			if len(h.markers) > 0 {
				m := h.markers[0]
				h.markers = h.markers[1:]
				codes := []int16{0, 0, 0, kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.RequestTimedOut.Code}
				if rng.IntN(20) == 0 {
					codes = []int16{kerr.InvalidProducerEpoch.Code}
				}
				h.markerOne(m, codes[rng.IntN(len(codes))])
			}
		case 12:
			if len(h.commits) > 0 {
				cm := h.commits[0]
				h.commits = h.commits[1:]
				ok := rng.IntN(4) != 0
				if ok {
					h.committed[cm.Group] = append(h.committed[cm.Group], cm.Offsets...)
				}
				h.c.OffsetsCommitted(h.now, cm.Seq, ok)
			}
		case 13, 14:
			steps := []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, 40 * time.Second}
			h.after(steps[rng.IntN(len(steps))])
		case 15:
			if rng.IntN(4) == 0 {
				coordEpoch++
				h.move(coordEpoch)
			}
		}
		if req != nil {
			ownerOf[h.lastID+1] = cl
			h.step(req)
		}
		h.collect()
	}

	// The world heals: everything written at once, partitions answer.
	h.holdPersist, h.holdMarkers, h.holdCommits = false, false, false
	h.collect()
	coordEpoch++
	h.move(coordEpoch) // resumes markers stopped as fenced
	for range 5 {
		h.after(time.Minute)
	}
	h.allAnswered()
	for _, id := range []string{"a", "b"} {
		if st := h.state(id); st != -1 && st != Empty && st != CompleteCommit && st != CompleteAbort {
			t.Fatalf("seed %d: %s ended in %v", seed, id, st)
		}
		checkLog(h, id)
	}
	if h.c.PendingOffsets("g", "t", 0) || h.c.PendingOffsets("g", "t", 1) {
		t.Fatalf("seed %d: offsets still pending at rest", seed)
	}
}

// move unloads the state partition and loads it again from the log at a
// new coordinator epoch, as when it moves to another gateway and back;
// what was in flight reports late and is ignored.
func (h *harness) move(epoch int32) {
	h.t.Helper()
	h.c.Unload(0)
	h.collect()
	for _, p := range h.persists {
		h.c.Persisted(h.now, p.Seq, false)
	}
	for _, m := range h.markers {
		h.markerOne(m, 0)
	}
	for _, cm := range h.commits {
		h.c.OffsetsCommitted(h.now, cm.Seq, true)
	}
	h.persists, h.markers, h.commits = nil, nil, nil
	var recs []Record
	for _, r := range h.log[0] {
		d, err := Decode(r.Encode())
		if err != nil {
			h.t.Fatal(err)
		}
		recs = append(recs, d)
	}
	h.c.Load(h.now, 0, epoch, recs)
	h.collect()
}

// checkReady: NextTick is set whenever an id waits for a deadline, and no
// later than it; markers say what the id decided, at the partition's
// coordinator epoch, and ask only for partitions of the transaction;
// offsets are committed only once the markers are written.
func checkReady(h *harness, rd Ready) {
	h.t.Helper()
	for _, t := range h.c.txns {
		if d := h.c.deadline(t); !d.IsZero() && (rd.NextTick.IsZero() || rd.NextTick.After(d)) {
			h.t.Fatalf("%s waits for %v but NextTick is %v", t.rec.TxnID, d, rd.NextTick)
		}
	}
	for _, m := range rd.Markers {
		t := h.c.txns[m.TxnID]
		if t == nil {
			h.t.Fatalf("markers for %s, not held", m.TxnID)
		}
		want := t.rec.State == PrepareCommit
		if !t.rec.State.preparing() || m.Commit != want {
			h.t.Fatalf("markers commit=%v for %s in %v", m.Commit, m.TxnID, t.rec.State)
		}
		if m.CoordinatorEpoch != h.c.parts[0] || m.ProducerID != t.rec.ProducerID || m.Epoch != t.rec.Epoch {
			h.t.Fatalf("markers %+v for record %+v", m, t.rec)
		}
		for _, p := range m.Partitions {
			if !t.rec.hasPartition(p) {
				h.t.Fatalf("marker for %v not in %s's transaction", p, m.TxnID)
			}
		}
	}
	for _, cm := range rd.Commits {
		t := h.c.txns[cm.TxnID]
		if t == nil || t.rec.State != PrepareCommit || len(t.end.left) != 0 {
			h.t.Fatalf("offsets of %s committed before its markers were written", cm.TxnID)
		}
	}
}

// checkAnswer: a successful answer depends on a record already persisted.
func checkAnswer(h *harness, req kmsg.Request, resp kmsg.Response) {
	h.t.Helper()
	switch r := resp.(type) {
	case *kmsg.InitProducerIDResponse:
		if r.ErrorCode != 0 {
			return
		}
		id := *req.(*kmsg.InitProducerIDRequest).TransactionalID
		if !slices.ContainsFunc(h.records(id), func(rec Record) bool {
			return rec.State == Empty && rec.ProducerID == r.ProducerID && rec.Epoch == r.ProducerEpoch
		}) {
			h.t.Fatalf("InitProducerId of %s answered %d/%d with no such record persisted", id, r.ProducerID, r.ProducerEpoch)
		}
	case *kmsg.EndTxnResponse:
		e := req.(*kmsg.EndTxnRequest)
		if r.ErrorCode != 0 {
			return
		}
		want := []State{PrepareAbort, CompleteAbort}
		if e.Commit {
			want = []State{PrepareCommit, CompleteCommit}
		}
		recs := h.records(e.TransactionalID)
		if len(recs) == 0 || !slices.Contains(want, recs[len(recs)-1].State) {
			h.t.Fatalf("EndTxn of %s (commit %v) answered with the id's last record %+v", e.TransactionalID, e.Commit, recs)
		}
	case *kmsg.AddPartitionsToTxnResponse:
		a := req.(*kmsg.AddPartitionsToTxnRequest)
		if a.Version >= 4 || len(r.Topics) == 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			return
		}
		recs := h.records(a.TransactionalID)
		last := recs[len(recs)-1]
		added := TopicPartition{a.Topics[0].Topic, a.Topics[0].Partitions[0]}
		if last.State != Ongoing || !last.hasPartition(added) {
			h.t.Fatalf("AddPartitionsToTxn of %v answered with the last record %+v", added, last)
		}
	}
}

// checkLog: in the id's log every Prepare* is followed by its Complete*
// (maybe after itself again), and nothing else.
func checkLog(h *harness, id string) {
	h.t.Helper()
	states := h.states(id)
	for i, s := range states {
		if !s.preparing() {
			continue
		}
		want := CompleteAbort
		if s == PrepareCommit {
			want = CompleteCommit
		}
		j := i + 1
		for j < len(states) && states[j] == s {
			j++
		}
		if j == len(states) || states[j] != want {
			h.t.Fatalf("%s's log %v: %v at %d is not followed by %v", id, states, s, i, want)
		}
	}
}
