package gateway

import "github.com/twmb/franz-go/pkg/kmsg"

// LeaveGroup v0–v5.
//
// v3 batches members by member id or group instance id (KIP-345), with an
// error per member; v4 flexible; v5 a reason, logged by nobody.

func init() { regKey(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(gw *Gateway, r *request, req *kmsg.LeaveGroupRequest) { gw.groups.step(r, req) }
