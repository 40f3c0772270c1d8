package groupcoord

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkConsumerCommit is CheckCommit for a consumer-protocol group, as
// Kafka validates it: a commit without a member is allowed only while the
// group has no members; a member's must carry its current member epoch in
// the generation field (STALE_MEMBER_EPOCH otherwise).
func (g *group) checkConsumerCommit(now time.Time, asMember bool, memberID string, instanceID *string, epoch int32) int16 {
	cg := g.cg
	if !asMember {
		if len(cg.members) > 0 {
			return kerr.UnknownMemberID.Code
		}
		g.commitAccepted(now)
		return 0
	}
	m := cg.byID[memberID]
	switch {
	case instanceID != nil && cg.static[*instanceID] != nil && cg.static[*instanceID].id != memberID:
		return kerr.FencedInstanceID.Code
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	g.commitAccepted(now)
	return 0
}

// CheckOffsetFetch validates the member id and epoch an OffsetFetch v9+
// carries, as Kafka does for a consumer-protocol group: no member id and a
// negative epoch (an admin client, or a classic client) reads freely; a
// member must exist (UNKNOWN_MEMBER_ID) and send its current member epoch
// (STALE_MEMBER_EPOCH), so a fenced member cannot resume from offsets its
// successor is committing. A share group has no committed offsets to
// fetch: GROUP_ID_NOT_FOUND, as Kafka answers. Classic groups and groups
// this coordinator does not hold are not checked. Returns 0 or a Kafka
// error code.
func (c *Coordinator) CheckOffsetFetch(group string, memberID *string, epoch int32) int16 {
	g := c.groups[group]
	if g != nil && g.sg != nil {
		return kerr.GroupIDNotFound.Code
	}
	if g == nil || g.cg == nil || (memberID == nil && epoch < 0) {
		return 0
	}
	var m *consumerMember
	if memberID != nil {
		m = g.cg.byID[*memberID]
	}
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// state spells the group's state as Kafka's ConsumerGroupDescribe and
// ListGroups do. Assignments are computed as soon as the group epoch moves,
// so a group here is never Assigning.
func (cg *consumerGroup) state() string {
	if len(cg.members) == 0 {
		return "Empty"
	}
	for _, m := range cg.members {
		if m.state != memberStable || m.epoch != cg.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// DescribeConsumer answers one group of ConsumerGroupDescribe: epochs,
// assignor and every member with its subscription, current and target
// assignment. A group this coordinator does not hold, or holds as a classic
// group, is GROUP_ID_NOT_FOUND, as in Kafka.
func (c *Coordinator) DescribeConsumer(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = group
	g, missing := c.describable(group, "consumer")
	if g == nil {
		d.ErrorCode, d.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr(missing)
		return d
	}
	cg := g.cg
	d.State = cg.state()
	d.Epoch = cg.epoch
	d.AssignmentEpoch = cg.assignmentEpoch
	d.AssignorName = cg.assignorName()
	names := cg.topicsByID()
	for _, m := range cg.members {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopics = slices.Clone(m.names)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		if m.regex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
		}
		dm.Assignment = describeAssignment(m.assigned, names)
		dm.TargetAssignment = describeAssignment(cg.target[m.id], names)
		dm.MemberType = 1
		d.Members = append(d.Members, dm)
	}
	return d
}

// describable is the group a ConsumerGroupDescribe or ShareGroupDescribe
// of group describes (kind "consumer" or "share"), or, when there is none
// of that kind, Kafka's message for its GROUP_ID_NOT_FOUND.
func (c *Coordinator) describable(group, kind string) (*group, string) {
	g := c.groups[group]
	switch {
	case g == nil || g.commitOnly:
		return nil, "Group " + group + " not found."
	case kind == "consumer" && g.cg == nil, kind == "share" && g.sg == nil:
		return nil, "Group " + group + " is not a " + kind + " group."
	}
	return g, ""
}

// topicsByID names the subscribed topics by id, for describing
// assignments.
func (cg *consumerGroup) topicsByID() map[[16]byte]string {
	names := make(map[[16]byte]string, len(cg.topics))
	for n, info := range cg.topics {
		names[info.ID] = n
	}
	return names
}

// describeAssignment spells an assignment for ConsumerGroupDescribe.
func describeAssignment(a assignment, names map[[16]byte]string) kmsg.Assignment {
	out := kmsg.Assignment{}
	for _, t := range a.sorted() {
		tp := kmsg.AssignmentTopicPartition{TopicID: t.id, Topic: names[t.id], Partitions: slices.Clone(t.partitions)}
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
