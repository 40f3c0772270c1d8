package groupcoord

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932): members send ShareGroupHeartbeat and the
// coordinator assigns partitions with the simple assignor, which lets
// several members share a partition, each record going to one of them at a
// time under a lock (gateway/plog/sharestate). There is no revocation: a
// member takes its target assignment, at the target's epoch, on its next
// heartbeat; records it acquired where it is no longer assigned stay its
// own until acknowledged, released or their locks expire. A member that
// leaves or is removed is reported in Ready.ShareDepartures so that its
// records are released at once.

// Kafka's defaults for group.share.session.timeout.ms,
// group.share.heartbeat.interval.ms and group.share.max.size.
const (
	defaultShareSessionTimeout    = 45 * time.Second
	defaultShareHeartbeatInterval = 5 * time.Second
	defaultShareMaxGroupSize      = 200
)

// shareAssignorName is the only share assignor Kafka has
// (group.share.assignors), reported by ShareGroupDescribe.
const shareAssignorName = "simple"

// shareGroup is the KIP-932 part of a group; a group is of this type while
// group.sg is set. Members, subscribed topics and targets are kept as a
// consumer group keeps them, so subscriptions and topic refreshes work the
// same; static members, partition owners and the assignor choice stay
// unused: share members have no instance id, a partition may have several
// members and the assignor is always "simple".
type shareGroup struct {
	consumerGroup
}

// ShareDeparture is a share group member that left (epoch -1) or whose
// session expired. Its acquired records may lie in any share-partition of
// the group, not only in those it was last assigned: an assignment moves
// at once, the records it took stay its own.
type ShareDeparture struct {
	Group  string
	Member string
}

// makeShare makes the new group g a share group.
func (g *group) makeShare() {
	g.sg = &shareGroup{consumerGroup{
		byID:   make(map[string]*consumerMember),
		topics: make(map[string]TopicInfo),
		target: make(map[string]assignment),
	}}
}

// state spells the group's state as Kafka's ShareGroupDescribe and
// ListGroups do: a share group is Empty or Stable, members taking their
// assignment as soon as they heartbeat.
func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// ShareSettings are the session timeout, heartbeat interval and largest
// size of share groups, defaults filled in, for the gateway to report as
// broker and group configs. The configuration never changes after New, so
// any goroutine may ask.
func (c *Coordinator) ShareSettings() (session, heartbeat time.Duration, maxSize int) {
	return c.cfg.ShareSessionTimeout, c.cfg.ShareHeartbeatInterval, c.cfg.ShareMaxGroupSize
}

// ShareSubscription is what the caller must look up before stepping req:
// the topic names req and the group's members subscribe to.
func (c *Coordinator) ShareSubscription(req *kmsg.ShareGroupHeartbeatRequest) Subscription {
	s := Subscription{Names: slices.Clone(req.SubscribedTopicNames)}
	if g := c.groups[req.GroupID]; g != nil && g.sg != nil {
		for _, m := range g.sg.members {
			s.Names = append(s.Names, m.names...)
		}
	}
	slices.Sort(s.Names)
	s.Names = slices.Compact(s.Names)
	return s
}

// StepShare feeds one ShareGroupHeartbeat (v0–v1) at time now, with the
// topic metadata the caller looked up for ShareSubscription. It is
// answered in the next Ready under id, at once. clientID and clientHost are
// reported by ShareGroupDescribe. v1 (Kafka 4.1+) members name themselves
// (KIP-1082); a v0 member joining without a member id is given one, as
// Kafka 4.0's early-access coordinator did.
func (c *Coordinator) StepShare(now time.Time, id uint64, clientID, clientHost string, req *kmsg.ShareGroupHeartbeatRequest, topics Topics) {
	c.advance(now)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if code, msg := c.shareHeartbeat(now, clientID, clientHost, req, topics, resp); code != 0 {
		resp = req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
	}
	c.respond(id, resp)
	if g := c.groups[req.GroupID]; g != nil {
		c.schedule(g)
	}
	c.advance(now)
}

