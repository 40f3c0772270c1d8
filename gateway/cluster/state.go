package cluster

import (
	"cmp"
	"slices"
	"time"
)

// Defaults of the probing settings.
const (
	DefaultProbeInterval = time.Second
	DefaultDeadAfter     = 3 * time.Second
)

// State is the membership of one gateway as a pure state machine: no
// goroutines, no clock and no network. Its inputs are method calls that
// carry the time; its outputs are returned, or collected until Events
// takes them. Cluster drives it; tests feed it directly.
//
// Every peer is alive from the moment it is first known, so a cold start
// spreads ownership over all peers at once instead of one gateway owning
// everything until its probes come back. A peer is dead once DeadAfter has
// passed without a successful probe, and alive again on its next one.
type State struct {
	self          Peer
	probeInterval time.Duration
	deadAfter     time.Duration
	peers         map[int32]*peerState
	live          []Peer
	version       uint64
	events        []Event
}

// peerState is what State knows of one other gateway.
type peerState struct {
	peer      Peer
	alive     bool
	lastOK    time.Time // last successful probe, or when it became known
	nextProbe time.Time
	probing   bool // a probe was handed out and has not come back
}

// Event is a peer going dead or coming alive, for the log.
type Event struct {
	Peer  Peer
	Alive bool
}

// NewState starts the membership of self among peers (self may be among
// them; it is recognised by id) at now. probeInterval and deadAfter of
// zero or less take the defaults.
func NewState(self Peer, peers []Peer, probeInterval, deadAfter time.Duration, now time.Time) *State {
	if probeInterval <= 0 {
		probeInterval = DefaultProbeInterval
	}
	if deadAfter <= 0 {
		deadAfter = DefaultDeadAfter
	}
	s := &State{self: self, probeInterval: probeInterval, deadAfter: deadAfter, peers: map[int32]*peerState{}}
	s.SetPeers(peers, now)
	return s
}

// SetPeers replaces the peer list, as when DNS answers differently. A peer
// already known keeps its liveness (its address is updated); a new one is
// alive from now; one no longer listed is forgotten. Self is skipped, and
// of peers sharing an id the first is kept.
func (s *State) SetPeers(peers []Peer, now time.Time) {
	keep := map[int32]bool{}
	for _, p := range peers {
		if p.ID == s.self.ID || keep[p.ID] {
			continue
		}
		keep[p.ID] = true
		if ps, ok := s.peers[p.ID]; ok {
			if ps.peer != p {
				// A new address is a new connection: probe it soon.
				ps.peer = p
				ps.nextProbe = now
			}
			continue
		}
		s.peers[p.ID] = &peerState{peer: p, alive: true, lastOK: now, nextProbe: now}
	}
	for id := range s.peers {
		if !keep[id] {
			delete(s.peers, id)
		}
	}
	s.update()
}

// Tick advances the clock to now: peers past DeadAfter go dead, and the
// peers due a probe are returned. Each is probed at most every
// ProbeInterval and never twice at once; report each with ProbeResult.
func (s *State) Tick(now time.Time) []Peer {
	var due []Peer
	for _, ps := range s.peers {
		s.expire(ps, now)
		if !ps.probing && !now.Before(ps.nextProbe) {
			ps.probing = true
			ps.nextProbe = now.Add(s.probeInterval)
			due = append(due, ps.peer)
		}
	}
	slices.SortFunc(due, byID)
	s.update()
	return due
}

// ProbeResult reports how the probe of peer id handed out by Tick went.
// A result for a peer no longer known is ignored.
func (s *State) ProbeResult(id int32, ok bool, now time.Time) {
	ps := s.peers[id]
	if ps == nil {
		return
	}
	ps.probing = false
	if ok {
		ps.lastOK = now
		if !ps.alive {
			ps.alive = true
			s.events = append(s.events, Event{Peer: ps.peer, Alive: true})
		}
	} else {
		s.expire(ps, now)
	}
	s.update()
}

// expire marks ps dead once DeadAfter has passed since its last success.
func (s *State) expire(ps *peerState, now time.Time) {
	if ps.alive && now.Sub(ps.lastOK) >= s.deadAfter {
		ps.alive = false
		s.events = append(s.events, Event{Peer: ps.peer, Alive: false})
	}
}

// update recomputes the live set, and bumps the version if it changed.
func (s *State) update() {
	live := []Peer{s.self}
	for _, ps := range s.peers {
		if ps.alive {
			live = append(live, ps.peer)
		}
	}
	slices.SortFunc(live, byID)
	if !slices.Equal(live, s.live) {
		s.live = live
		s.version++
	}
}

// Live is the live set, self always included, sorted by id. The caller
// must not modify it; a change makes a new slice.
func (s *State) Live() []Peer { return s.live }

// Version changes whenever the live set does.
func (s *State) Version() uint64 { return s.version }

// Events returns the peers that went dead or alive since the last call.
func (s *State) Events() []Event {
	ev := s.events
	s.events = nil
	return ev
}

// byID orders peers by node id.
func byID(a, b Peer) int { return cmp.Compare(a.ID, b.ID) }
