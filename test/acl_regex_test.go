package test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLRegexSubscriptionSeesOnlyDescribable: a principal with READ on one
// topic and on its group subscribes with a regex that matches every topic
// (KIP-848); the group is assigned, and ConsumerGroupDescribe names, only
// the topic it may describe, never the others the regex would match. By
// name, __consumer_offsets goes through the same DESCRIBE check.
func TestACLRegexSubscriptionSeesOnlyDescribable(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "public-orders", "secret-a", "secret-b"); err != nil {
		t.Fatal(err)
	}
	grant := kadm.NewACLs().Allow("User:bob").Topics("public-orders").Groups("bob-group").Operations(kadm.OpRead)
	if created, err := adm.CreateACLs(ctx, grant); err != nil || len(created) != 2 || created[0].Err != nil || created[1].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, created)
	}
	bob := aclClient(t, c, "bob")

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version = 1
	hb.Group, hb.MemberID, hb.MemberEpoch = "bob-group", "bob-member-0001", 0
	hb.RebalanceTimeoutMillis = 30000
	hb.SubscribedTopicRegex = kmsg.StringPtr(".*")
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctx, bob)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v, error %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}

	desc := kmsg.NewPtrConsumerGroupDescribeRequest()
	desc.Groups = []string{"bob-group"}
	dresp, err := desc.RequestWith(ctx, bob)
	if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].ErrorCode != 0 || len(dresp.Groups[0].Members) != 1 {
		t.Fatalf("describe: %v %+v", err, dresp)
	}
	m := dresp.Groups[0].Members[0]
	var named []string
	for _, tp := range append(m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions...) {
		named = append(named, tp.Topic)
	}
	if len(named) == 0 {
		t.Fatal("the member was assigned nothing: want public-orders")
	}
	for _, n := range named {
		if n != "public-orders" {
			t.Fatalf("the group names %q: a regex revealed a topic bob may not describe (all: %v)", n, named)
		}
	}

	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("__consumer_offsets")}}
	mresp, err := md.RequestWith(ctx, bob)
	if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(mresp.Topics[0].Partitions) != 0 {
		t.Fatalf("Metadata for __consumer_offsets by name as bob: %v %+v, want TOPIC_AUTHORIZATION_FAILED", err, mresp)
	}
}
