package groupcoord

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sync handles SyncGroup v0–v5: during CompletingRebalance every member's
// SyncGroup waits for the leader's, which carries the assignments; in Stable
// a member gets its current assignment back.
func (c *Coordinator) sync(now time.Time, id uint64, req *kmsg.SyncGroupRequest) {
	fail := func(code int16) { c.respond(id, syncError(req.Version, code)) }
	if req.Group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		fail(code)
		return
	}
	switch {
	case req.Generation != g.generation:
		fail(kerr.IllegalGeneration.Code)
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.byID[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case stateCompletingRebalance:
		g.parkSync(m, &parked{id: id, version: req.Version})
		g.synced(m)
		if m.id == g.leader {
			g.completeSync(now, req.GroupAssignment)
		}
	default:
		g.synced(m)
		m.lastHeard = now
		c.respond(id, g.syncResponse(req.Version, m.assignment))
	}
}

// completeSync takes the leader's assignments (members it left out get an
// empty one, ids not in the group are ignored), answers every waiting
// SyncGroup and makes the group Stable. Members that have not synced yet get
// their assignment when they do.
func (g *group) completeSync(t time.Time, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	for _, m := range g.members {
		m.assignment = nil
	}
	for _, a := range assignments {
		if m := g.byID[a.MemberID]; m != nil {
			m.assignment = bytes.Clone(a.MemberAssignment)
		}
	}
	g.state = stateStable
	for _, m := range g.members {
		if m.sync != nil {
			g.c.respond(m.sync.id, g.syncResponse(m.sync.version, m.assignment))
			m.sync = nil
			m.lastHeard = t
		}
	}
	g.c.log.Info().Str("group", g.id).Int32("generation", g.generation).Msg("group is stable")
}

// syncResponse is a successful SyncGroup answer.
func (g *group) syncResponse(version int16, assignment []byte) *kmsg.SyncGroupResponse {
	resp := &kmsg.SyncGroupResponse{Version: version}
	resp.Default()
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = assignment
	return resp
}
