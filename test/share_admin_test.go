package test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
)

// The share group admin APIs (DescribeShareGroupOffsets 90,
// AlterShareGroupOffsets 91, DeleteShareGroupOffsets 92) at the kmsg level:
// the answers that do not depend on share-partition state, and then,
// once ShareGroupHeartbeat and the partition log's share state are in,
// a non-empty group and offsets moved across two gateways.

// describeShareReq asks for group's start offsets on partitions of topic
// (every share-partition of the group with partitions nil and topic "").
func describeShareReq(group, topic string, partitions ...int32) *kmsg.DescribeShareGroupOffsetsRequest {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	if topic != "" {
		g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: partitions}}
	}
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{g}
	return req
}

// alterShareReq moves group's start offset on partition p of topic.
func alterShareReq(group, topic string, p int32, offset int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: p, StartOffset: offset}}}}
	return req
}

// deleteShareReq forgets group's share-partitions of topic.
func deleteShareReq(group, topic string) *kmsg.DeleteShareGroupOffsetsRequest {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
	return req
}

// shareCodes are the group's (describe) or top-level (alter, delete) code
// and the first partition's or topic's of a share admin answer.
func shareCodes(t *testing.T, resp kmsg.Response) (top, first int16) {
	t.Helper()
	switch r := resp.(type) {
	case *kmsg.DescribeShareGroupOffsetsResponse:
		g := r.Groups[0]
		if len(g.Topics) > 0 && len(g.Topics[0].Partitions) > 0 {
			first = g.Topics[0].Partitions[0].ErrorCode
		}
		return g.ErrorCode, first
	case *kmsg.AlterShareGroupOffsetsResponse:
		if len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 {
			first = r.Topics[0].Partitions[0].ErrorCode
		}
		return r.ErrorCode, first
	case *kmsg.DeleteShareGroupOffsetsResponse:
		if len(r.Topics) > 0 {
			first = r.Topics[0].ErrorCode
		}
		return r.ErrorCode, first
	}
	t.Fatalf("not a share admin response: %T", resp)
	return 0, 0
}

// wantShareCodes sends each request on rc and checks the codes it gets.
func wantShareCodes(t *testing.T, rc *rawConn, top, first int16, reqs ...kmsg.Request) {
	t.Helper()
	for _, req := range reqs {
		gotTop, gotFirst := shareCodes(t, rc.roundTrip(req))
		if gotTop != top || gotFirst != first {
			t.Errorf("%s: codes %v, %v; want %v, %v", kmsg.NameForKey(req.Key()),
				kerr.ErrorForCode(gotTop), kerr.ErrorForCode(gotFirst), kerr.ErrorForCode(top), kerr.ErrorForCode(first))
		}
	}
}

// TestShareAdminNotCoordinator: a gateway that does not coordinate the
// group answers NOT_COORDINATOR to all three.
func TestShareAdminNotCoordinator(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 2)
	createTopic(t, c, "share-nc", 1, nil)
	group := nameOwnedBy(c, "share-nc-group", 1, cluster.GroupKey)
	rc := dialRaw(t, c.Addrs[0])
	nc := kerr.NotCoordinator.Code
	wantShareCodes(t, rc, nc, 0, describeShareReq(group, ""))
	wantShareCodes(t, rc, nc, nc, alterShareReq(group, "share-nc", 0, 0), deleteShareReq(group, "share-nc"))
}

// TestShareAdminWrongGroupType: a classic group (simple commits) and a
// consumer group are GROUP_ID_NOT_FOUND to the share admin APIs, as Kafka
// answers.
func TestShareAdminWrongGroupType(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "ver", 1, nil)
	rc := dialRaw(t, c.Addr)
	commitOffset(t, rc, "share-classic", 1)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "share-consumer", "share-consumer-member", 10000
	hb.SubscribedTopicNames, hb.Topics = []string{"ver"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if code := rc.roundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("ConsumerGroupHeartbeat: %v", kerr.ErrorForCode(code))
	}
	nf := kerr.GroupIDNotFound.Code
	for _, group := range []string{"share-classic", "share-consumer"} {
		wantShareCodes(t, rc, nf, 0, describeShareReq(group, "ver", 0))
		wantShareCodes(t, rc, nf, nf, alterShareReq(group, "ver", 0, 0), deleteShareReq(group, "ver"))
	}
	// A classic group after a restart is only its DIS app: still not a
	// share group.
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	rc = dialRaw(t, c.Addr)
	wantShareCodes(t, rc, nf, nf, alterShareReq("share-classic", "ver", 0, 0))
}

