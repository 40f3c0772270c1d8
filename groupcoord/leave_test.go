package groupcoord

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLeaveGroupBatch(t *testing.T) {
	h := newHarness(t, Config{})
	// a, b dynamic; s static; p pending.
	ids := h.stableGroup("g", "ca", "cb")
	a, b := ids[0], ids[1]
	js := h.step("client-is", staticJoinReq("g", "", "is"))
	h.step("ca", joinReq("g", a))
	h.step("cb", joinReq("g", b))
	s := h.joinResp(js).MemberID
	p := h.newMemberID("g", "cp")

	leave := leaveReq("g",
		kmsg.LeaveGroupRequestMember{MemberID: a},
		kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr("is")},
		kmsg.LeaveGroupRequestMember{MemberID: "nobody"},
		kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr("nobody")},
		kmsg.LeaveGroupRequestMember{MemberID: p},
		kmsg.LeaveGroupRequestMember{MemberID: b, InstanceID: kmsg.StringPtr("is")},
	)
	// s's instance is gone by the time b's entry is checked, so b leaves.
	resp := h.answer(h.step("admin", leave)).(*kmsg.LeaveGroupResponse)
	want := []int16{0, 0, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code, 0, 0}
	if resp.ErrorCode != 0 || len(resp.Members) != len(want) {
		t.Fatalf("leave: %+v", resp)
	}
	for i, m := range resp.Members {
		if m.ErrorCode != want[i] || m.MemberID != leave.Members[i].MemberID || m.InstanceID != leave.Members[i].InstanceID {
			t.Fatalf("member %d: %+v, want error %d", i, m, want[i])
		}
	}
	if h.state("g") != "Empty" || len(h.memberIDs("g")) != 0 {
		t.Fatalf("after everyone left: %s %v", h.state("g"), h.memberIDs("g"))
	}
	if d, _ := h.c.Describe("g"); d.ProtocolType != "consumer" {
		t.Fatalf("empty group lost its protocol type: %+v", d)
	}
	h.wantCode(h.step("cs", heartbeatReq("g", s, 2)), kerr.UnknownMemberID)
	h.allAnswered()
}

func TestLeaveRebalancesTheRest(t *testing.T) {
	h := newHarness(t, Config{})
	clients := []string{"ca", "cb", "cc", "cd"}
	ids := h.stableGroup("g", clients...)
	h.wantCode(h.step("ca", leaveReq("g", kmsg.LeaveGroupRequestMember{MemberID: ids[0]})), nil)
	if h.state("g") != "PreparingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
	var joins []uint64
	for i := 1; i < 4; i++ {
		joins = append(joins, h.step(clients[i], joinReq("g", ids[i])))
	}
	if r := h.joinResp(joins[0]); r.LeaderID != ids[1] || r.Generation != 2 || len(r.Members) != 3 {
		t.Fatalf("after the leader left: %+v", r)
	}
	h.syncAll("g", clients[1:], ids[1:], joins)

	// A member leaving while its join waits: the join is answered
	// UNKNOWN_MEMBER_ID, before the LeaveGroup, and the rest complete
	// without it.
	jb := h.step("cb", joinReq("g", ids[1]))
	jc := h.step("cc", joinReq("g", ids[2]))
	lb := h.step("cb", leaveReq("g", kmsg.LeaveGroupRequestMember{MemberID: ids[1]}))
	h.wantCode(lb, nil)
	h.wantCode(jb, kerr.UnknownMemberID)
	if slices.Index(h.order, jb) > slices.Index(h.order, lb) {
		t.Fatal("leave answered before the join it released")
	}
	if !h.waiting(jc) {
		t.Fatal("join phase ended before d rejoined")
	}
	jd := h.step("cd", joinReq("g", ids[3]))
	if rc := h.joinResp(jc); rc.Generation != 3 || rc.LeaderID != ids[2] || len(rc.Members) != 2 || h.joinResp(jd).Generation != 3 {
		t.Fatalf("after a waiting member left: %+v", rc)
	}
	h.allAnswered()
}

func TestLeaveWhileSyncWaits(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.newMemberID("g", "ca")
	b := h.newMemberID("g", "cb")
	h.step("ca", joinReq("g", a))
	h.step("cb", joinReq("g", b))
	sb := h.step("cb", syncReq("g", b, 1, nil))
	h.wantCode(h.step("cb", leaveReq("g", kmsg.LeaveGroupRequestMember{MemberID: b})), nil)
	h.wantCode(sb, kerr.RebalanceInProgress)
	if got := h.memberIDs("g"); !slices.Equal(got, []string{a}) {
		t.Fatalf("members %v", got)
	}
	h.allAnswered()
}

func TestLeaveGroupOldVersions(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	for _, v := range []int16{0, 1, 2} {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Version = v
		r.Group = "g"
		r.MemberID = "nobody"
		resp := h.answer(h.step("cx", r)).(*kmsg.LeaveGroupResponse)
		if resp.ErrorCode != kerr.UnknownMemberID.Code || resp.Members != nil {
			t.Fatalf("v%d unknown member: %+v", v, resp)
		}
	}
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = 1
	r.Group = "g"
	r.MemberID = ids[1]
	h.wantCode(h.step("cb", r), nil)
	if got := h.memberIDs("g"); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("members %v", got)
	}
	h.allAnswered()
}

func TestLeaveGroupUnknownGroup(t *testing.T) {
	h := newHarness(t, Config{})
	h.wantCode(h.step("cx", leaveReq("", kmsg.LeaveGroupRequestMember{MemberID: "m"})), kerr.InvalidGroupID)
	resp := h.answer(h.step("cx", leaveReq("none", kmsg.LeaveGroupRequestMember{MemberID: "m"}))).(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode != kerr.UnknownMemberID.Code || len(resp.Members) != 0 {
		t.Fatalf("leave of an unknown group: %+v", resp)
	}
}
