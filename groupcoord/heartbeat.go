package groupcoord

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeat handles Heartbeat v0–v4: it keeps a member's session alive and
// is how members learn of a rebalance (REBALANCE_IN_PROGRESS) or that they
// fell out of the group.
func (c *Coordinator) heartbeat(now time.Time, id uint64, req *kmsg.HeartbeatRequest) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	c.respond(id, resp)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return
	}
	if resp.ErrorCode = g.validateMember(req.MemberID, req.InstanceID); resp.ErrorCode != 0 {
		return
	}
	if req.Generation != g.generation {
		resp.ErrorCode = kerr.IllegalGeneration.Code
		return
	}
	g.byID[req.MemberID].lastHeard = now
	if g.state == statePreparingRebalance {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	}
}
