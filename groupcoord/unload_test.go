package groupcoord

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestUnload: a group that moved to another coordinator goes from memory
// at once, whatever its state; requests waiting for its rebalance are
// answered NOT_COORDINATOR, its offsets are not expired, and a later join
// starts a new group.
func TestUnload(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.stableGroup("g", "ga", "gb")
	joinG := h.step("ga", joinReq("g", g[0])) // waits for gb to rejoin
	clients := []string{"sa", "sb"}
	s := h.stableGroup("s", clients...)
	js := []uint64{h.step("sa", joinReq("s", s[0])), h.step("sb", joinReq("s", s[1]))}
	leader := 0
	if h.joinResp(js[1]).LeaderID == s[1] {
		leader = 1
	}
	follower := 1 - leader
	gen := h.joinResp(js[follower]).Generation
	syncS := h.step(clients[follower], syncReq("s", s[follower], gen, nil)) // waits for the leader
	if h.c.CheckCommit(h.now, "c", "", nil, -1) != 0 {
		t.Fatal("simple commit refused")
	}
	if got := h.c.Groups(); !slices.Equal(got, []string{"c", "g", "s"}) {
		t.Fatalf("Groups() = %v", got)
	}
	if !h.waiting(joinG) || !h.waiting(syncS) {
		t.Fatal("the join and sync should wait before Unload")
	}

	for _, id := range []string{"g", "s", "c", "none"} {
		h.c.Unload(id)
	}
	h.collect()
	h.wantCode(joinG, kerr.NotCoordinator)
	h.wantCode(syncS, kerr.NotCoordinator)
	h.allAnswered()
	want := []Removed{{Group: "g"}, {Group: "s"}, {Group: "c"}}
	if !slices.Equal(h.removed, want) {
		t.Fatalf("Removed %+v, want %+v (no offsets expired)", h.removed, want)
	}
	if got := h.c.Groups(); len(got) != 0 {
		t.Fatalf("Groups() after Unload = %v", got)
	}
	if !h.nextTick.IsZero() {
		t.Fatalf("a deadline of an unloaded group is still armed: %v", h.nextTick)
	}
	// The group's old members are strangers now; a new member starts over.
	h.wantCode(h.step("gb", heartbeatReq("g", g[1], 1)), kerr.UnknownMemberID)
	h.newMemberID("g", "gc")
}
