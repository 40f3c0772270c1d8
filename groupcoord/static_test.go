package groupcoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticGroup makes a Stable group of static members, one per instance id;
// the first is the leader. It returns their member ids and the generation.
func (h *harness) staticGroup(group string, instances ...string) ([]string, int32) {
	h.t.Helper()
	joins := make([]uint64, len(instances))
	clients := make([]string, len(instances))
	for i, in := range instances {
		clients[i] = "client-" + in
		joins[i] = h.step(clients[i], staticJoinReq(group, "", in))
	}
	ids := make([]string, len(instances))
	ids[0] = h.joinResp(joins[0]).MemberID
	if len(instances) > 1 {
		// With no initial delay the first member completed a generation
		// alone; its rejoin completes the one with everyone.
		joins[0] = h.step(clients[0], staticJoinReq(group, ids[0], instances[0]))
	}
	for i, j := range joins {
		ids[i] = h.joinResp(j).MemberID
	}
	h.syncAll(group, clients, ids, joins)
	return ids, h.joinResp(joins[0]).Generation
}

func TestStaticMemberRestartKeepsAssignment(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: time.Second})
	// Static members get no MEMBER_ID_REQUIRED round trip; their ids come
	// from their instance ids.
	ja := h.step("client-ia", staticJoinReq("g", "", "ia"))
	jb := h.step("client-ib", staticJoinReq("g", "", "ib"))
	h.after(2 * time.Second) // b's arrival extended the initial delay once
	ids := []string{h.joinResp(ja).MemberID, h.joinResp(jb).MemberID}
	if !slices.Equal(ids, []string{"ia-1", "ib-2"}) {
		t.Fatalf("static member ids %v", ids)
	}
	h.syncAll("g", []string{"client-ia", "client-ib"}, ids, []uint64{ja, jb})
	a, oldB := ids[0], ids[1]

	// b restarts within its session: a new member id, the same generation,
	// its assignment back, and no rebalance.
	h.after(5 * time.Second)
	h.step("client-ia", heartbeatReq("g", a, 1))
	restart := staticJoinReq("g", "", "ib")
	restart.Protocols[0].Metadata = []byte("owned partitions forgotten")
	jb = h.step("client-ib2", restart)
	r := h.joinResp(jb)
	newB := r.MemberID
	if r.ErrorCode != 0 || newB == oldB || r.Generation != 1 || r.LeaderID != a || len(r.Members) != 0 {
		t.Fatalf("static restart join: %+v", r)
	}
	if h.state("g") != "Stable" {
		t.Fatalf("state %s after static restart", h.state("g"))
	}
	sb := h.step("client-ib2", syncReq("g", newB, 1, nil))
	if got := string(h.syncResp(sb).MemberAssignment); got != "as-"+oldB {
		t.Fatalf("restarted member assigned %q, want its old %q", got, "as-"+oldB)
	}
	d, _ := h.c.Describe("g")
	if d.Members[1].MemberID != newB || d.Members[1].ClientID != "client-ib2" || *d.Members[1].InstanceID != "ib" {
		t.Fatalf("describe after restart: %+v", d.Members[1])
	}

	// The old member id is fenced everywhere.
	hb := heartbeatReq("g", oldB, 1)
	hb.InstanceID = kmsg.StringPtr("ib")
	h.wantCode(h.step("client-ib", hb), kerr.FencedInstanceID)
	sync := syncReq("g", oldB, 1, nil)
	sync.InstanceID = kmsg.StringPtr("ib")
	h.wantCode(h.step("client-ib", sync), kerr.FencedInstanceID)
	join := staticJoinReq("g", oldB, "ib")
	h.wantCode(h.step("client-ib", join), kerr.FencedInstanceID)
	if code := h.c.CheckCommit(h.now, "g", oldB, kmsg.StringPtr("ib"), 1); code != kerr.FencedInstanceID.Code {
		t.Fatalf("commit from fenced id: %v", kerr.ErrorForCode(code))
	}
	leave := leaveReq("g", kmsg.LeaveGroupRequestMember{MemberID: oldB, InstanceID: kmsg.StringPtr("ib")})
	lr := h.answer(h.step("client-ib", leave)).(*kmsg.LeaveGroupResponse)
	if lr.ErrorCode != 0 || lr.Members[0].ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("leave from fenced id: %+v", lr)
	}
	h.wantCode(h.step("client-ib2", heartbeatReq("g", newB, 1)), nil)
	h.allAnswered()
}

