package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// consumerProtocol makes franz-go members use KIP-848's consumer group
// protocol with the coordinator's uniform assignor.
var consumerProtocol = []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}

// fastConsumerGroups has members heartbeat often, so a rebalance takes
// a fraction of a second rather than Kafka's 5 s intervals.
func fastConsumerGroups(cfg *gateway.Config) {
	cfg.ConsumerGroupHeartbeatInterval = 100 * time.Millisecond
	cfg.ConsumerGroupSessionTimeout = 6 * time.Second
}

// describeConsumerGroup asks the gateway for one group's ConsumerGroupDescribe.
func describeConsumerGroup(t *testing.T, c *Cluster, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(testContext(t, 10*time.Second), newClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Groups[0]
}

// checkOffsetFetchMember asks OffsetFetch v9 as member m with its epoch, an
// old epoch and an unknown member id: only the first reads offsets, the
// others get STALE_MEMBER_EPOCH and UNKNOWN_MEMBER_ID for the group, as
// Kafka answers a fenced consumer-protocol member.
func checkOffsetFetchMember(t *testing.T, c *Cluster, group string, m kmsg.ConsumerGroupDescribeResponseGroupMember) {
	t.Helper()
	cl := newClient(t, c)
	for _, tc := range []struct {
		member string
		epoch  int32
		want   int16
	}{
		{m.MemberID, m.MemberEpoch, 0},
		{m.MemberID, m.MemberEpoch - 1, kerr.StaleMemberEpoch.Code},
		{"not-a-member", 1, kerr.UnknownMemberID.Code},
	} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = group, kmsg.StringPtr(tc.member), tc.epoch
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(testContext(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Groups[0].ErrorCode; got != tc.want {
			t.Errorf("OffsetFetch v9 as %s at epoch %d: %v, want %v", tc.member, tc.epoch, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}

// TestConsumerProtocolGroup runs franz-go members with group.protocol
// consumer: two share six partitions, a third joins, one leaves; every
// record is consumed once, and the group is a consumer group to
// ConsumerGroupDescribe and ListGroups.
func TestConsumerProtocolGroup(t *testing.T) {
	t.Parallel()
	c := startCluster(t, fastConsumerGroups)
	topic, group := "cp-topic", "cp-group"
	createTopic(t, c, topic, 6, nil)
	ledger := newLedger()
	produceValues(t, c, topic, 0, 600)
	var members []*groupMember
	for i := range 2 {
		members = append(members, startMember(t, c, group, topic, fmt.Sprintf("m%d", i), ledger, consumerProtocol...))
	}
	waitFor(t, "the first 600 records", func() bool { return ledger.count() >= 600 })
	waitFor(t, "two members owning three partitions each", func() bool {
		d := describeConsumerGroup(t, c, group)
		if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 2 {
			return false
		}
		for _, m := range d.Members {
			if len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 3 || m.MemberEpoch != d.Epoch {
				return false
			}
		}
		return true
	})

	checkOffsetFetchMember(t, c, group, describeConsumerGroup(t, c, group).Members[0])

	members = append(members, startMember(t, c, group, topic, "m2", ledger, consumerProtocol...))
	produceValues(t, c, topic, 600, 1200)
	waitFor(t, "records after a member joined", func() bool { return ledger.count() >= 1200 })
	waitFor(t, "three members owning two partitions each", func() bool {
		d := describeConsumerGroup(t, c, group)
		if d.State != "Stable" || len(d.Members) != 3 {
			return false
		}
		for _, m := range d.Members {
			if len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
				return false
			}
		}
		return true
	})

	members[0].stop()
	members = members[1:]
	produceValues(t, c, topic, 1200, 1800)
	waitFor(t, "records after a member left", func() bool { return ledger.count() >= 1800 })

	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"consumer"}
	lresp, err := lreq.RequestWith(testContext(t, 10*time.Second), newClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != group || lresp.Groups[0].GroupType != "consumer" {
		t.Fatalf("ListGroups of type consumer: %+v", lresp.Groups)
	}
	for _, m := range members {
		m.stop()
	}
	if len(ledger.dups) > 0 {
		t.Fatalf("%d records consumed twice, e.g. %v", len(ledger.dups), ledger.dups[:min(5, len(ledger.dups))])
	}
	if n := ledger.count(); n != 1800 {
		t.Fatalf("consumed %d distinct records, want 1800", n)
	}
	if d := describeConsumerGroup(t, c, group); d.State != "Empty" {
		t.Fatalf("group after every member left: %s", d.State)
	}
}

// TestConsumerProtocolMigration has a classic group commit offsets, then
// its consumers switch to the consumer protocol: they resume at the
// classic commits, and while they run a classic JoinGroup on the group id
// is refused.
func TestConsumerProtocolMigration(t *testing.T) {
	t.Parallel()
	c := startCluster(t, fastConsumerGroups)
	topic, group := "mig-topic", "mig-group"
	createTopic(t, c, topic, 4, nil)
	ledger := newLedger()
	produceValues(t, c, topic, 0, 400)
	classic := startMember(t, c, group, topic, "classic", ledger)
	waitFor(t, "the classic member's records", func() bool { return ledger.count() >= 400 })
	classic.stop()

	produceValues(t, c, topic, 400, 800)
	next := startMember(t, c, group, topic, "consumer", ledger, consumerProtocol...)
	waitFor(t, "the consumer-protocol member's records", func() bool { return ledger.count() >= 800 })

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	jresp, err := join.RequestWith(testContext(t, 10*time.Second), newClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join of a consumer group: %v", kerr.ErrorForCode(jresp.ErrorCode))
	}
	next.stop()
	if len(ledger.dups) > 0 {
		t.Fatalf("%d records consumed twice after the switch, e.g. %v", len(ledger.dups), ledger.dups[:min(5, len(ledger.dups))])
	}
}
