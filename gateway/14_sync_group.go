package gateway

import "github.com/twmb/franz-go/pkg/kmsg"

// SyncGroup v0–v5.
//
// v3 added the group instance id; v4 flexible; v5 the protocol type and name,
// checked against the group's. Followers wait for the leader's assignments.

func init() {
	regKey(14, 0, 5, api[*kmsg.SyncGroupRequest]{Staged: stepGroup[*kmsg.SyncGroupRequest], Errors: syncGroupError})
}

func syncGroupError(req *kmsg.SyncGroupRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = code
	return resp
}
