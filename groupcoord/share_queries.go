package groupcoord

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeShare answers one group of ShareGroupDescribe: state, epochs,
// the assignor and every member with its subscription and the assignment
// it was last given. A group this coordinator does not hold, or holds as
// another type, is GROUP_ID_NOT_FOUND, as in Kafka; AuthorizedOperations is
// left for the caller.
func (c *Coordinator) DescribeShare(group string) kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = group
	g, missing := c.describable(group, "share")
	if g == nil {
		d.ErrorCode, d.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr(missing)
		return d
	}
	sg := g.sg
	d.GroupState = sg.state()
	d.GroupEpoch = sg.epoch
	d.AssignmentEpoch = sg.assignmentEpoch
	d.Assignor = shareAssignorName
	names := sg.topicsByID()
	for _, m := range sg.members {
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.names)
		for _, t := range m.assigned.sorted() {
			// As Kafka, a topic gone since the member's last heartbeat
			// is left out.
			if n, ok := names[t.id]; ok {
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID, tp.Topic, tp.Partitions = t.id, n, slices.Clone(t.partitions)
				dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
			}
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// ShareAssignees lists, by member id, the members of a share group that
// were last told they are assigned the partition: who may be fetching from
// it. A member that has not heartbeat since a new epoch still counts for
// its old assignment, since it still fetches by it. Nil when the group is
// not a share group here or none is assigned it.
func (c *Coordinator) ShareAssignees(group string, topic [16]byte, partition int32) []string {
	g := c.groups[group]
	if g == nil || g.sg == nil {
		return nil
	}
	var out []string
	for _, m := range g.sg.members {
		if m.assigned.has(topicPartition{topic, partition}) {
			out = append(out, m.id)
		}
	}
	slices.Sort(out)
	return out
}