func TestStaticLeaderRestartIsNotToldItLeads(t *testing.T) {
	h := newHarness(t, Config{})
	ids, _ := h.staticGroup("g", "ia")
	ja := h.step("client-ia", staticJoinReq("g", "", "ia"))
	r := h.joinResp(ja)
	if r.MemberID == ids[0] || r.LeaderID != ids[0] || r.Generation != 1 {
		t.Fatalf("restarted leader: %+v", r)
	}
	// It still leads the next rebalance under its new id.
	jb := h.step("client-ib", staticJoinReq("g", "", "ib"))
	ja = h.step("client-ia", staticJoinReq("g", r.MemberID, "ia"))
	if h.joinResp(ja).LeaderID != r.MemberID || h.joinResp(jb).Generation != 2 {
		t.Fatalf("rebalance after restart: %+v", h.joinResp(ja))
	}
	h.allAnswered()
}

func TestStaticRestartThatChangesProtocolRebalances(t *testing.T) {
	h := newHarness(t, Config{})
	ids, gen := h.staticGroup("g", "ia", "ib")
	restart := staticJoinReq("g", "", "ib")
	restart.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin"}, {Name: "range"}}
	// a does not support roundrobin, so range stays selected: no rebalance.
	jb := h.step("client-ib", restart)
	if r := h.joinResp(jb); r.Generation != gen || h.state("g") != "Stable" {
		t.Fatalf("restart with same selected protocol: %+v", r)
	}
	newB := h.joinResp(jb).MemberID
	// The leader now prefers roundrobin too: the selection would change.
	ja := h.step("client-ia", func() *kmsg.JoinGroupRequest {
		r := staticJoinReq("g", ids[0], "ia")
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin"}, {Name: "range"}}
		return r
	}())
	restart = staticJoinReq("g", "", "ib")
	restart.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin"}, {Name: "range"}}
	// During PreparingRebalance b's restart replaces newB and completes the
	// join phase.
	jb = h.step("client-ib", restart)
	ra := h.joinResp(ja)
	if ra.Generation != gen+1 || *ra.Protocol != "roundrobin" || len(ra.Members) != 2 || ra.Members[1].MemberID != h.joinResp(jb).MemberID || ra.Members[1].MemberID == newB {
		t.Fatalf("rebalance: %+v", ra)
	}
	if ra.Members[1].InstanceID == nil || *ra.Members[1].InstanceID != "ib" {
		t.Fatalf("leader's view lacks instance ids: %+v", ra.Members[1])
	}
	h.allAnswered()
}

func TestStaticRestartFencesWaitingRequests(t *testing.T) {
	h := newHarness(t, Config{})
	ids, gen := h.staticGroup("g", "ia", "ib")
	// A new member: rebalance; b rejoins and waits; then b restarts.
	jc := h.step("cc", joinReq("g", h.newMemberID("g", "cc")))
	jbOld := h.step("client-ib", staticJoinReq("g", ids[1], "ib"))
	jbNew := h.step("client-ib", staticJoinReq("g", "", "ib"))
	h.wantCode(jbOld, kerr.FencedInstanceID)
	if h.joinResp(jbOld).MemberID != ids[1] || !h.waiting(jbNew) {
		t.Fatalf("old join answer %+v", h.joinResp(jbOld))
	}
	ja := h.step("client-ia", staticJoinReq("g", ids[0], "ia"))
	newB := h.joinResp(jbNew).MemberID
	if h.joinResp(ja).Generation != gen+1 || newB == ids[1] || h.joinResp(jc).Generation != gen+1 {
		t.Fatalf("after restart: %+v", h.joinResp(jbNew))
	}
	// In CompletingRebalance a waiting sync of the old id is fenced and the
	// group starts over, so the leader cannot assign to a stale id.
	sb := h.step("client-ib", syncReq("g", newB, gen+1, nil))
	jb := h.step("client-ib", staticJoinReq("g", "", "ib"))
	h.wantCode(sb, kerr.FencedInstanceID)
	if !h.waiting(jb) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("restart in CompletingRebalance: state %s", h.state("g"))
	}
	h.step("client-ia", staticJoinReq("g", ids[0], "ia"))
	h.step("cc", joinReq("g", h.joinResp(jc).MemberID))
	if h.joinResp(jb).Generation != gen+2 {
		t.Fatalf("third generation: %+v", h.joinResp(jb))
	}
	h.allAnswered()
}