// TestShareAdminUnknownTopic: a topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION per partition (describe, alter) or per topic
// (delete), as is a partition it does not have.
func TestShareAdminUnknownTopic(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "share-known", 1, nil)
	rc := dialRaw(t, c.Addr)
	ut := kerr.UnknownTopicOrPartition.Code
	wantShareCodes(t, rc, 0, ut,
		describeShareReq("share-ut", "share-missing", 0), alterShareReq("share-ut", "share-missing", 0, 0), deleteShareReq("share-ut", "share-missing"),
		describeShareReq("share-ut", "share-known", 5), alterShareReq("share-ut", "share-known", 5, 0))
	wantShareCodes(t, rc, 0, kerr.InvalidRequest.Code, alterShareReq("share-ut", "share-known", 0, -1))
	// A group nobody ever used has no share-partitions.
	resp := rc.roundTrip(describeShareReq("share-ut", "")).(*kmsg.DescribeShareGroupOffsetsResponse)
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Fatalf("describe of an unused group: %v, %d topics", kerr.ErrorForCode(g.ErrorCode), len(g.Topics))
	}
}

// TestShareAdminACLs: describe needs GROUP and TOPIC DESCRIBE, alter GROUP
// and TOPIC READ, delete GROUP DELETE and TOPIC READ.
func TestShareAdminACLs(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "share-acl"); err != nil {
		t.Fatal(err)
	}
	// Straight to the gateway: a client would stop at FindCoordinator
	// without GROUP DESCRIBE.
	bob := aclClient(t, c, "bob").SeedBrokers()[0]
	ask := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := bob.Request(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		return resp
	}
	check := func(what string, resp kmsg.Response, top, first int16) {
		t.Helper()
		if gotTop, gotFirst := shareCodes(t, resp); gotTop != top || gotFirst != first {
			t.Errorf("%s: %v, %v; want %v, %v", what, kerr.ErrorForCode(gotTop), kerr.ErrorForCode(gotFirst), kerr.ErrorForCode(top), kerr.ErrorForCode(first))
		}
	}
	gd, td := kerr.GroupAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code
	check("describe, nothing granted", ask(describeShareReq("share-acl-g", "share-acl", 0)), gd, 0)
	check("alter, nothing granted", ask(alterShareReq("share-acl-g", "share-acl", 0, 0)), gd, gd)
	check("delete, nothing granted", ask(deleteShareReq("share-acl-g", "share-acl")), gd, gd)

	// The group's operations, each alone: the one the API needs lets it
	// past the group and the topic stops it.
	grant := func(acl *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, acl)
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	grant(kadm.NewACLs().Allow("User:bob").Groups("share-acl-describe").Operations(kadm.OpDescribe))
	grant(kadm.NewACLs().Allow("User:bob").Groups("share-acl-read").Operations(kadm.OpRead))
	grant(kadm.NewACLs().Allow("User:bob").Groups("share-acl-delete").Operations(kadm.OpDelete))
	check("describe, group DESCRIBE", ask(describeShareReq("share-acl-describe", "share-acl", 0)), 0, td)
	check("alter, group DESCRIBE", ask(alterShareReq("share-acl-describe", "share-acl", 0, 0)), gd, gd)
	check("alter, group READ", ask(alterShareReq("share-acl-read", "share-acl", 0, 0)), 0, td)
	check("delete, group READ", ask(deleteShareReq("share-acl-read", "share-acl")), gd, gd)
	check("delete, group DELETE", ask(deleteShareReq("share-acl-delete", "share-acl")), 0, td)

	// TOPIC DESCRIBE is not enough to alter or delete.
	grant(kadm.NewACLs().Allow("User:bob").Topics("share-acl").Operations(kadm.OpDescribe))
	check("alter, topic DESCRIBE", ask(alterShareReq("share-acl-read", "share-acl", 0, 0)), 0, td)
	check("delete, topic DESCRIBE", ask(deleteShareReq("share-acl-delete", "share-acl")), 0, td)
	// Every share-partition of a group leaves out what bob may not
	// describe, without an error.
	resp := ask(describeShareReq("share-acl-describe", "")).(*kmsg.DescribeShareGroupOffsetsResponse)
	if g := resp.Groups[0]; g.ErrorCode != 0 {
		t.Errorf("describe of every share-partition: %v", kerr.ErrorForCode(g.ErrorCode))
	}
}

