package gateway

import "github.com/twmb/franz-go/pkg/kmsg"

// JoinGroup v0–v9.
//
// v1 added the rebalance timeout; v4 makes a new member retry with the
// member id it is given (MEMBER_ID_REQUIRED, KIP-394); v5 static membership
// (group.instance.id, KIP-345); v6 flexible; v7 returns the protocol type and
// name; v8 a leave reason; v9 skip_assignment (always false here). The
// answer waits for the rebalance: the group coordinator decides when.

func init() { regKey(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(gw *Gateway, r *request, req *kmsg.JoinGroupRequest) { gw.groups.step(r, req) }
