package groupcoord

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinGroupErrors(t *testing.T) {
	h := newHarness(t, Config{MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: time.Minute})
	ids := h.stableGroup("g", "ca", "cb")
	type edit func(r *kmsg.JoinGroupRequest)
	for _, tc := range []struct {
		name string
		edit edit
		want *kerr.Error
	}{
		{"empty group id", func(r *kmsg.JoinGroupRequest) { r.Group = "" }, kerr.InvalidGroupID},
		{"session below min", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 5999 }, kerr.InvalidSessionTimeout},
		{"session above max", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 60001 }, kerr.InvalidSessionTimeout},
		{"negative session", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = -1 }, kerr.InvalidSessionTimeout},
		{"other protocol type", func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "connect" }, kerr.InconsistentGroupProtocol},
		{"no common protocol", func(r *kmsg.JoinGroupRequest) {
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin"}}
		}, kerr.InconsistentGroupProtocol},
		{"unknown member", func(r *kmsg.JoinGroupRequest) { r.MemberID = "nobody" }, kerr.UnknownMemberID},
		{"unknown member of unknown group", func(r *kmsg.JoinGroupRequest) { r.Group, r.MemberID = "other", "nobody" }, kerr.UnknownMemberID},
		{"first member without protocol type", func(r *kmsg.JoinGroupRequest) { r.Group, r.ProtocolType = "other", "" }, kerr.InconsistentGroupProtocol},
		{"first member without protocols", func(r *kmsg.JoinGroupRequest) { r.Group, r.Protocols = "other", nil }, kerr.InconsistentGroupProtocol},
		{"pending id with instance id", func(r *kmsg.JoinGroupRequest) {
			r.MemberID = h.newMemberID("g", "cp")
			r.InstanceID = kmsg.StringPtr("ip")
		}, kerr.UnknownMemberID},
	} {
		r := joinReq("g", "")
		tc.edit(r)
		id := h.step("cx", r)
		resp := h.joinResp(id)
		if resp.ErrorCode != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), tc.want)
		}
		if resp.Generation != -1 || resp.LeaderID != "" || resp.Protocol != nil || resp.MemberID != r.MemberID {
			t.Errorf("%s: error answer carries group fields: %+v", tc.name, resp)
		}
	}
	if _, ok := h.c.Describe("other"); ok {
		t.Fatal("a refused join created a group")
	}
	if h.state("g") != "Stable" || len(h.memberIDs("g")) != 2 {
		t.Fatalf("refused joins disturbed the group: %s %v", h.state("g"), ids)
	}
	h.allAnswered()
}

func TestStepRefusesOtherRequests(t *testing.T) {
	c := New(Config{})
	for _, req := range []kmsg.Request{
		kmsg.NewPtrOffsetCommitRequest(),
		nil,
		(*kmsg.JoinGroupRequest)(nil),
		(*kmsg.SyncGroupRequest)(nil),
		(*kmsg.HeartbeatRequest)(nil),
		(*kmsg.LeaveGroupRequest)(nil),
	} {
		if err := c.Step(t0, 1, "c", "h", req); err == nil {
			t.Errorf("Step(%T) accepted", req)
		}
	}
	if rd := c.Ready(); len(rd.Responses) != 0 || !rd.NextTick.IsZero() {
		t.Fatalf("refused requests left work: %+v", rd)
	}
}

