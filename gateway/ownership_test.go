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

// A partition that moves away goes once idle; one that moved away while
// busy and came back before it was idle goes too, so that its stale next
// offset and producer state are recovered from DIS again.
func TestReleaseMovedPartitions(t *testing.T) {
	self, other := cluster.Peer{ID: 0}, cluster.Peer{ID: 1}
	m := &switchableOwner{owner: self, peers: []cluster.Peer{self, other}}
	gw, err := New(Config{NodeID: 0, Membership: m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := partitionKey{tenant: gw.tenant, topic: "t", partition: 0}
	held := func() bool {
		gw.tenant.parts.mu.Lock()
		defer gw.tenant.parts.mu.Unlock()
		_, ok := gw.tenant.parts.m[key]
		return ok
	}

	ps := gw.partitionFor(key)
	if !gw.releaseMovedPartitions() || !held() {
		t.Fatal("an owned partition's state was released")
	}

	ps.busy.Add(1) // a read in progress
	m.set(other)
	if gw.releaseMovedPartitions() {
		t.Fatal("release reported done while a moved partition was busy")
	}
	m.set(self) // back before the read finished
	if gw.releaseMovedPartitions() || !held() {
		t.Fatal("a busy partition was dropped, or reported done")
	}
	ps.busy.Add(-1)
	if !gw.releaseMovedPartitions() {
		t.Fatal("release not done once the partition was idle")
	}
	if held() {
		t.Fatal("the state of a partition that moved away and back while busy was kept")
	}
	if fresh := gw.partitionFor(key); fresh == ps || fresh.moved.Load() {
		t.Fatal("the partition's next use got the stale state")
	}

	m.set(other)
	if !gw.releaseMovedPartitions() || held() {
		t.Fatal("an idle partition that moved away was kept")
	}
}
