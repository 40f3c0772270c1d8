package groupcoord

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestGroupMaxSize(t *testing.T) {
	h := newHarness(t, Config{MaxGroupSize: 2})
	ids := h.stableGroup("g", "ca", "cb")
	// A third member is refused before it gets an id, in every version.
	h.wantCode(h.step("cc", joinReq("g", "")), kerr.GroupMaxSizeReached)
	v3 := joinReq("g", "")
	v3.Version = 3
	h.wantCode(h.step("cc", v3), kerr.GroupMaxSizeReached)
	h.wantCode(h.step("cc", staticJoinReq("g", "", "ic")), kerr.GroupMaxSizeReached)
	if got := h.memberIDs("g"); len(got) != 2 || h.state("g") != "Stable" {
		t.Fatalf("members %v state %s after refusals", got, h.state("g"))
	}
	// Current members still rejoin.
	h.wantCode(h.step("cb", joinReq("g", ids[1])), nil)

	// An id handed out while there was room is refused when the group
	// filled meanwhile, and is not pending any more.
	h2 := newHarness(t, Config{MaxGroupSize: 1})
	a := h2.newMemberID("f", "ca")
	b := h2.newMemberID("f", "cb")
	h2.step("ca", joinReq("f", a))
	h2.wantCode(h2.step("cb", joinReq("f", b)), kerr.GroupMaxSizeReached)
	h2.wantCode(h2.step("cb", joinReq("f", b)), kerr.UnknownMemberID)

	// A static member restarting (known instance, no member id) does not
	// grow the group and is let in.
	h3 := newHarness(t, Config{MaxGroupSize: 1})
	h3.staticGroup("s", "ia")
	h3.wantCode(h3.step("client-ia", staticJoinReq("s", "", "ia")), nil)
	h3.allAnswered()
}

func TestPendingMembersBounded(t *testing.T) {
	h := newHarness(t, Config{MaxPendingMembers: 3})
	var ids []string
	for i := range 10 {
		ids = append(ids, h.newMemberID("g", fmt.Sprintf("c%d", i)))
	}
	if got := len(h.c.groups["g"].pending); got != 3 {
		t.Fatalf("%d pending member ids, want 3", got)
	}
	// The oldest were forgotten: they rejoin as unknown members; the
	// newest three become members.
	h.wantCode(h.step("c0", joinReq("g", ids[0])), kerr.UnknownMemberID)
	var joins []uint64
	for i := 7; i < 10; i++ {
		joins = append(joins, h.step(fmt.Sprintf("c%d", i), joinReq("g", ids[i])))
	}
	for _, j := range joins {
		h.wantCode(j, nil)
	}
	if got := len(h.memberIDs("g")); got != 3 {
		t.Fatalf("%d members, want 3", got)
	}
	h.allAnswered()
}

func TestPendingMembersExpireAfterSession(t *testing.T) {
	h := newHarness(t, Config{})
	for i := range 5 {
		h.newMemberID("g", fmt.Sprintf("c%d", i))
	}
	if !h.nextTick.Equal(t0.Add(testSession)) {
		t.Fatalf("NextTick %v, want the pending ids' expiry", h.nextTick.Sub(t0))
	}
	h.after(testSession)
	if g := h.c.groups["g"]; g != nil && len(g.pending) != 0 {
		t.Fatalf("%d pending ids after their session timeout", len(g.pending))
	}
}

func TestMaxGroups(t *testing.T) {
	h := newHarness(t, Config{MaxGroups: 2})
	h.stableGroup("a", "ca")
	if got := h.c.CheckCommit(h.now, "b", "", nil, -1); got != 0 {
		t.Fatalf("simple commit making the second group: %v", kerr.ErrorForCode(got))
	}
	h.wantCode(h.step("cc", joinReq("c", "")), kerr.CoordinatorNotAvailable)
	if got := h.c.CheckCommit(h.now, "c", "", nil, -1); got != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("simple commit making a third group: %v", kerr.ErrorForCode(got))
	}
	if h.state("c") != "" {
		t.Fatalf("refused group c is in memory as %s", h.state("c"))
	}
	// Existing groups keep working; once one is deleted there is room.
	h.wantCode(h.step("cb", joinReq("b", "")), kerr.MemberIDRequired)
	if code := h.c.Delete("a"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a live group: %v", kerr.ErrorForCode(code))
	}
	h.step("ca", leaveReq("a", kmsg.LeaveGroupRequestMember{MemberID: h.memberIDs("a")[0]}))
	if code := h.c.Delete("a"); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if rd := h.c.Ready(); len(rd.Removed) != 1 || rd.Removed[0] != (Removed{Group: "a"}) {
		t.Fatalf("Removed after Delete: %+v", rd.Removed)
	}
	h.wantCode(h.step("cc", joinReq("c", "")), kerr.MemberIDRequired)
	h.allAnswered()
}

func TestSessionTimeoutBounds(t *testing.T) {
	h := newHarness(t, Config{MinSessionTimeout: 7 * time.Second, MaxSessionTimeout: time.Minute})
	for _, tc := range []struct {
		session time.Duration
		want    *kerr.Error
	}{
		{7*time.Second - time.Millisecond, kerr.InvalidSessionTimeout},
		{time.Minute + time.Millisecond, kerr.InvalidSessionTimeout},
		{7 * time.Second, kerr.MemberIDRequired},
		{time.Minute, kerr.MemberIDRequired},
	} {
		r := joinReq("g", "")
		r.SessionTimeoutMillis = int32(tc.session / time.Millisecond)
		h.wantCode(h.step("c", r), tc.want)
	}
}

