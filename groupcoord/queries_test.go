package groupcoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCheckCommit(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	a := ids[0]
	static, _ := h.staticGroup("s", "ia")
	h.step("client-ia", staticJoinReq("s", "", "ia")) // fences static[0]
	h.stableGroup("e", "ce")
	h.step("ce", leaveReq("e", kmsg.LeaveGroupRequestMember{MemberID: "ce-5"}))
	if h.state("e") != "Empty" {
		t.Fatalf("group e is %s", h.state("e"))
	}
	for _, tc := range []struct {
		name       string
		group      string
		member     string
		instance   *string
		generation int32
		want       *kerr.Error
	}{
		{"simple commit, unknown group", "fresh", "", nil, -1, nil},
		{"member of a group made by a simple commit", "fresh", "m", nil, 0, kerr.UnknownMemberID},
		{"simple commit, empty group", "e", "", nil, -1, nil},
		{"simple commit, group with members", "g", "", nil, -1, kerr.UnknownMemberID},
		{"generation of an unknown group", "none", "m", nil, 3, kerr.IllegalGeneration},
		{"member of an unknown group", "none", "m", nil, -1, kerr.UnknownMemberID},
		{"member of an empty group", "e", "ce-5", nil, 1, kerr.UnknownMemberID},
		{"unknown member", "g", "nobody", nil, 1, kerr.UnknownMemberID},
		{"wrong generation", "g", a, nil, 2, kerr.IllegalGeneration},
		{"member with generation -1", "g", a, nil, -1, kerr.IllegalGeneration},
		{"member", "g", a, nil, 1, nil},
		{"fenced static member", "s", static[0], kmsg.StringPtr("ia"), 1, kerr.FencedInstanceID},
	} {
		if got := h.c.CheckCommit(h.now, tc.group, tc.member, tc.instance, tc.generation); got != codeOf(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	// CompletingRebalance refuses; PreparingRebalance accepts.
	h.step("ca", joinReq("g", a))
	if got := h.c.CheckCommit(h.now, "g", a, nil, 1); got != 0 {
		t.Fatalf("commit in PreparingRebalance: %v", kerr.ErrorForCode(got))
	}
	h.step("cb", joinReq("g", ids[1]))
	if got := h.c.CheckCommit(h.now, "g", a, nil, 2); got != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit in CompletingRebalance: %v", kerr.ErrorForCode(got))
	}
	if rd := h.c.Ready(); len(rd.Responses) != 0 {
		t.Fatalf("CheckCommit produced responses: %+v", rd.Responses)
	}
	h.allAnswered()
}

func TestCommitCountsAsHeartbeat(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	// a only commits, b only heartbeats; both outlive several sessions.
	for range 5 {
		h.after(testSession - time.Second)
		if got := h.c.CheckCommit(h.now, "g", ids[0], nil, 1); got != 0 {
			t.Fatalf("commit: %v", kerr.ErrorForCode(got))
		}
		h.wantCode(h.step("cb", heartbeatReq("g", ids[1], 1)), nil)
	}
	if got := h.memberIDs("g"); !slices.Equal(got, ids) || h.state("g") != "Stable" {
		t.Fatalf("members %v state %s", got, h.state("g"))
	}
	// A commit refused does not extend the session.
	h.after(testSession - time.Second)
	h.step("cb", heartbeatReq("g", ids[1], 1))
	h.c.CheckCommit(h.now, "g", ids[0], nil, 7)
	h.after(time.Second)
	if got := h.memberIDs("g"); !slices.Equal(got, ids[1:]) {
		t.Fatalf("members %v, want only b", got)
	}
	h.allAnswered()
}

func TestDescribe(t *testing.T) {
	h := newHarness(t, Config{})
	if _, ok := h.c.Describe("g"); ok {
		t.Fatal("describe of an unknown group")
	}
	ids := h.stableGroup("g", "ca", "cb")
	d, ok := h.c.Describe("g")
	if !ok || d.Group != "g" || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || d.ErrorCode != 0 {
		t.Fatalf("stable: %+v", d)
	}
	for i, m := range d.Members {
		if m.MemberID != ids[i] || m.ClientID != []string{"ca", "cb"}[i] || m.ClientHost != m.ClientID+".host" ||
			string(m.ProtocolMetadata) != "meta" || string(m.MemberAssignment) != "as-"+ids[i] || m.InstanceID != nil {
			t.Fatalf("member %d: %+v", i, m)
		}
	}
	// During a rebalance, as in Kafka: no protocol, metadata or assignment.
	h.step("ca", joinReq("g", ids[0]))
	d, _ = h.c.Describe("g")
	if d.State != "PreparingRebalance" || d.Protocol != "" || len(d.Members) != 2 || d.Members[0].ProtocolMetadata != nil || d.Members[0].MemberAssignment != nil {
		t.Fatalf("preparing: %+v", d)
	}
	h.step("cb", joinReq("g", ids[1]))
	if got := h.state("g"); got != "CompletingRebalance" {
		t.Fatalf("state %s", got)
	}
	h.allAnswered()
}

func TestListAndDelete(t *testing.T) {
	h := newHarness(t, Config{})
	if len(h.c.List()) != 0 {
		t.Fatal("groups before any join")
	}
	h.stableGroup("b-stable", "c1")
	h.stableGroup("a-empty", "c2")
	h.step("c2", leaveReq("a-empty", kmsg.LeaveGroupRequestMember{MemberID: "c2-2"}))
	h.step("c3", joinReq("c-pending", "")) // MEMBER_ID_REQUIRED: group exists, Empty

	var got []string
	for _, g := range h.c.List() {
		got = append(got, g.Group+":"+g.GroupState+":"+g.ProtocolType+":"+g.GroupType)
	}
	want := []string{"a-empty:Empty:consumer:classic", "b-stable:Stable:consumer:classic", "c-pending:Empty::classic"}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}

	if code := h.c.Delete("b-stable"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a stable group: %v", kerr.ErrorForCode(code))
	}
	if code := h.c.Delete("unknown"); code != 0 {
		t.Fatalf("delete of an unknown group: %v", kerr.ErrorForCode(code))
	}
	for _, g := range []string{"a-empty", "c-pending"} {
		if code := h.c.Delete(g); code != 0 {
			t.Fatalf("delete of %s: %v", g, kerr.ErrorForCode(code))
		}
		if _, ok := h.c.Describe(g); ok {
			t.Fatalf("%s still described after delete", g)
		}
	}
	if l := h.c.List(); len(l) != 1 || l[0].Group != "b-stable" {
		t.Fatalf("List after delete: %+v", l)
	}
	// The deleted group's pending member id no longer holds a timer; the
	// stable group's sessions do.
	h.collect()
	if h.nextTick.IsZero() {
		t.Fatal("no tick wanted while a stable group has members")
	}
	// A deleted group can be joined afresh.
	ja := h.step("c9", joinReq("a-empty", h.newMemberID("a-empty", "c9")))
	if r := h.joinResp(ja); r.Generation != 1 {
		t.Fatalf("join after delete: %+v", r)
	}
	h.allAnswered()
}
