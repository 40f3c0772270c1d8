package test

import (
	"slices"
	"sync"

	"github.com/disgw/disgw/gateway/cluster"
)

// Membership is one gateway's view of a cluster of gateways, controlled by
// a test: the peers are fixed, the live set is what the test last set, and
// the owner of a key is chosen among the live peers by rendezvous hashing,
// unless the test pinned the key to a peer (to make gateways disagree, a
// split brain).
type Membership struct {
	mu      sync.Mutex
	peers   []cluster.Peer
	live    map[int32]bool
	pinned  map[string]int32
	changed chan struct{}
}

// newMembership is a view in which every peer is live.
func newMembership(peers []cluster.Peer) *Membership {
	m := &Membership{peers: peers, live: make(map[int32]bool), pinned: make(map[string]int32), changed: make(chan struct{})}
	for _, p := range peers {
		m.live[p.ID] = true
	}
	return m
}

// Live lists the live peers by node id.
func (m *Membership) Live() []cluster.Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveLocked()
}

func (m *Membership) liveLocked() []cluster.Peer {
	var out []cluster.Peer
	for _, p := range m.peers {
		if m.live[p.ID] {
			out = append(out, p)
		}
	}
	return out
}

// Owner is the peer key is pinned to, or the owner the gateways' own
// rendezvous hashing picks among the live peers.
func (m *Membership) Owner(key string) cluster.Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.pinned[key]; ok {
		return m.peerLocked(id)
	}
	return cluster.Owner(key, m.liveLocked())
}

func (m *Membership) peerLocked(id int32) cluster.Peer {
	i := slices.IndexFunc(m.peers, func(p cluster.Peer) bool { return p.ID == id })
	return m.peers[i]
}

// Changed is closed at the next change the test makes.
func (m *Membership) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// SetLive makes ids the live peers.
func (m *Membership) SetLive(ids ...int32) {
	m.change(func() {
		clear(m.live)
		for _, id := range ids {
			m.live[id] = true
		}
	})
}

// Pin makes id the owner of key whatever the live set; unpinned by
// Unpin.
func (m *Membership) Pin(key string, id int32) { m.change(func() { m.pinned[key] = id }) }

// Unpin lets the live set decide key's owner again.
func (m *Membership) Unpin(key string) { m.change(func() { delete(m.pinned, key) }) }

func (m *Membership) change(fn func()) {
	m.mu.Lock()
	fn()
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

// setAddrs fills in where each peer listens, known once they started.
func (m *Membership) setAddrs(peers []cluster.Peer) {
	m.mu.Lock()
	copy(m.peers, peers)
	m.mu.Unlock()
}
