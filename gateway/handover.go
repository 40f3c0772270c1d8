package gateway

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/disgw/disgw/gateway/cluster"
)

// groupHandover holds a starting gateway back from coordinating groups
// until the gateways that coordinated them while it was away have let go
// (docs/design.md §6, "Handing groups over"). A gateway counts a peer
// live when a probe of it succeeds, and only then unloads the groups that
// move to it; until then both would accept joins and commits, and the
// group's committed offsets could go back. Every probe says whether its
// sender counts the probed gateway live, so a starting gateway coordinates
// once every live peer has said so (the peer counted it live a probe
// interval before, and let go of its groups then), or once wait has
// passed.
type groupHandover struct {
	start time.Time
	wait  time.Duration
	done  atomic.Bool

	mu       sync.Mutex
	liveSeen map[int32]bool
}

func newGroupHandover(wait time.Duration) *groupHandover {
	h := &groupHandover{start: time.Now(), wait: wait, liveSeen: map[int32]bool{}}
	h.done.Store(wait <= 0)
	return h
}

// seenLiveBy notes a probe from peer id that counts this gateway live.
func (h *groupHandover) seenLiveBy(id int32) {
	if h.done.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.liveSeen[id] = true
}

// over reports whether the wait is over for a gateway self among live.
func (h *groupHandover) over(self int32, live []cluster.Peer) bool {
	if h.done.Load() {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.start) < h.wait {
		for _, p := range live {
			if p.ID != self && !h.liveSeen[p.ID] {
				return false
			}
		}
	}
	h.done.Store(true)
	return true
}
