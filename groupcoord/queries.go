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
// It runs no timers and answers no waiting request, so it needs no Ready
// after it; it only ever moves a deadline later.
func (c *Coordinator) CheckCommit(now time.Time, group, memberID string, instanceID *string, generation int32) int16 {
	asMember := generation >= 0 || memberID != "" || instanceID != nil
	g := c.groups[group]
	switch {
	case g == nil && !asMember:
		return 0
	case g == nil && generation >= 0:
		// A generation of a group this coordinator does not know: stale.
		return kerr.IllegalGeneration.Code
	case g == nil:
		return kerr.UnknownMemberID.Code
	case !asMember && g.state != stateEmpty:
		return kerr.UnknownMemberID.Code
	case !asMember:
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
	c.schedule(g)
	return 0
}

// Describe answers one group of DescribeGroups (state names as Kafka spells
// them; members with client id, host, and — once the group is Stable, as in
// Kafka — metadata for the chosen protocol and assignment). ok=false when the
// coordinator has no such group in memory (the gateway then answers from
// DIS: a group with committed offsets but no members is "Empty").
func (c *Coordinator) Describe(group string) (g kmsg.DescribeGroupsResponseGroup, ok bool) {
	gr := c.groups[group]
	if gr == nil {
		return g, false
	}
	g = kmsg.NewDescribeGroupsResponseGroup()
	g.Group = gr.id
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

// List returns the groups in memory (group id, protocol type, state) for
// ListGroups, ordered by group id.
func (c *Coordinator) List() []kmsg.ListGroupsResponseGroup {
	out := make([]kmsg.ListGroupsResponseGroup, 0, len(c.groups))
	for _, g := range c.groups {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = g.id
		lg.ProtocolType = g.protocolType
		lg.GroupState = g.state.String()
		lg.GroupType = "classic"
		out = append(out, lg)
	}
	slices.SortFunc(out, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// Delete removes an empty group from memory: 0, or GROUP_NOT_EMPTY when it
// has members (a group it does not know is fine: 0, the gateway deletes the
// DIS app). Member ids still pending in an empty group are forgotten with it.
func (c *Coordinator) Delete(group string) int16 {
	g := c.groups[group]
	if g == nil {
		return 0
	}
	if g.state != stateEmpty {
		return kerr.NonEmptyGroup.Code
	}
	c.unschedule(g)
	delete(c.groups, group)
	return 0
}
