package test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

func limitJoinReq(group, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID = group, member
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	return req
}

// joinCode sends a JoinGroup on rc and returns the answer's error code and
// member id.
func joinCode(rc *rawConn, group, member string) (int16, string) {
	resp := rc.roundTrip(limitJoinReq(group, member)).(*kmsg.JoinGroupResponse)
	return resp.ErrorCode, resp.MemberID
}

// A third member of a group capped at two gets GROUP_MAX_SIZE_REACHED, and
// member ids handed out with MEMBER_ID_REQUIRED stay bounded per group: a
// client sending only first joins pushes out the oldest ids, never grows
// the group's memory.
func TestGroupLimitsOverRawJoins(t *testing.T) {
	t.Parallel()
	const maxPending = 5
	c := startCluster(t, func(cfg *gateway.Config) {
		cfg.GroupMaxSize = 2
		cfg.GroupMaxPendingMembers = maxPending
	})

	var ids []string
	var conns []*rawConn
	for range 2 {
		rc := dialRaw(t, c.Addr)
		code, id := joinCode(rc, "full", "")
		if code != kerr.MemberIDRequired.Code || id == "" {
			t.Fatalf("first join: %v %q", kerr.ErrorForCode(code), id)
		}
		ids, conns = append(ids, id), append(conns, rc)
	}
	corrs := make([]int32, 2)
	for i, rc := range conns {
		corrs[i] = rc.send(limitJoinReq("full", ids[i]))
	}
	for i, rc := range conns {
		var resp kmsg.JoinGroupResponse
		resp.Version = 9
		rc.read(corrs[i], &resp)
		if resp.ErrorCode != 0 || resp.Generation != 1 {
			t.Fatalf("join of member %d: %v generation %d", i, kerr.ErrorForCode(resp.ErrorCode), resp.Generation)
		}
	}
	third := dialRaw(t, c.Addr)
	if code, _ := joinCode(third, "full", ""); code != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member: %v, want GROUP_MAX_SIZE_REACHED", kerr.ErrorForCode(code))
	}

	flood := dialRaw(t, c.Addr)
	var pending []string
	for range 50 {
		code, id := joinCode(flood, "flood", "")
		if code != kerr.MemberIDRequired.Code {
			t.Fatalf("first join: %v", kerr.ErrorForCode(code))
		}
		pending = append(pending, id)
	}
	// Every id but the newest maxPending was forgotten.
	for _, id := range pending[:len(pending)-maxPending] {
		if code, _ := joinCode(flood, "flood", id); code != kerr.UnknownMemberID.Code {
			t.Fatalf("rejoin with forgotten id %s: %v, want UNKNOWN_MEMBER_ID", id, kerr.ErrorForCode(code))
		}
	}
	// The newest are still pending: two become members, and the other
	// three, still known, are refused only because the group is full.
	newest := pending[len(pending)-maxPending:]
	var joinConns []*rawConn
	for _, id := range newest[:2] {
		rc := dialRaw(t, c.Addr)
		rc.send(limitJoinReq("flood", id))
		joinConns = append(joinConns, rc)
	}
	waitMembers(t, flood, "flood", 2)
	for _, id := range newest[2:] {
		if code, _ := joinCode(flood, "flood", id); code != kerr.GroupMaxSizeReached.Code {
			t.Fatalf("rejoin with pending id %s of a full group: %v, want GROUP_MAX_SIZE_REACHED", id, kerr.ErrorForCode(code))
		}
	}
	for i, rc := range joinConns {
		var resp kmsg.JoinGroupResponse
		resp.Version = 9
		rc.read(rc.corr, &resp)
		if resp.ErrorCode != 0 || resp.MemberID != newest[i] {
			t.Fatalf("rejoin with pending id %s: %v as %q", newest[i], kerr.ErrorForCode(resp.ErrorCode), resp.MemberID)
		}
	}
}

// waitMembers polls DescribeGroups until the group has n members.
func waitMembers(t *testing.T, rc *rawConn, group string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = 5
		req.Groups = []string{group}
		resp := rc.roundTrip(req).(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) == 1 && len(resp.Groups[0].Members) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s never had %d members: %+v", group, n, resp.Groups)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