func TestSyncGroupErrors(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	b := ids[1]
	for _, tc := range []struct {
		name string
		req  *kmsg.SyncGroupRequest
		want *kerr.Error
	}{
		{"empty group id", syncReq("", b, 1, nil), kerr.InvalidGroupID},
		{"unknown group", syncReq("other", b, 1, nil), kerr.UnknownMemberID},
		{"unknown member", syncReq("g", "nobody", 1, nil), kerr.UnknownMemberID},
		{"old generation", syncReq("g", b, 0, nil), kerr.IllegalGeneration},
		{"other protocol type", func() *kmsg.SyncGroupRequest {
			r := syncReq("g", b, 1, nil)
			r.ProtocolType = kmsg.StringPtr("connect")
			return r
		}(), kerr.InconsistentGroupProtocol},
		{"other protocol", func() *kmsg.SyncGroupRequest {
			r := syncReq("g", b, 1, nil)
			r.Protocol = kmsg.StringPtr("roundrobin")
			return r
		}(), kerr.InconsistentGroupProtocol},
		{"v4 without protocol fields", func() *kmsg.SyncGroupRequest {
			r := syncReq("g", b, 1, nil)
			r.Version, r.ProtocolType, r.Protocol = 4, nil, nil
			return r
		}(), nil},
	} {
		id := h.step("cb", tc.req)
		resp := h.syncResp(id)
		if resp.ErrorCode != codeOf(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), tc.want)
		}
		if tc.want != nil && (resp.Protocol != nil || resp.ProtocolType != nil || resp.MemberAssignment != nil) {
			t.Errorf("%s: error answer carries group fields: %+v", tc.name, resp)
		}
	}
	// A second waiting sync from the same member replaces the first, which
	// is answered so that nothing waits forever.
	h.step("ca", joinReq("g", ids[0]))
	h.step("cb", joinReq("g", b))
	s1 := h.step("cb", syncReq("g", b, 2, nil))
	s2 := h.step("cb", syncReq("g", b, 2, nil))
	h.wantCode(s1, kerr.RebalanceInProgress)
	h.step("ca", syncReq("g", ids[0], 2, map[string]string{b: "pb"}))
	if got := string(h.syncResp(s2).MemberAssignment); got != "pb" {
		t.Fatalf("replacing sync got %q", got)
	}
	h.allAnswered()
}

func TestHeartbeatErrors(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.newMemberID("g", "ca")
	h.step("ca", joinReq("g", a))
	// CompletingRebalance: heartbeats are fine while the member syncs.
	h.wantCode(h.step("ca", heartbeatReq("g", a, 1)), nil)
	for _, tc := range []struct {
		name string
		req  *kmsg.HeartbeatRequest
		want *kerr.Error
	}{
		{"empty group id", heartbeatReq("", a, 1), kerr.InvalidGroupID},
		{"unknown group", heartbeatReq("other", a, 1), kerr.UnknownMemberID},
		{"unknown member", heartbeatReq("g", "nobody", 1), kerr.UnknownMemberID},
		{"pending member", heartbeatReq("g", h.newMemberID("g", "cp"), 1), kerr.UnknownMemberID},
		{"wrong generation", heartbeatReq("g", a, 2), kerr.IllegalGeneration},
	} {
		h.wantCode(h.step("cx", tc.req), tc.want)
	}
	h.allAnswered()
}

func TestReplacedJoinIsAnswered(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	j1 := h.step("ca", joinReq("g", ids[0]))
	j2 := h.step("ca", joinReq("g", ids[0]))
	h.wantCode(j1, kerr.RebalanceInProgress)
	h.step("cb", joinReq("g", ids[1]))
	if r := h.joinResp(j2); r.Generation != 2 || len(r.Members) != 2 {
		t.Fatalf("replacing join: %+v", r)
	}
	h.allAnswered()
}

func TestProtocolSelection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members [][]string
		want    string
	}{
		{"only common protocol", [][]string{{"roundrobin", "range"}, {"range", "roundrobin"}, {"range"}}, "range"},
		{"most votes", [][]string{{"x", "y"}, {"y", "x"}, {"y", "x"}}, "y"},
		{"tie goes to first member's preference", [][]string{{"x", "y"}, {"y", "x"}}, "x"},
		{"second choice common", [][]string{{"sticky", "range"}, {"coop", "range"}}, "range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{InitialRebalanceDelay: time.Second})
			var joins []uint64
			for i, names := range tc.members {
				r := joinReq("g", "")
				r.Version = 3
				r.Protocols = nil
				for _, n := range names {
					r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: n, Metadata: []byte(n + string(rune('0'+i)))})
				}
				joins = append(joins, h.step("c", r))
			}
			h.after(time.Minute)
			leader := h.joinResp(joins[0])
			if *leader.Protocol != tc.want {
				t.Fatalf("selected %q, want %q", *leader.Protocol, tc.want)
			}
			for i, m := range leader.Members {
				if want := tc.want + string(rune('0'+i)); string(m.ProtocolMetadata) != want {
					t.Fatalf("member %d metadata %q, want %q", i, m.ProtocolMetadata, want)
				}
			}
		})
	}
}

