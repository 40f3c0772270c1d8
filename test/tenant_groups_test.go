package test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// passthroughRaw is a raw connection signed in with PLAIN as ak/sk.
func passthroughRaw(t *testing.T, c *Cluster, ak, sk string) *rawConn {
	t.Helper()
	rc := dialRaw(t, c.Gateway.ListenerAddr(gateway.SASLPlaintext).String())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if resp := rc.roundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		t.Fatalf("SASL handshake: error %d", resp.ErrorCode)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, []byte("\x00"+ak+"\x00"+sk)
	if resp := rc.roundTrip(auth).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
		t.Fatalf("SASL authenticate as %s: error %d", ak, resp.ErrorCode)
	}
	return rc
}

// rawMember is a classic consumer group member driven by hand.
type rawMember struct {
	rc         *rawConn
	group      string
	memberID   string
	instanceID *string
	generation int32
}

// join joins group as a static member subscribing to topic and, as the
// leader, assigns itself partition 0 of it; it fails the test unless both
// steps succeed.
func joinRaw(t *testing.T, rc *rawConn, group, instance, topic string) *rawMember {
	t.Helper()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.InstanceID = 5, group, &instance
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 10000
	join.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, p)
	jr := rc.roundTrip(join).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 {
		t.Fatalf("join %q as %q: error %d, leader %q, member %q, %d members; want to lead a group of one", group, instance, jr.ErrorCode, jr.LeaderID, jr.MemberID, len(jr.Members))
	}
	m := &rawMember{rc: rc, group: group, memberID: jr.MemberID, instanceID: &instance, generation: jr.Generation}
	asg := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = topic, []int32{0}
	asg.Topics = append(asg.Topics, at)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.InstanceID, sync.Generation = 3, group, m.memberID, m.instanceID, m.generation
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = m.memberID, asg.AppendTo(nil)
	sync.GroupAssignment = append(sync.GroupAssignment, sa)
	if sr := rc.roundTrip(sync).(*kmsg.SyncGroupResponse); sr.ErrorCode != 0 || len(sr.MemberAssignment) == 0 {
		t.Fatalf("sync %q as %q: error %d, assignment %d bytes", group, instance, sr.ErrorCode, len(sr.MemberAssignment))
	}
	return m
}

// heartbeat is the member's heartbeat error code at its generation.
func (m *rawMember) heartbeat() int16 {
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = 3, m.group, m.memberID, m.instanceID, m.generation
	return m.rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode
}

// describeRaw is group as DescribeGroups shows it on rc.
func describeRaw(t *testing.T, rc *rawConn, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = 4, []string{group}
	resp := rc.roundTrip(req).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe %q: %+v", group, resp.Groups)
	}
	return resp.Groups[0]
}

// assignedTopics are the topics of a described member's assignment.
func assignedTopics(t *testing.T, m kmsg.DescribeGroupsResponseGroupMember) []string {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(m.MemberAssignment); err != nil {
		t.Fatalf("member %q's assignment: %v", m.MemberID, err)
	}
	var out []string
	for _, at := range a.Topics {
		out = append(out, at.Topic)
	}
	return out
}