// validateShareHeartbeat is Kafka's check of the request's shape, before
// the group is looked at; a blank string counts as empty.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (int16, string) {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch {
	case blank(req.MemberID) && (req.Version >= 1 || req.MemberID != "" || req.MemberEpoch != epochJoin):
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case blank(req.GroupID):
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	case req.RackID != nil && blank(*req.RackID):
		return kerr.InvalidRequest.Code, "RackId can't be empty."
	case req.MemberEpoch == epochJoin && len(req.SubscribedTopicNames) == 0:
		return kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."
	case req.MemberEpoch < epochLeave:
		return kerr.InvalidRequest.Code, "MemberEpoch is invalid."
	}
	return 0, ""
}

// shareHeartbeat handles one heartbeat, filling resp on success.
func (c *Coordinator) shareHeartbeat(now time.Time, clientID, clientHost string, req *kmsg.ShareGroupHeartbeatRequest, topics Topics, resp *kmsg.ShareGroupHeartbeatResponse) (int16, string) {
	if code, msg := validateShareHeartbeat(req); code != 0 {
		return code, msg
	}
	g := c.groups[req.GroupID]
	switch {
	case g != nil && g.sg == nil:
		// Kafka converts no group to or from a share group, empty or not.
		return kerr.GroupIDNotFound.Code, "Group " + req.GroupID + " is not a share group."
	case g == nil && req.MemberEpoch == epochLeave:
		return kerr.GroupIDNotFound.Code, "Share group " + req.GroupID + " not found."
	case g == nil && req.MemberEpoch != epochJoin:
		// Kafka keeps groups across restarts and answers GROUP_ID_NOT_FOUND,
		// which a share consumer takes as fatal; here a group is lost when
		// its coordinator moves or restarts, so its members are told they
		// are unknown, which makes them rejoin.
		return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + req.GroupID + "."
	case g == nil && len(c.groups) >= c.cfg.MaxGroups:
		c.log.Warn().Str("group", req.GroupID).Int("max_groups", c.cfg.MaxGroups).Msg("refusing a share join that would make one group too many")
		return kerr.CoordinatorNotAvailable.Code, ""
	case g == nil:
		g = c.newGroup(now, req.GroupID)
		g.makeShare()
		c.log.Info().Str("group", req.GroupID).Msg("created share group")
	}
	if req.MemberEpoch == epochLeave {
		return g.shareLeave(now, req, resp)
	}
	m, code, msg := g.shareMemberFor(now, clientID, req)
	if code != 0 {
		return code, msg
	}
	sg := g.sg
	m.lastHeard = now
	m.clientID, m.clientHost = clientID, clientHost
	if req.RackID != nil {
		m.rackID = kmsg.StringPtr(*req.RackID)
	}
	changed := req.SubscribedTopicNames != nil && m.setNames(req.SubscribedTopicNames)
	if sg.refreshTopics(topics) || changed {
		g.bumpShareEpoch("member " + m.id + " joined or changed its subscription")
	}
	old := m.assigned
	if m.epoch != sg.assignmentEpoch {
		// Nothing to revoke: the member takes its target at once. Targets
		// are made anew at every epoch and never changed, so it is shared.
		m.previousEpoch, m.epoch = m.epoch, sg.assignmentEpoch
		m.assigned = sg.target[m.id]
	}
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.ShareHeartbeatInterval / time.Millisecond)
	// As Kafka: the assignment goes with a join, a full request (one
	// naming its topics) and any change.
	if req.MemberEpoch == epochJoin || req.SubscribedTopicNames != nil || !m.assigned.equal(old) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, tp := range m.assigned.sorted() {
			t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			t.TopicID, t.Partitions = tp.id, slices.Clone(tp.partitions)
			a.TopicPartitions = append(a.TopicPartitions, t)
		}
		resp.Assignment = &a
	}
	return 0, ""
}

