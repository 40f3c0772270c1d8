package gateway

import (
	"sync"
	"testing"

	"github.com/disgw/disgw/gateway/cluster"
)

// switchableOwner is a membership of two gateways whose owner of every key
// the test picks.
type switchableOwner struct {
	mu    sync.Mutex
	owner cluster.Peer
	peers []cluster.Peer
}

func (m *switchableOwner) Live() []cluster.Peer { return m.peers }
func (m *switchableOwner) Owner(string) cluster.Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owner
}
func (m *switchableOwner) Changed() <-chan struct{} { return nil }
func (m *switchableOwner) set(p cluster.Peer) {
	m.mu.Lock()
	m.owner = p
	m.mu.Unlock()
}

// A partition that moves to another gateway has its state released, that
// of every tenant (plog.Tenant.ReleaseMoved has the details).
func TestReleaseMovedPartitions(t *testing.T) {
	self, other := cluster.Peer{ID: 0}, cluster.Peer{ID: 1}
	m := &switchableOwner{owner: self, peers: []cluster.Peer{self, other}}
	gw, err := New(Config{NodeID: 0, Membership: m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := partitionKey{tenant: gw.tenant, topic: "t", partition: 0}
	held := func() bool {
		_, ok := gw.tenant.parts.Peek(key.log())
		return ok
	}

	gw.partitionFor(key)
	if !gw.releaseMovedPartitions() || !held() {
		t.Fatal("an owned partition's state was released")
	}
	m.set(other)
	if !gw.releaseMovedPartitions() || held() {
		t.Fatal("an idle partition that moved away was kept")
	}
}