func TestStaticMemberThatDoesNotRejoinStaysUntilExpiry(t *testing.T) {
	h := newHarness(t, Config{})
	ids, gen := h.staticGroup("g", "ia", "ib")
	a, b := ids[0], ids[1]
	start := h.now
	jc := h.step("cc", joinReq("g", h.newMemberID("g", "cc")))
	// b keeps its session by heartbeats but does not rejoin; a, the
	// leader, is silent too but static: neither is removed at the join
	// deadline, and with no one but c rejoined, c leads.
	for h.now.Before(start.Add(testRebalance)) {
		h.after(5 * time.Second)
		h.step("client-ia", heartbeatReq("g", a, gen))
		h.step("client-ib", heartbeatReq("g", b, gen))
	}
	r := h.joinResp(jc)
	if r.Generation != gen+1 || r.LeaderID != r.MemberID || len(r.Members) != 3 {
		t.Fatalf("join with static members absent: %+v", r)
	}
	if got := h.memberIDs("g"); !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Fatalf("static members removed at join deadline: %v", got)
	}
	h.allAnswered()
}

func TestOnlyAbsentStaticMembersKeepJoinPhaseOpen(t *testing.T) {
	h := newHarness(t, Config{})
	ids, gen := h.staticGroup("g", "ia", "ib")
	a := ids[0]
	// b leaves; a, static, does not rejoin but heartbeats: the join phase
	// has no one to complete with and restarts each rebalance timeout.
	h.step("client-ib", leaveReq("g", kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr("ib")}))
	for range 13 { // past two join deadlines
		h.after(5 * time.Second)
		h.wantCode(h.step("client-ia", heartbeatReq("g", a, gen)), kerr.RebalanceInProgress)
	}
	if h.state("g") != "PreparingRebalance" || !slices.Equal(h.memberIDs("g"), []string{a}) {
		t.Fatalf("state %s members %v", h.state("g"), h.memberIDs("g"))
	}
	ja := h.step("client-ia", staticJoinReq("g", a, "ia"))
	if r := h.joinResp(ja); r.Generation != gen+1 || r.LeaderID != a {
		t.Fatalf("late static rejoin: %+v", r)
	}
	h.allAnswered()
}

func TestStaticRestartThatChangesSelectedProtocol(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: time.Second})
	prefs := map[string][]string{"ia": {"range", "rr"}, "ib": {"range", "rr"}, "ic": {"rr", "range"}}
	join := func(instance, memberID string, names ...string) uint64 {
		r := staticJoinReq("g", memberID, instance)
		r.Protocols = nil
		for _, n := range names {
			r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: n})
		}
		return h.step("client-"+instance, r)
	}
	instances := []string{"ia", "ib", "ic"}
	var joins []uint64
	for _, in := range instances {
		joins = append(joins, join(in, "", prefs[in]...))
	}
	h.after(2 * time.Second) // the initial delay, extended once
	if p := *h.joinResp(joins[0]).Protocol; p != "range" {
		t.Fatalf("first selection %q, want range (two votes)", p)
	}
	ids := make([]string, 3)
	for i, j := range joins {
		ids[i] = h.joinResp(j).MemberID
	}
	sync := func(i int, gen int32, protocol string, assign map[string]string) uint64 {
		s := syncReq("g", ids[i], gen, assign)
		s.Protocol = kmsg.StringPtr(protocol)
		return h.step("client-"+instances[i], s)
	}
	sync(1, 1, "range", nil)
	sync(2, 1, "range", nil)
	sync(0, 1, "range", map[string]string{ids[0]: "a", ids[1]: "b", ids[2]: "c"})

	// b restarts preferring rr: rr now has two votes, so the group
	// rebalances instead of handing b its old assignment.
	jb := join("ib", "", "rr", "range")
	if !h.waiting(jb) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
	ja := join("ia", ids[0], prefs["ia"]...)
	join("ic", ids[2], prefs["ic"]...)
	if r := h.joinResp(ja); r.Generation != 2 || *r.Protocol != "rr" || *h.joinResp(jb).Protocol != "rr" {
		t.Fatalf("after rebalance: %+v", r)
	}
	h.allAnswered()
}
