package groupcoord

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CheckCommit validates an OffsetCommit for group: generation -1 with empty
// member id is a simple (non-member) commit — allowed only when the group has
// no active members (else UNKNOWN_MEMBER_ID, as Kafka answers); otherwise the
// member (or static instance) must exist (UNKNOWN_MEMBER_ID;
// FENCED_INSTANCE_ID for a stale static member id) and the generation must
// match (ILLEGAL_GENERATION); during CompletingRebalance commits are refused
// with REBALANCE_IN_PROGRESS, as Kafka does. A valid commit from a member
// also counts as a heartbeat (extends its session). Returns 0 or a Kafka
// error code.
//
// An accepted commit counts for the group's expiry (OffsetsRetention); a
// simple commit to a group not in memory makes an Empty one that expires
// with its offsets, unless MaxGroups are held (COORDINATOR_NOT_AVAILABLE).
// It answers no waiting request, but may set a deadline: call Ready after
// it for NextTick.
func (c *Coordinator) CheckCommit(now time.Time, group, memberID string, instanceID *string, generation int32) int16 {
	asMember := generation >= 0 || memberID != "" || instanceID != nil
	g := c.groups[group]
	switch {
	case g == nil && !asMember:
		if len(c.groups) >= c.cfg.MaxGroups {
			c.log.Warn().Str("group", group).Int("max_groups", c.cfg.MaxGroups).Msg("refusing a commit that would make one group too many")
			return kerr.CoordinatorNotAvailable.Code
		}
		g = c.newGroup(now, group)
		g.commitOnly = true
		g.commitAccepted(now)
		return 0
	case g == nil && generation >= 0:
		// A generation of a group this coordinator does not know: stale.
		return kerr.IllegalGeneration.Code
	case g == nil:
		return kerr.UnknownMemberID.Code
	case g.cg != nil:
		return g.checkConsumerCommit(now, asMember, memberID, instanceID, generation)
	case g.sg != nil:
		// A share group's progress is its share-partition state, never
		// committed offsets; Kafka refuses the commit so.
		return kerr.GroupIDNotFound.Code
	case !asMember && g.state != stateEmpty:
		return kerr.UnknownMemberID.Code
	case !asMember:
		g.commitAccepted(now)
		return 0
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	if g.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	g.byID[memberID].lastHeard = now
	g.commitAccepted(now)
	return 0
}

// commitAccepted notes a commit for the group's expiry.
func (g *group) commitAccepted(now time.Time) {
	g.committed = true
	g.lastCommit = now
	g.c.schedule(g)
}

// Describe answers one group of DescribeGroups (state names as Kafka spells
// them; members with client id, host, and — once the group is Stable, as in
// Kafka — metadata for the chosen protocol and assignment). ok=false when the
// coordinator has no such group in memory, or holds it only because of a
// simple commit (the gateway then answers from DIS: a group with committed
// offsets but no members is "Empty").
func (c *Coordinator) Describe(group string) (g kmsg.DescribeGroupsResponseGroup, ok bool) {
	gr := c.groups[group]
	if gr == nil || gr.commitOnly {
		return g, false
	}
	g = kmsg.NewDescribeGroupsResponseGroup()
	g.Group = gr.id
	if gr.cg != nil || gr.sg != nil {
		// Kafka's DescribeGroups before v6 describes a group of another
		// type as Dead; ConsumerGroupDescribe or ShareGroupDescribe is the
		// one for it.
		g.State = "Dead"
		return g, true
	}
	g.State = gr.state.String()
	g.ProtocolType = gr.protocolType
	stable := gr.state == stateStable
	if stable {
		g.Protocol = gr.protocol
	}
	for _, m := range gr.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadata(gr.protocol)
			dm.MemberAssignment = m.assignment
		}
		g.Members = append(g.Members, dm)
	}
	return g, true
}

// List returns the groups in memory (group id, protocol type, state, type:
// "classic", "consumer" or "share") for ListGroups, ordered by group id.
func (c *Coordinator) List() []kmsg.ListGroupsResponseGroup {
	out := make([]kmsg.ListGroupsResponseGroup, 0, len(c.groups))
	for _, g := range c.groups {
		if g.commitOnly {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = g.id
		lg.ProtocolType = g.protocolType
		lg.GroupState = g.state.String()
		lg.GroupType = "classic"
		switch {
		case g.cg != nil:
			lg.ProtocolType, lg.GroupState, lg.GroupType = "consumer", g.cg.state(), "consumer"
		case g.sg != nil:
			lg.ProtocolType, lg.GroupState, lg.GroupType = "share", g.sg.state(), "share"
		}
		out = append(out, lg)
	}
	slices.SortFunc(out, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// Delete removes an empty group from memory: 0, or GROUP_NOT_EMPTY when it
// has members (a group it does not know is fine: 0, the gateway deletes the
// DIS app). Member ids still pending in an empty group are forgotten with it,
// and the next Ready lists it in Removed.
func (c *Coordinator) Delete(group string) int16 {
	g := c.groups[group]
	if g == nil {
		return 0
	}
	busy := g.state != stateEmpty
	if g.cg != nil || g.sg != nil {
		busy = !g.empty()
	}
	if busy {
		return kerr.NonEmptyGroup.Code
	}
	c.forget(g, false)
	return 0
}

// forget takes g out of memory and tells Ready.
func (c *Coordinator) forget(g *group, expireOffsets bool) {
	c.unschedule(g)
	delete(c.groups, g.id)
	c.removed = append(c.removed, Removed{Group: g.id, ExpireOffsets: expireOffsets})
}

// CommitFence identifies the group's current generation (and incarnation:
// a group forgotten and made again gets a new one); 0 when the group is not
// in memory. Taken when a member's commit is accepted and compared when the
// commit is written, it keeps a commit that waited behind others from
// landing after the group moved to a newer generation.
func (c *Coordinator) CommitFence(group string) uint64 {
	if g := c.groups[group]; g != nil {
		return g.stamp
	}
	return 0
}

// Groups lists the ids of the groups in memory, commit-only ones included,
// ordered by id: what the gateway checks against its Membership when the
// live set changes (docs/design.md §6).
func (c *Coordinator) Groups() []string {
	out := make([]string, 0, len(c.groups))
	for id := range c.groups {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Len is how many groups are in memory: a caller holding a coordinator per
// tenant drops one that holds none.
func (c *Coordinator) Len() int { return len(c.groups) }

// Unload takes a group out of memory because another coordinator now owns
// it (docs/design.md §6). Its waiting JoinGroup and SyncGroup requests are
// answered NOT_COORDINATOR, so their clients look for the new coordinator
// and rejoin there; its offsets are not expired, they stay in DIS for the
// new owner. The next Ready lists it in Removed. A group not in memory is
// no-op.
func (c *Coordinator) Unload(group string) {
	g := c.groups[group]
	if g == nil {
		return
	}
	for _, m := range g.members {
		if m.join != nil {
			c.respond(m.join.id, joinError(m.join.version, m.id, kerr.NotCoordinator.Code))
			m.join = nil
		}
		if m.sync != nil {
			c.respond(m.sync.id, syncError(m.sync.version, kerr.NotCoordinator.Code))
			m.sync = nil
		}
	}
	c.forget(g, false)
}
