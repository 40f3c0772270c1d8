package gateway

import "github.com/twmb/franz-go/pkg/kmsg"

// Heartbeat v0–v4.
//
// v3 added the group instance id; v4 flexible. REBALANCE_IN_PROGRESS tells a
// member to rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and
// FENCED_INSTANCE_ID that it is no longer part of the group.

func init() {
	regKey(12, 0, 4, api[*kmsg.HeartbeatRequest]{Staged: stepGroup[*kmsg.HeartbeatRequest], Errors: heartbeatError})
}

func heartbeatError(req *kmsg.HeartbeatRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = code
	return resp
}
