package gateway

import (
	"testing"
	"time"

	"github.com/disgw/disgw/gateway/cluster"
)

// TestGroupHandover: a starting gateway coordinates only once every live
// peer has said it counts it live, or once its wait is over; alone, at
// once.
func TestGroupHandover(t *testing.T) {
	live := []cluster.Peer{{ID: 0}, {ID: 1}, {ID: 2}}
	if !newGroupHandover(0).over(0, live) {
		t.Fatal("no wait: not coordinating")
	}
	h := newGroupHandover(time.Hour)
	if h.over(0, live[:1]) != true {
		t.Fatal("alone in the live set: still waiting")
	}
	h = newGroupHandover(time.Hour)
	for i, seen := range []int32{1, 1, 5} {
		h.seenLiveBy(seen)
		if h.over(0, live) {
			t.Fatalf("coordinating after %d probes, before node 2 counted this one live", i+1)
		}
	}
	h.seenLiveBy(2)
	if !h.over(0, live) {
		t.Fatal("both peers count it live: still waiting")
	}
	h.liveSeen = nil // over for good: nothing is noted any more
	h.seenLiveBy(1)
	if !h.over(0, live) {
		t.Fatal("not over any more")
	}
	h = newGroupHandover(time.Millisecond)
	time.Sleep(2 * time.Millisecond)
	if !h.over(0, live) {
		t.Fatal("wait passed: still waiting")
	}
}
