package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peer is test peer id at an address of its own.
func peer(id int32) Peer { return Peer{ID: id, Host: "10.0.0." + strconv.Itoa(int(id)), Port: 9092} }

func peerList(ids ...int32) []Peer {
	var out []Peer
	for _, id := range ids {
		out = append(out, peer(id))
	}
	return out
}

func ids(peers []Peer) []int32 {
	out := []int32{}
	for _, p := range peers {
		out = append(out, p.ID)
	}
	return out
}

// step is one input to a State and what must come out of it. ms is the
// time of the input in milliseconds from the start.
type step struct {
	ms    int
	op    string // tick, ok, fail, peers
	id    int32  // of ok and fail
	peers []Peer // of peers

	due    []int32 // tick: the peers handed out to probe
	live   []int32 // the live set after the step
	events string  // "+1 -2": peers that came alive, went dead
	bump   bool    // the version changed
}

// TestState feeds a State inputs and checks every output after each:
// self is node 0, probes are due every second, a peer is dead after 5 s.
func TestState(t *testing.T) {
	cases := []struct {
		name  string
		peers []Peer
		steps []step
	}{
		{name: "cold start: everyone alive, everyone probed", peers: peerList(1, 2), steps: []step{
			{ms: 0, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
			{ms: 500, op: "tick", live: []int32{0, 1, 2}},
			{ms: 600, op: "ok", id: 1, live: []int32{0, 1, 2}},
			{ms: 600, op: "ok", id: 2, live: []int32{0, 1, 2}},
			{ms: 999, op: "tick", live: []int32{0, 1, 2}},
			{ms: 1000, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
		}},
		{name: "a probe in flight is not handed out again", peers: peerList(1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 3000, op: "tick", live: []int32{0, 1}},
			{ms: 3100, op: "ok", id: 1, live: []int32{0, 1}},
			{ms: 3100, op: "tick", due: []int32{1}, live: []int32{0, 1}},
		}},
		{name: "dead after 5 s of failed probes, not before", peers: peerList(1, 2), steps: []step{
			{ms: 0, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
			{ms: 100, op: "fail", id: 1, live: []int32{0, 1, 2}},
			{ms: 100, op: "ok", id: 2, live: []int32{0, 1, 2}},
			{ms: 4000, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
			{ms: 4100, op: "fail", id: 1, live: []int32{0, 1, 2}},
			{ms: 4100, op: "ok", id: 2, live: []int32{0, 1, 2}},
			{ms: 4999, op: "tick", live: []int32{0, 1, 2}},
			{ms: 5000, op: "tick", due: []int32{1, 2}, live: []int32{0, 2}, events: "-1", bump: true},
			{ms: 5100, op: "ok", id: 2, live: []int32{0, 2}},
		}},
		{name: "a hung probe: dead at the tick after 5 s", peers: peerList(1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 4999, op: "tick", live: []int32{0, 1}},
			{ms: 5000, op: "tick", live: []int32{0}, events: "-1", bump: true},
			{ms: 6000, op: "tick", live: []int32{0}},
		}},
		{name: "alive again on the next successful probe", peers: peerList(1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 6000, op: "fail", id: 1, live: []int32{0}, events: "-1", bump: true},
			{ms: 7000, op: "tick", due: []int32{1}, live: []int32{0}},
			{ms: 7100, op: "fail", id: 1, live: []int32{0}},
			{ms: 8000, op: "tick", due: []int32{1}, live: []int32{0}},
			{ms: 8100, op: "ok", id: 1, live: []int32{0, 1}, events: "+1", bump: true},
			{ms: 9000, op: "tick", due: []int32{1}, live: []int32{0, 1}},
		}},
		{name: "a success restarts the 5 s", peers: peerList(1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 3000, op: "ok", id: 1, live: []int32{0, 1}},
			{ms: 7999, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 8000, op: "fail", id: 1, live: []int32{0}, events: "-1", bump: true},
		}},
		{name: "a new peer is alive at once and probed at the next tick", peers: peerList(1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 100, op: "ok", id: 1, live: []int32{0, 1}},
			{ms: 200, op: "peers", peers: peerList(1, 3), live: []int32{0, 1, 3}, bump: true},
			{ms: 300, op: "tick", due: []int32{3}, live: []int32{0, 1, 3}},
			{ms: 1000, op: "tick", due: []int32{1}, live: []int32{0, 1, 3}},
			{ms: 1100, op: "ok", id: 1, live: []int32{0, 1, 3}},
			{ms: 5199, op: "tick", due: []int32{1}, live: []int32{0, 1, 3}},
			{ms: 5200, op: "tick", live: []int32{0, 1}, events: "-3", bump: true},
			{ms: 5300, op: "ok", id: 3, live: []int32{0, 1, 3}, events: "+3", bump: true},
		}},
		{name: "a removed peer is forgotten, its late result ignored", peers: peerList(1, 2), steps: []step{
			{ms: 0, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
			{ms: 50, op: "peers", peers: peerList(1), live: []int32{0, 1}, bump: true},
			{ms: 100, op: "ok", id: 2, live: []int32{0, 1}},
			{ms: 100, op: "ok", id: 1, live: []int32{0, 1}},
			{ms: 1000, op: "tick", due: []int32{1}, live: []int32{0, 1}},
		}},
		{name: "removing a dead peer changes nothing live", peers: peerList(1, 2), steps: []step{
			{ms: 0, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
			{ms: 100, op: "ok", id: 1, live: []int32{0, 1, 2}},
			{ms: 5000, op: "tick", due: []int32{1}, live: []int32{0, 1}, events: "-2", bump: true},
			{ms: 5001, op: "peers", peers: peerList(1), live: []int32{0, 1}},
		}},
		{name: "the same list again changes nothing and keeps liveness", peers: peerList(1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 5000, op: "tick", live: []int32{0}, events: "-1", bump: true},
			{ms: 5001, op: "peers", peers: peerList(1), live: []int32{0}},
		}},
		{name: "a known peer at a new address is probed again at once", peers: peerList(1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1}, live: []int32{0, 1}},
			{ms: 100, op: "ok", id: 1, live: []int32{0, 1}},
			{ms: 200, op: "peers", peers: []Peer{{ID: 1, Host: "10.9.9.9", Port: 9092}}, live: []int32{0, 1}, bump: true},
			{ms: 300, op: "tick", due: []int32{1}, live: []int32{0, 1}},
		}},
		{name: "self and repeated ids in the list are skipped", peers: peerList(0, 2, 2, 1), steps: []step{
			{ms: 0, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
			{ms: 1, op: "peers", peers: []Peer{peer(0), peer(1), {ID: 1, Host: "other", Port: 1}}, live: []int32{0, 1}, bump: true},
		}},
		{name: "alone: live is self, nothing to probe", steps: []step{
			{ms: 0, op: "tick", live: []int32{0}},
			{ms: 60000, op: "tick", live: []int32{0}},
		}},
		{name: "everyone dead: self stays live", peers: peerList(1, 2), steps: []step{
			{ms: 0, op: "tick", due: []int32{1, 2}, live: []int32{0, 1, 2}},
			{ms: 5000, op: "tick", live: []int32{0}, events: "-1 -2", bump: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1_700_000_000, 0)
			s := NewState(peer(0), tc.peers, time.Second, 5*time.Second, t0)
			if ev := s.Events(); len(ev) != 0 {
				t.Fatalf("events at start: %v", ev)
			}
			for i, st := range tc.steps {
				before := s.Version()
				now := t0.Add(time.Duration(st.ms) * time.Millisecond)
				var due []Peer
				switch st.op {
				case "tick":
					due = s.Tick(now)
				case "ok", "fail":
					s.ProbeResult(st.id, st.op == "ok", now)
				case "peers":
					s.SetPeers(st.peers, now)
				default:
					t.Fatalf("step %d: unknown op %q", i, st.op)
				}
				var evs []string
				for _, e := range s.Events() {
					sign := "-"
					if e.Alive {
						sign = "+"
					}
					evs = append(evs, sign+strconv.Itoa(int(e.Peer.ID)))
				}
				slices.Sort(evs)
				where := fmt.Sprintf("step %d (%s %d at %dms)", i, st.op, st.id, st.ms)
				if got := ids(due); !slices.Equal(got, append([]int32{}, st.due...)) {
					t.Errorf("%s: due %v, want %v", where, got, st.due)
				}
				if got := ids(s.Live()); !slices.Equal(got, st.live) {
					t.Errorf("%s: live %v, want %v", where, got, st.live)
				}
				if got := strings.Join(evs, " "); got != st.events {
					t.Errorf("%s: events %q, want %q", where, got, st.events)
				}
				if bumped := s.Version() != before; bumped != st.bump {
					t.Errorf("%s: version changed %v, want %v", where, bumped, st.bump)
				}
			}
		})
	}
}

// TestStateLiveAddresses checks that the live set carries the peers'
// addresses, sorted by id whatever the order given.
func TestStateLiveAddresses(t *testing.T) {
	self := Peer{ID: 3, Host: "gw3", Port: 9092}
	s := NewState(self, []Peer{peer(9), peer(2), peer(5)}, 0, 0, time.Now())
	want := []Peer{peer(2), self, peer(5), peer(9)}
	if got := s.Live(); !slices.Equal(got, want) {
		t.Fatalf("live %v, want %v", got, want)
	}
	if s.probeInterval != DefaultProbeInterval || s.deadAfter != DefaultDeadAfter {
		t.Fatalf("defaults %v, %v", s.probeInterval, s.deadAfter)
	}
}
