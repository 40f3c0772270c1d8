package groupcoord

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leave handles LeaveGroup v0–v5: v0–v2 name one member id; v3+ a batch of
// members by member id or group instance id, each with its own error. Every
// departure rebalances the rest (or empties the group).
func (c *Coordinator) leave(now time.Time, id uint64, req *kmsg.LeaveGroupRequest) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	// Answered last: the departures may answer waiting requests first.
	defer c.respond(id, resp)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return
	}
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	for _, l := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = l.MemberID, l.InstanceID
		rm.ErrorCode = g.leaveOne(now, l.MemberID, l.InstanceID)
		resp.Members = append(resp.Members, rm)
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
}

// leaveOne removes one leaving member and returns its error code. An admin
// may name a static member by instance id alone; a pending member id just
// stops being pending.
func (g *group) leaveOne(now time.Time, memberID string, instanceID *string) int16 {
	if memberID == "" {
		if instanceID == nil || g.static[*instanceID] == nil {
			return kerr.UnknownMemberID.Code
		}
		m := g.static[*instanceID]
		g.removeMemberAndUpdate(now, m, "static member "+m.id+" left")
		return 0
	}
	if g.pendingIndex(memberID) >= 0 {
		g.removePending(memberID)
		g.tryCompleteJoin(now)
		return 0
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	g.removeMemberAndUpdate(now, g.byID[memberID], "member "+memberID+" left")
	return 0
}
