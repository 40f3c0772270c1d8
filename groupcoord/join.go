package groupcoord

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joining is one JoinGroup being handled, with its timeouts validated.
type joining struct {
	now        time.Time
	id         uint64
	clientID   string
	clientHost string
	req        *kmsg.JoinGroupRequest
	session    time.Duration
	rebalance  time.Duration
}

// parked is the handle under which the JoinGroup waits for the rebalance.
func (j *joining) parked() *parked { return &parked{id: j.id, version: j.req.Version} }

// failJoin answers the JoinGroup at once with an error.
func (c *Coordinator) failJoin(j *joining, memberID string, code int16) {
	c.respond(j.id, joinError(j.req.Version, memberID, code))
}

// millis converts a Kafka millisecond field.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// join handles JoinGroup v0–v9 as Kafka's classic coordinator does.
func (c *Coordinator) join(now time.Time, id uint64, clientID, clientHost string, req *kmsg.JoinGroupRequest) {
	j := &joining{now: now, id: id, clientID: clientID, clientHost: clientHost, req: req, session: millis(req.SessionTimeoutMillis)}
	// v0 has no rebalance timeout: the session timeout stands in for it.
	j.rebalance = j.session
	if req.Version >= 1 {
		j.rebalance = max(millis(req.RebalanceTimeoutMillis), 0)
	}
	j.rebalance = min(j.rebalance, c.cfg.MaxRebalanceTimeout)
	switch {
	case req.Group == "":
		c.failJoin(j, req.MemberID, kerr.InvalidGroupID.Code)
		return
	case j.session < c.cfg.MinSessionTimeout || j.session > c.cfg.MaxSessionTimeout:
		c.failJoin(j, req.MemberID, kerr.InvalidSessionTimeout.Code)
		return
	}
	g := c.groups[req.Group]
	if g != nil && g.sg != nil {
		// Kafka never converts a share group, empty or not.
		c.log.Info().Str("group", req.Group).Msg("refusing a classic join to a share group")
		c.failJoin(j, "", kerr.InconsistentGroupProtocol.Code)
		return
	}
	if g != nil && g.cg != nil {
		// A classic member cannot join a consumer-protocol group (this
		// coordinator does not run Kafka's mixed groups); an empty one
		// becomes classic, Kafka's offline migration.
		if !g.empty() {
			c.log.Info().Str("group", req.Group).Msg("refusing a classic join to a consumer-protocol group")
			c.failJoin(j, req.MemberID, kerr.InconsistentGroupProtocol.Code)
			return
		}
		g.cg = nil
		c.log.Info().Str("group", req.Group).Msg("empty consumer group converted to a classic group")
	}
	switch {
	case g == nil && req.MemberID != "":
		c.failJoin(j, req.MemberID, kerr.UnknownMemberID.Code)
		return
	case !g.supportsProtocols(req.ProtocolType, req.Protocols):
		c.failJoin(j, req.MemberID, kerr.InconsistentGroupProtocol.Code)
		return
	case g == nil && len(c.groups) >= c.cfg.MaxGroups:
		c.log.Warn().Str("group", req.Group).Int("max_groups", c.cfg.MaxGroups).Msg("refusing a join that would make one group too many")
		c.failJoin(j, req.MemberID, kerr.CoordinatorNotAvailable.Code)
		return
	case g == nil:
		g = c.newGroup(now, req.Group)
	}
	if req.MemberID == "" {
		g.joinNew(j)
	} else {
		g.joinKnown(j)
	}
	g.tryCompleteJoin(now)
}

// joinNew handles a JoinGroup without a member id: a static member whose
// instance id is known takes over its old member; a dynamic one from v4 is
// first given an id to come back with (KIP-394); anyone else joins.
//
// A new member of a full group is refused GROUP_MAX_SIZE_REACHED before it
// gets an id, as in Kafka; a static member taking over its instance does not
// grow the group.
func (g *group) joinNew(j *joining) {
	req := j.req
	if req.InstanceID != nil {
		if old := g.static[*req.InstanceID]; old != nil {
			g.replaceStatic(j, old, g.c.newMemberID(j.clientID, req.InstanceID))
			return
		}
	}
	if g.full() {
		g.refuseFull(j)
		return
	}
	memberID := g.c.newMemberID(j.clientID, req.InstanceID)
	switch {
	case req.InstanceID != nil:
		g.addMemberAndRebalance(j, memberID)
	case req.Version >= 4:
		g.addPending(j, memberID)
		g.c.failJoin(j, memberID, kerr.MemberIDRequired.Code)
	default:
		g.addMemberAndRebalance(j, memberID)
	}
}