// TestPassthroughTenantsGroupsIsolated: two passthrough tenants of one
// project on one gateway both use group "g" with the same static instance
// id on their own topics. Each sees only its own member; the second
// joining neither rebalances nor fences the first, whose generation and
// assignment stay; neither can evict the other's member, and ListGroups
// shows a tenant its own group alone. A tenant whose keys cannot read a
// topic gets DIS's answer on a fetch of it, even right after another
// tenant produced to it through this gateway.
func TestPassthroughTenantsGroupsIsolated(t *testing.T) {
	t.Parallel()
	c, _, _ := startPassthroughCluster(t)
	ctx := testContext(t, 45*time.Second)
	for _, tc := range []struct{ ak, sk, topic string }{{tenant1AK, tenant1SK, "a-topic"}, {tenant2AK, tenant2SK, "b-topic"}} {
		if _, err := kadm.NewClient(passthroughClient(t, c, tc.ak, tc.sk)).CreateTopic(ctx, 1, -1, nil, tc.topic); err != nil {
			t.Fatal(err)
		}
	}

	ra := passthroughRaw(t, c, tenant1AK, tenant1SK)
	rb := passthroughRaw(t, c, tenant2AK, tenant2SK)
	a := joinRaw(t, ra, "g", "inst", "a-topic")
	b := joinRaw(t, rb, "g", "inst", "b-topic")
	if b.memberID == a.memberID {
		t.Fatalf("both tenants got member id %q", a.memberID)
	}
	if code := a.heartbeat(); code != 0 {
		t.Fatalf("tenant A's heartbeat after tenant B joined \"g\" with A's instance id: %v, want no error", kerr.ErrorForCode(code))
	}
	for _, tc := range []struct {
		who   string
		rc    *rawConn
		m     *rawMember
		topic string
	}{{"A", ra, a, "a-topic"}, {"B", rb, b, "b-topic"}} {
		d := describeRaw(t, tc.rc, "g")
		if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != tc.m.memberID {
			t.Fatalf("tenant %s describes \"g\" as %s with %d members %+v; want Stable with its own member %q alone", tc.who, d.State, len(d.Members), d.Members, tc.m.memberID)
		}
		if got := assignedTopics(t, d.Members[0]); !slices.Equal(got, []string{tc.topic}) {
			t.Fatalf("tenant %s's member is assigned %q, want [%s]", tc.who, got, tc.topic)
		}
	}

	// B leaving with A's member id is B's own unknown member; A stays.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 3, "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID, lm.InstanceID = a.memberID, a.instanceID
	leave.Members = append(leave.Members, lm)
	lr := rb.roundTrip(leave).(*kmsg.LeaveGroupResponse)
	if lr.ErrorCode == 0 && (len(lr.Members) != 1 || lr.Members[0].ErrorCode == 0) {
		t.Fatalf("tenant B made tenant A's member leave: %+v", lr)
	}
	if code := a.heartbeat(); code != 0 {
		t.Fatalf("tenant A's heartbeat after tenant B's leave with A's member: %v, want no error", kerr.ErrorForCode(code))
	}
	if d := describeRaw(t, ra, "g"); len(d.Members) != 1 || d.Members[0].MemberID != a.memberID {
		t.Fatalf("tenant A's group after tenant B's leave: %+v", d.Members)
	}
	if code := b.heartbeat(); code != 0 {
		t.Fatalf("tenant B's heartbeat: %v, want no error", kerr.ErrorForCode(code))
	}

	// A's member id means nothing in B's group: B cannot commit as it.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.MemberID, oc.Generation = 7, "g", a.memberID, a.generation
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "b-topic"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Partition, op.Offset, op.LeaderEpoch = 0, 0, -1
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	ocr := rb.roundTrip(oc).(*kmsg.OffsetCommitResponse)
	if len(ocr.Topics) != 1 || len(ocr.Topics[0].Partitions) != 1 || ocr.Topics[0].Partitions[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("tenant B committing as tenant A's member: %+v, want UNKNOWN_MEMBER_ID", ocr.Topics)
	}

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	groups := rb.roundTrip(lg).(*kmsg.ListGroupsResponse)
	var listed []string
	for _, g := range groups.Groups {
		listed = append(listed, g.Group+"/"+g.GroupState)
	}
	if groups.ErrorCode != 0 || !slices.Equal(listed, []string{"g/Stable"}) {
		t.Fatalf("tenant B lists groups %q (error %d), want its own \"g\" alone", listed, groups.ErrorCode)
	}

	// A produces to its topic, so the gateway holds A's records; keys of
	// another project fetching that topic get DIS's answer, not them.
	t1 := passthroughClient(t, c, tenant1AK, tenant1SK, kgo.DefaultProduceTopic("a-topic"))
	if err := t1.ProduceSync(ctx, &kgo.Record{Value: []byte("a's record")}).FirstErr(); err != nil {
		t.Fatalf("tenant A produce: %v", err)
	}
	ro := passthroughRaw(t, c, otherAK, otherSK)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxBytes = 11, -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a-topic"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.LogStartOffset = 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr := ro.roundTrip(fetch).(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answered %+v", fr)
	}
	fpr := fr.Topics[0].Partitions[0]
	if fpr.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(fpr.RecordBatches) != 0 {
		t.Fatalf("another project's keys fetched tenant A's topic: error %v, %d bytes of records; want UNKNOWN_TOPIC_OR_PARTITION and none", kerr.ErrorForCode(fpr.ErrorCode), len(fpr.RecordBatches))
	}
}