// shareJoin joins group as a share consumer of topic through rc and
// returns its member id.
func shareJoin(t *testing.T, rc *rawConn, group, topic string) string {
	t.Helper()
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version = 1
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "share-admin-member-"+group, []string{topic}
	resp := rc.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return hb.MemberID
}

// TestShareAdminNonEmptyGroup: alter, delete and DeleteGroups are refused
// NON_EMPTY_GROUP while the share group has a member, and work once it
// left; describe works throughout.
func TestShareAdminNonEmptyGroup(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "share-ne", 1, nil)
	rc := dialRaw(t, c.Addr)
	member := shareJoin(t, rc, "share-ne-g", "share-ne")
	ne := kerr.NonEmptyGroup.Code
	wantShareCodes(t, rc, 0, 0, describeShareReq("share-ne-g", "share-ne", 0))
	wantShareCodes(t, rc, ne, ne, alterShareReq("share-ne-g", "share-ne", 0, 0), deleteShareReq("share-ne-g", "share-ne"))
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"share-ne-g"}
	if code := rc.roundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != ne {
		t.Fatalf("DeleteGroups of a share group with a member: %v", kerr.ErrorForCode(code))
	}

	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.Version, leave.GroupID, leave.MemberID, leave.MemberEpoch = 1, "share-ne-g", member, -1
	if code := rc.roundTrip(leave).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(code))
	}
	wantShareCodes(t, rc, 0, 0, alterShareReq("share-ne-g", "share-ne", 0, 0), deleteShareReq("share-ne-g", "share-ne"))
	if code := rc.roundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteGroups of an empty share group: %v", kerr.ErrorForCode(code))
	}
}

// TestShareAdminAcrossGateways: the group's coordinator moves, reads and
// forgets start offsets on partitions another gateway owns (peer calls
// marked with the share admin tag) as well as its own; DeleteGroups then
// removes what is left.
func TestShareAdminAcrossGateways(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 2)
	const topic = "share-peers"
	createTopic(t, c, topic, 2, nil)
	group := nameOwnedBy(c, "share-peers-g", 0, cluster.GroupKey)
	for p := range int32(2) {
		c.Members[0].Pin(cluster.PartitionKey(topic, p), p)
		c.Members[1].Pin(cluster.PartitionKey(topic, p), p)
	}
	cl := clientAt(t, c.Addrs, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rc := dialRaw(t, c.Addrs[0])
	for p := range int32(2) {
		wantShareCodes(t, rc, 0, 0, alterShareReq(group, topic, p, int64(1+p)))
	}
	resp := rc.roundTrip(describeShareReq(group, "")).(*kmsg.DescribeShareGroupOffsetsResponse)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 2 {
		t.Fatalf("describe every share-partition: %v, %+v", kerr.ErrorForCode(g.ErrorCode), g.Topics)
	}
	for _, p := range g.Topics[0].Partitions {
		if want := int64(1 + p.Partition); p.ErrorCode != 0 || p.StartOffset != want || p.Lag != 5-want {
			t.Errorf("partition %d: start %d lag %d (%v), want start %d lag %d", p.Partition, p.StartOffset, p.Lag, kerr.ErrorForCode(p.ErrorCode), want, 5-want)
		}
	}
	wantShareCodes(t, rc, 0, 0, deleteShareReq(group, topic))
	resp = rc.roundTrip(describeShareReq(group, topic, 0, 1)).(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, p := range resp.Groups[0].Topics[0].Partitions {
		if p.ErrorCode != 0 || p.StartOffset != -1 || p.Lag != -1 {
			t.Errorf("partition %d after delete: start %d lag %d (%v)", p.Partition, p.StartOffset, p.Lag, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	wantShareCodes(t, rc, 0, 0, alterShareReq(group, topic, 1, 3))
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{group}
	if code := rc.roundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteGroups: %v", kerr.ErrorForCode(code))
	}
	if resp := rc.roundTrip(describeShareReq(group, "")).(*kmsg.DescribeShareGroupOffsetsResponse); len(resp.Groups[0].Topics) != 0 {
		t.Fatalf("share state left after DeleteGroups: %+v", resp.Groups[0].Topics)
	}
}