// joinKnown handles a JoinGroup with a member id: a pending id becomes a
// member; a current member either gets the current generation back or
// triggers a rebalance, as Kafka decides by state.
func (g *group) joinKnown(j *joining) {
	req := j.req
	if req.InstanceID == nil && g.pendingIndex(req.MemberID) >= 0 {
		g.removePending(req.MemberID)
		if g.full() {
			g.refuseFull(j)
			return
		}
		g.addMemberAndRebalance(j, req.MemberID)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		g.c.failJoin(j, req.MemberID, code)
		return
	}
	m := g.byID[req.MemberID]
	switch g.state {
	case stateCompletingRebalance:
		// The member may have missed its JoinGroup answer: unchanged, it
		// gets it again.
		if m.matches(req.Protocols) {
			var view []kmsg.JoinGroupResponseMember
			if m.id == g.leader {
				view = g.memberMetadata(req.Version)
			}
			m.lastHeard = j.now
			g.c.respond(j.id, g.joinResponse(req.Version, m.id, g.leader, view))
			return
		}
		g.updateMemberAndRebalance(j, m, "member "+m.id+" changed its protocols")
	case stateStable:
		// The leader rejoins to have the group reassigned (say, for new
		// partitions), so it always rebalances; an unchanged follower just
		// gets the current generation.
		if m.id != g.leader && m.matches(req.Protocols) {
			m.lastHeard = j.now
			g.c.respond(j.id, g.joinResponse(req.Version, m.id, g.leader, nil))
			return
		}
		g.updateMemberAndRebalance(j, m, "member "+m.id+" rejoined a stable group")
	default:
		g.updateMember(m, req, j.session, j.rebalance)
		g.parkJoin(m, j.parked())
	}
}

// refuseFull answers a new member of a full group.
func (g *group) refuseFull(j *joining) {
	g.c.log.Warn().Str("group", g.id).Int("max_size", g.c.cfg.MaxGroupSize).Msg("refusing a new member of a full group")
	g.c.failJoin(j, j.req.MemberID, kerr.GroupMaxSizeReached.Code)
}

// addPending hands out a member id to come back with; past
// MaxPendingMembers the oldest outstanding id is forgotten, so ids handed to
// clients that never rejoin cannot pile up.
func (g *group) addPending(j *joining, memberID string) {
	if len(g.pending) >= g.c.cfg.MaxPendingMembers {
		g.c.log.Info().Str("group", g.id).Str("member", g.pending[0].id).Int("max_pending", g.c.cfg.MaxPendingMembers).
			Msg("forgetting the oldest pending member id")
		g.pending = slices.Delete(g.pending, 0, 1)
	}
	g.pending = append(g.pending, &pendingMember{id: memberID, expires: j.now.Add(j.session)})
}

// addMemberAndRebalance adds a new member whose JoinGroup waits for the
// rebalance it starts (or joins).
func (g *group) addMemberAndRebalance(j *joining, memberID string) {
	m := &member{
		id:               memberID,
		clientID:         j.clientID,
		clientHost:       j.clientHost,
		protocols:        cloneProtocols(j.req.Protocols),
		sessionTimeout:   j.session,
		rebalanceTimeout: j.rebalance,
		lastHeard:        j.now,
		join:             j.parked(),
	}
	if j.req.InstanceID != nil {
		instanceID := *j.req.InstanceID
		m.instanceID = &instanceID
	}
	g.addMember(m, j.req.ProtocolType)
	g.maybePrepareRebalance(j.now, "member "+memberID+" joined")
}

// updateMemberAndRebalance takes a current member's rejoin and rebalances.
func (g *group) updateMemberAndRebalance(j *joining, m *member, reason string) {
	g.updateMember(m, j.req, j.session, j.rebalance)
	g.parkJoin(m, j.parked())
	g.maybePrepareRebalance(j.now, reason)
}

// replaceStatic gives a restarted static member (known instance id, no member
// id) a new member id in place of its old one, fencing the old id: whatever
// the old id still waits for is answered FENCED_INSTANCE_ID, and so is
// anything it sends from now on. A stable group whose protocol stays the same
// does not rebalance: the member gets the current generation and, on
// SyncGroup, its old assignment. The answer names the leader from before the
// swap, so a restarted leader does not reassign a group that will not
// rebalance.
func (g *group) replaceStatic(j *joining, m *member, newID string) {
	req := j.req
	leader := g.leader
	if m.join != nil {
		g.c.respond(m.join.id, joinError(m.join.version, m.id, kerr.FencedInstanceID.Code))
		m.join = nil
	}
	if m.sync != nil {
		g.c.respond(m.sync.id, syncError(m.sync.version, kerr.FencedInstanceID.Code))
		m.sync = nil
	}
	g.c.log.Info().Str("group", g.id).Str("instance", *req.InstanceID).Str("old_member", m.id).Str("member", newID).
		Msg("static member rejoined with a new member id")
	delete(g.byID, m.id)
	if g.leader == m.id {
		g.leader = newID
	}
	m.id = newID
	g.byID[newID] = m
	m.clientID, m.clientHost = j.clientID, j.clientHost
	m.lastHeard = j.now
	g.updateMember(m, req, j.session, j.rebalance)
	switch g.state {
	case stateStable:
		if g.selectProtocol() == g.protocol {
			g.c.respond(j.id, g.joinResponse(req.Version, newID, leader, nil))
			return
		}
		g.parkJoin(m, j.parked())
		g.prepareRebalance(j.now, "static member "+newID+" changed the group's protocol")
	case stateCompletingRebalance:
		// The leader may be assigning to the old member id: start over.
		g.parkJoin(m, j.parked())
		g.prepareRebalance(j.now, "static member "+newID+" rejoined during CompletingRebalance")
	default:
		g.parkJoin(m, j.parked())
	}
}
