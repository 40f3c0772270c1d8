package groupcoord

import (
	"testing"
	"time"
)

// TestReadyReportsRebalances checks that every new generation is reported
// once, with the time its join phase took on the injected clock.
func TestReadyReportsRebalances(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	if len(h.rebalances) == 0 || h.rebalances[len(h.rebalances)-1].Generation != 1 {
		t.Fatalf("rebalances after the group formed: %+v", h.rebalances)
	}
	before := len(h.rebalances)

	jc := h.step("cc", joinReq("g", h.newMemberID("g", "cc")))
	h.after(2 * time.Second)
	ja := h.step("ca", joinReq("g", ids[0]))
	h.after(3 * time.Second)
	jb := h.step("cb", joinReq("g", ids[1]))
	for _, j := range []uint64{ja, jb, jc} {
		if r := h.joinResp(j); r.Generation != 2 {
			t.Fatalf("rejoin: %+v", r)
		}
	}
	got := h.rebalances[before:]
	if len(got) != 1 || got[0].Group != "g" || got[0].Generation != 2 || got[0].Took != 5*time.Second {
		t.Fatalf("rebalances reported for generation 2: %+v, want one of 5s", got)
	}
	if rd := h.c.Ready(); len(rd.Rebalances) != 0 {
		t.Fatalf("a second Ready repeats rebalances: %+v", rd.Rebalances)
	}
}