func TestRebalanceTimeoutClamped(t *testing.T) {
	// The cap is below the members' session, so b's silence is not what
	// ends the join phase.
	const limit = testSession / 2
	h := newHarness(t, Config{MaxRebalanceTimeout: limit})
	ids := h.stableGroup("g", "ca", "cb")
	// a rejoins asking for a day: the join phase waits only the cap for b.
	r := joinReq("g", ids[0])
	r.RebalanceTimeoutMillis = int32((24 * time.Hour) / time.Millisecond)
	ja := h.step("ca", r)
	if !h.nextTick.Equal(h.now.Add(limit)) {
		t.Fatalf("join deadline in %v, want the %v cap", h.nextTick.Sub(h.now), limit)
	}
	h.after(limit)
	if resp := h.joinResp(ja); resp.ErrorCode != 0 || resp.Generation != 2 || len(resp.Members) != 1 {
		t.Fatalf("join after the capped timeout: %+v", resp)
	}
}

func TestEmptyGroupOffsetsExpire(t *testing.T) {
	const retention = 24 * time.Hour
	h := newHarness(t, Config{OffsetsRetention: retention})
	ids := h.stableGroup("g", "ca")
	if got := h.c.CheckCommit(h.now, "g", ids[0], nil, 1); got != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(got))
	}
	// A group with members never expires, however long.
	for end := h.now.Add(retention + time.Hour); h.now.Before(end); {
		h.after(testSession - time.Second)
		h.wantCode(h.step("ca", heartbeatReq("g", ids[0], 1)), nil)
	}
	h.wantCode(h.step("ca", leaveReq("g", kmsg.LeaveGroupRequestMember{MemberID: ids[0]})), nil)
	emptied := h.now
	if h.state("g") != "Empty" || !h.nextTick.Equal(emptied.Add(retention)) {
		t.Fatalf("state %s, NextTick %v after emptying, want the retention", h.state("g"), h.nextTick.Sub(emptied))
	}
	// A simple commit while Empty pushes the expiry to retention after it.
	h.after(time.Hour)
	if got := h.c.CheckCommit(h.now, "g", "", nil, -1); got != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(got))
	}
	h.collect()
	lastCommit := h.now
	if !h.nextTick.Equal(lastCommit.Add(retention)) {
		t.Fatalf("NextTick %v after the simple commit, want retention after it", h.nextTick.Sub(lastCommit))
	}
	rd := h.expireAt(lastCommit.Add(retention - time.Nanosecond))
	if len(rd.Removed) != 0 || h.state("g") != "Empty" {
		t.Fatalf("expired early: %+v, state %s", rd.Removed, h.state("g"))
	}
	rd = h.expireAt(lastCommit.Add(retention))
	if len(rd.Removed) != 1 || rd.Removed[0] != (Removed{Group: "g", ExpireOffsets: true}) || h.state("g") != "" {
		t.Fatalf("Removed %+v, state %q at expiry", rd.Removed, h.state("g"))
	}
	if !rd.NextTick.IsZero() {
		t.Fatalf("NextTick %v after the only group expired", rd.NextTick)
	}
	// The group can start again, from generation 0.
	ids = h.stableGroup("g", "ca")
	if got := h.c.CheckCommit(h.now, "g", ids[0], nil, 1); got != 0 {
		t.Fatalf("commit in the new group: %v", kerr.ErrorForCode(got))
	}
}

func TestSimpleCommitGroupExpires(t *testing.T) {
	h := newHarness(t, Config{OffsetsRetention: time.Hour})
	if got := h.c.CheckCommit(h.now, "simple", "", nil, -1); got != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(got))
	}
	// It is held only to expire: describe and list leave it to DIS.
	if _, ok := h.c.Describe("simple"); ok || len(h.c.List()) != 0 {
		t.Fatalf("a group made by a simple commit is described or listed")
	}
	h.collect()
	if !h.nextTick.Equal(t0.Add(time.Hour)) {
		t.Fatalf("NextTick %v, want the retention", h.nextTick.Sub(t0))
	}
	rd := h.expireAt(t0.Add(time.Hour))
	if len(rd.Removed) != 1 || rd.Removed[0] != (Removed{Group: "simple", ExpireOffsets: true}) {
		t.Fatalf("Removed %+v", rd.Removed)
	}
}

func TestEmptyGroupWithoutOffsetsIsForgotten(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca")
	h.step("ca", leaveReq("g", kmsg.LeaveGroupRequestMember{MemberID: ids[0]}))
	emptied := h.now
	// A pending id holds the group until it expires.
	h.after(time.Minute)
	h.newMemberID("g", "cb")
	if !h.nextTick.Equal(h.now.Add(testSession)) {
		t.Fatalf("NextTick %v, want the pending id's expiry", h.nextTick.Sub(h.now))
	}
	rd := h.expireAt(emptied.Add(emptyGroupLinger))
	if len(rd.Removed) != 1 || rd.Removed[0] != (Removed{Group: "g"}) {
		t.Fatalf("Removed %+v, want g without offsets", rd.Removed)
	}
}

// expireAt ticks at t and returns the Ready, with its Removed, that the
// harness's collect would discard.
func (h *harness) expireAt(t time.Time) Ready {
	h.t.Helper()
	h.now = t
	h.c.Tick(t)
	rd := h.c.Ready()
	if len(rd.Responses) != 0 {
		h.t.Fatalf("expiry answered requests: %+v", rd.Responses)
	}
	return rd
}