func TestJoinGroupVersionFields(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: time.Second})
	lead := joinReq("g", "")
	lead.Version = 3
	ja := h.step("ca", lead)
	jb := h.step("client-ib", staticJoinReq("g", "", "ib")) // v9
	h.after(2 * time.Second)
	ra := h.joinResp(ja)
	if len(ra.Members) != 2 || ra.Members[1].InstanceID != nil {
		t.Fatalf("v3 leader view carries instance ids: %+v", ra.Members)
	}
	// The same group seen by a v9 leader: instance ids, protocol type.
	lead = joinReq("g", ra.MemberID)
	ja = h.step("ca", lead)
	h.step("client-ib", staticJoinReq("g", h.joinResp(jb).MemberID, "ib"))
	ra = h.joinResp(ja)
	if in := ra.Members[1].InstanceID; in == nil || *in != "ib" || *ra.ProtocolType != "consumer" || ra.SkipAssignment {
		t.Fatalf("v9 leader view: %+v", ra)
	}
	h.allAnswered()
}

func TestV0RebalanceTimeoutIsSessionTimeout(t *testing.T) {
	h := newHarness(t, Config{})
	v0 := func(member string) *kmsg.JoinGroupRequest {
		r := joinReq("g", member)
		r.Version = 0
		r.RebalanceTimeoutMillis = 0 // not on the wire in v0
		r.SessionTimeoutMillis = 7000
		return r
	}
	ja := h.step("ca", v0(""))
	a := h.joinResp(ja).MemberID
	h.syncAll("g", []string{"ca"}, []string{a}, []uint64{ja})
	h.after(6 * time.Second)
	h.step("ca", heartbeatReq("g", a, 1))
	start := h.now
	jb := h.step("cb", v0(""))
	// a heartbeats but does not rejoin: the join phase lasts 7s, not 0.
	h.after(5 * time.Second)
	h.wantCode(h.step("ca", heartbeatReq("g", a, 1)), kerr.RebalanceInProgress)
	if !h.waiting(jb) || !h.nextTick.Equal(start.Add(7*time.Second)) {
		t.Fatalf("NextTick %v, want 7s after b joined", h.nextTick.Sub(start))
	}
	h.after(2 * time.Second)
	if r := h.joinResp(jb); r.Generation != 2 || r.LeaderID != r.MemberID || len(r.Members) != 1 {
		t.Fatalf("after the join phase: %+v", r)
	}
	h.allAnswered()
}

func TestZeroRebalanceTimeoutDoesNotSpin(t *testing.T) {
	h := newHarness(t, Config{})
	h.staticGroup("g", "ia", "id")
	// a restarts asking for a zero rebalance timeout (no rebalance: the
	// group is stable), then d leaves: the join phase ends at once with
	// only a, absent and static, left to wait for.
	restart := staticJoinReq("g", "", "ia")
	restart.RebalanceTimeoutMillis = 0
	h.wantCode(h.step("client-ia", restart), nil)
	h.step("client-id", leaveReq("g", kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr("id")}))
	if h.state("g") != "PreparingRebalance" || !h.nextTick.Equal(h.now.Add(minRejoinWait)) {
		t.Fatalf("state %s NextTick %v", h.state("g"), h.nextTick.Sub(h.now))
	}
	// One late tick walks the restarts until a's session expires, and the
	// empty group, with no offsets, is forgotten.
	h.after(time.Hour)
	if h.state("g") != "" || !h.nextTick.IsZero() {
		t.Fatalf("state %s NextTick %v", h.state("g"), h.nextTick)
	}
	h.allAnswered()
}