// shareMemberFor finds the member a heartbeat is from, or adds the one
// joining, checking its epoch as Kafka does: ahead of the member's, or
// behind it and not its previous epoch (a lost response), is
// FENCED_MEMBER_EPOCH; epoch 0 from a known member is a rejoin and keeps
// it as it is (KAFKA-19233). A full group refuses newcomers before their
// member id is looked at.
func (g *group) shareMemberFor(now time.Time, clientID string, req *kmsg.ShareGroupHeartbeatRequest) (*consumerMember, int16, string) {
	sg := g.sg
	memberID := req.MemberID
	if memberID == "" {
		memberID = g.c.cfg.NewMemberID(clientID)
	}
	m := sg.byID[memberID]
	if m == nil && len(sg.members) >= g.c.cfg.ShareMaxGroupSize {
		g.c.log.Warn().Str("group", g.id).Int("max_size", g.c.cfg.ShareMaxGroupSize).Msg("refusing a new member of a full share group")
		return nil, kerr.GroupMaxSizeReached.Code, "The share group has reached its maximum capacity of " + itoa(int32(g.c.cfg.ShareMaxGroupSize)) + " members."
	}
	switch {
	case m == nil && req.MemberEpoch != epochJoin:
		return nil, kerr.UnknownMemberID.Code, "Member " + memberID + " is not a member of group " + g.id + "."
	case m == nil:
		m = &consumerMember{
			id:             memberID,
			sessionTimeout: g.c.cfg.ShareSessionTimeout,
			lastHeard:      now,
			assigned:       assignment{},
		}
		sg.members = append(sg.members, m)
		sg.byID[m.id] = m
		sg.target[m.id] = assignment{}
		g.c.log.Info().Str("group", g.id).Str("member", m.id).Msg("share group member joined")
	case req.MemberEpoch == epochJoin:
	case req.MemberEpoch > m.epoch:
		return nil, kerr.FencedMemberEpoch.Code, "The share group member has a greater member epoch (" + itoa(req.MemberEpoch) +
			") than the one known by the group coordinator (" + itoa(m.epoch) + "). The member must abandon all its partitions and rejoin."
	case req.MemberEpoch < m.epoch && req.MemberEpoch != m.previousEpoch:
		return nil, kerr.FencedMemberEpoch.Code, "The share group member has a smaller member epoch (" + itoa(req.MemberEpoch) +
			") than the one known by the group coordinator (" + itoa(m.epoch) + "), and it does not match the previous member epoch (" +
			itoa(m.previousEpoch) + "). The member must abandon all its partitions and rejoin."
	}
	return m, 0, ""
}

// setNames makes names, sorted and without repeats, m's subscribed topic
// names and reports whether they changed; consumer and share members
// subscribe by name alike.
func (m *consumerMember) setNames(names []string) bool {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	changed := !slices.Equal(names, m.names)
	m.names = names
	return changed
}

// shareLeave handles epoch -1.
func (g *group) shareLeave(now time.Time, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) (int16, string) {
	m := g.sg.byID[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + g.id + "."
	}
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = epochLeave
	g.removeShareMember(now, m, "member "+m.id+" left")
	return 0, ""
}

// removeShareMember takes m out, reports its departure and assigns the
// group anew.
func (g *group) removeShareMember(now time.Time, m *consumerMember, reason string) {
	sg := g.sg
	sg.members = slices.DeleteFunc(sg.members, func(o *consumerMember) bool { return o == m })
	delete(sg.byID, m.id)
	delete(sg.target, m.id)
	g.c.departures = append(g.c.departures, ShareDeparture{Group: g.id, Member: m.id})
	g.c.log.Info().Str("group", g.id).Str("member", m.id).Str("reason", reason).Msg("share group member removed")
	if len(sg.members) == 0 {
		g.emptySince = now
	}
	sg.refreshTopics(Topics{})
	g.bumpShareEpoch(reason)
}

// bumpShareEpoch moves the group to a new epoch and computes its target
// assignment.
func (g *group) bumpShareEpoch(reason string) {
	sg := g.sg
	sg.epoch++
	g.c.rebalances = append(g.c.rebalances, Rebalance{Group: g.id, Generation: sg.epoch})
	sg.target = sg.assign()
	sg.assignmentEpoch = sg.epoch
	g.c.log.Info().Str("group", g.id).Int32("epoch", sg.epoch).Int("members", len(sg.members)).
		Str("reason", reason).Msg("share group target assignment computed")
}
