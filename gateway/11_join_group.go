package gateway

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup v0–v9.
//
// v1 added the rebalance timeout; v4 makes a new member retry with the
// member id it is given (MEMBER_ID_REQUIRED, KIP-394); v5 static membership
// (group.instance.id, KIP-345); v6 flexible; v7 returns the protocol type and
// name; v8 a leave reason; v9 skip_assignment (always false here). The
// answer waits for the rebalance: the group coordinator decides when.

func init() {
	regKey(11, 0, 9, api[*kmsg.JoinGroupRequest]{Staged: stepGroup[*kmsg.JoinGroupRequest], Deadline: joinGroupDeadline, Errors: joinGroupError})
}

// joinGroupDeadline is the member's rebalance timeout (the session timeout
// before v1, as Kafka uses it), the longest a join may wait for the
// group, plus the hold on a new group's first rebalance.
func joinGroupDeadline(gw *Gateway, req *kmsg.JoinGroupRequest) time.Duration {
	ms := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		ms = req.SessionTimeoutMillis
	}
	if ms <= 0 {
		return gw.cfg.RequestTimeout
	}
	return time.Duration(ms)*time.Millisecond + gw.cfg.InitialRebalanceDelay
}

func joinGroupError(req *kmsg.JoinGroupRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = code
	return resp
}
