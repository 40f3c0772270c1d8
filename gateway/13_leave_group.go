package gateway

import "github.com/twmb/franz-go/pkg/kmsg"

// LeaveGroup v0–v5.
//
// v3 batches members by member id or group instance id (KIP-345), with an
// error per member; v4 flexible; v5 a reason, logged by nobody.

func init() {
	regKey(13, 0, 5, api[*kmsg.LeaveGroupRequest]{Staged: stepGroup[*kmsg.LeaveGroupRequest], Errors: leaveGroupError})
}

// leaveGroupError answers req with code, and for every member (v3+).
func leaveGroupError(req *kmsg.LeaveGroupRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.ErrorCode = code
	for _, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, code
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
