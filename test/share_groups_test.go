package test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/disgw/disgw/gateway"
)

// fastShareGroups has share members heartbeat often and expire soon, so a
// test sees a session end in seconds.
func fastShareGroups(cfg *gateway.Config) {
	cfg.ShareGroupHeartbeatInterval = 100 * time.Millisecond
	cfg.ShareGroupSessionTimeout = 2 * time.Second
}

// seedBroker is a client's connection to the gateway at addr, which sends
// requests there without looking for a coordinator first.
func seedBroker(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Broker {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl.SeedBrokers()[0]
}

// aclClientOpts sign a client in as user of startACLCluster's users.
func aclClientOpts(user string) []kgo.Opt {
	return []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: aclUsers[user]}.AsSha256Mechanism())}
}

// shareHeartbeat sends one ShareGroupHeartbeat v1 through b.
func shareHeartbeat(t *testing.T, b *kgo.Broker, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	resp, err := b.Request(testContext(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ShareGroupHeartbeatResponse)
}

// describeShareGroup asks b for one group's ShareGroupDescribe.
func describeShareGroup(t *testing.T, b *kgo.Broker, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	req.IncludeAuthorizedOperations = true
	resp, err := b.Request(testContext(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ShareGroupDescribeResponse).Groups[0]
}

// TestShareGroupMembership: three share members of a 2-partition topic
// join over real sockets and share its partitions (each partition two
// members, each member one or two); a member ahead of its epoch is fenced,
// one leaves, one goes silent and is removed at its session timeout, and
// ShareGroupDescribe and ListGroups see each step.
func TestShareGroupMembership(t *testing.T) {
	t.Parallel()
	c := startCluster(t, fastShareGroups)
	createTopic(t, c, "sg-topic", 2, nil)
	b := seedBroker(t, c.Addr)
	group, members := "sg-members", []string{"m0", "m1", "m2"}
	epochs := map[string]int32{}
	for _, m := range members {
		resp := shareHeartbeat(t, b, group, m, 0, "sg-topic")
		if resp.ErrorCode != 0 || resp.MemberID == nil || *resp.MemberID != m || resp.HeartbeatIntervalMillis != 100 {
			t.Fatalf("join of %s: %+v", m, resp)
		}
		epochs[m] = resp.MemberEpoch
	}
	waitFor(t, "every member at the group's epoch, the partitions shared", func() bool {
		for _, m := range members {
			resp := shareHeartbeat(t, b, group, m, epochs[m])
			if resp.ErrorCode != 0 {
				t.Fatalf("heartbeat of %s: %v", m, kerr.ErrorForCode(resp.ErrorCode))
			}
			epochs[m] = resp.MemberEpoch
		}
		d := describeShareGroup(t, b, group)
		if d.ErrorCode != 0 || d.GroupState != "Stable" || d.Assignor != "simple" || len(d.Members) != 3 {
			return false
		}
		perPartition := map[int32]int{}
		for _, m := range d.Members {
			if m.MemberEpoch != d.AssignmentEpoch || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "sg-topic" {
				return false
			}
			for _, p := range m.Assignment.TopicPartitions[0].Partitions {
				perPartition[p]++
			}
		}
		return perPartition[0] == 2 && perPartition[1] == 2
	})
	if d := describeShareGroup(t, b, group); d.AuthorizedOperations <= 0 {
		t.Errorf("authorized operations %d, want the group's operations", d.AuthorizedOperations)
	}

	if resp := shareHeartbeat(t, b, group, "m0", epochs["m0"]+5); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Errorf("heartbeat ahead of the member's epoch: %v, want FENCED_MEMBER_EPOCH", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := shareHeartbeat(t, b, group, "m1", -1); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave of m1: %+v", resp)
	}
	if resp := shareHeartbeat(t, b, group, "m1", epochs["m1"]); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat after leaving: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(resp.ErrorCode))
	}
	waitFor(t, "m2 removed at its session timeout while m0 heartbeats", func() bool {
		resp := shareHeartbeat(t, b, group, "m0", epochs["m0"])
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of m0: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		epochs["m0"] = resp.MemberEpoch
		d := describeShareGroup(t, b, group)
		return len(d.Members) == 1 && d.Members[0].MemberID == "m0" && len(d.Members[0].Assignment.TopicPartitions) == 1 &&
			len(d.Members[0].Assignment.TopicPartitions[0].Partitions) == 2
	})
	listed, err := kadm.NewClient(newClient(t, c)).ListGroups(testContext(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed[group]; !ok || g.ProtocolType != "share" {
		t.Errorf("ListGroups: %+v, want %s listed as a share group", listed, group)
	}
}

// TestShareGroupTypeConflicts: a group id is a share group or a consumer
// group for good: each protocol's heartbeat to the other's group, and
// each describe of the other's, is GROUP_ID_NOT_FOUND; a describe without
// a group id is INVALID_GROUP_ID.
func TestShareGroupTypeConflicts(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "sg-types", 1, nil)
	b := seedBroker(t, c.Addr)
	if resp := shareHeartbeat(t, b, "sg-share", "s0", 0, "sg-types"); resp.ErrorCode != 0 {
		t.Fatalf("share join: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Version = 1
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames = "sg-share", "c0", 30000, []string{"sg-types"}
	cg.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := b.Request(testContext(t, 10*time.Second), cg)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Errorf("consumer heartbeat to a share group: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(code))
	}
	cg.Group = "sg-consumer"
	if resp, err = b.Request(testContext(t, 10*time.Second), cg); err != nil || resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode != 0 {
		t.Fatalf("consumer join: %v %+v", err, resp)
	}
	if resp := shareHeartbeat(t, b, "sg-consumer", "s1", 0, "sg-types"); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("share heartbeat to a consumer group: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(resp.ErrorCode))
	}
	if d := describeShareGroup(t, b, "sg-consumer"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("share describe of a consumer group: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(d.ErrorCode))
	}
	if d := describeConsumerGroup(t, c, "sg-share"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("consumer describe of a share group: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(d.ErrorCode))
	}
	if d := describeShareGroup(t, b, ""); d.ErrorCode != kerr.InvalidGroupID.Code {
		t.Errorf("describe of the empty group id: %v, want INVALID_GROUP_ID", kerr.ErrorForCode(d.ErrorCode))
	}
}

// TestShareGroupNotCoordinator: of two gateways, only the group's
// coordinator takes its share heartbeats and describes it; the other
// answers NOT_COORDINATOR.
func TestShareGroupNotCoordinator(t *testing.T) {
	t.Parallel()
	c, err := Start(Options{Dir: t.TempDir(), Gateways: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	createTopic(t, c, "sg-coord", 1, nil)
	var codes, describes []int16
	for _, addr := range c.Addrs {
		b := seedBroker(t, addr)
		codes = append(codes, shareHeartbeat(t, b, "sg-coord-group", "m0", 0, "sg-coord").ErrorCode)
		describes = append(describes, describeShareGroup(t, b, "sg-coord-group").ErrorCode)
	}
	slices.Sort(codes)
	slices.Sort(describes)
	if !slices.Equal(codes, []int16{0, kerr.NotCoordinator.Code}) || !slices.Equal(describes, []int16{0, kerr.NotCoordinator.Code}) {
		t.Fatalf("heartbeats %v and describes %v at the two gateways, want one NOT_COORDINATOR each", codes, describes)
	}
}

// TestShareGroupACLs: a share heartbeat needs READ on the group and
// DESCRIBE on every subscribed topic; ShareGroupDescribe needs DESCRIBE on
// the group, and a group using a topic the caller may not describe is
// TOPIC_AUTHORIZATION_FAILED, as Kafka answers it.
func TestShareGroupACLs(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "sg-open", "sg-secret"); err != nil {
		t.Fatal(err)
	}
	grant := func(acls *kadm.ACLBuilder) {
		t.Helper()
		if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	addr := c.Gateway.ListenerAddr(gateway.SASLPlaintext).String()
	bob := seedBroker(t, addr, aclClientOpts("bob")...)
	admin := seedBroker(t, addr, aclClientOpts("admin")...)
	if resp := shareHeartbeat(t, bob, "sg-acl", "b0", 0, "sg-open"); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("join without READ on the group: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := shareHeartbeat(t, admin, "sg-acl", "a0", 0, "sg-open"); resp.ErrorCode != 0 {
		t.Fatalf("admin's join: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if d := describeShareGroup(t, bob, "sg-acl"); d.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("describe without DESCRIBE on the group: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(d.ErrorCode))
	}
	grant(kadm.NewACLs().Allow("User:bob").Groups("sg-acl").Operations(kadm.OpRead))
	if resp := shareHeartbeat(t, bob, "sg-acl", "b0", 0, "sg-open"); resp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("join without DESCRIBE on the topic: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
	grant(kadm.NewACLs().Allow("User:bob").Topics("sg-open").Operations(kadm.OpDescribe))
	if resp := shareHeartbeat(t, bob, "sg-acl", "b0", 0, "sg-open"); resp.ErrorCode != 0 {
		t.Fatalf("join with READ on the group and DESCRIBE on the topic: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if d := describeShareGroup(t, bob, "sg-acl"); d.ErrorCode != 0 || len(d.Members) != 2 {
		t.Errorf("describe with READ (which implies DESCRIBE) on group and DESCRIBE on the topic: %v %+v", kerr.ErrorForCode(d.ErrorCode), d.Members)
	}
	if resp := shareHeartbeat(t, admin, "sg-acl", "a1", 0, "sg-secret"); resp.ErrorCode != 0 {
		t.Fatalf("admin's join on another topic: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if d := describeShareGroup(t, bob, "sg-acl"); d.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(d.Members) != 0 {
		t.Errorf("describe of a group using a topic bob may not describe: %v %+v, want TOPIC_AUTHORIZATION_FAILED and no members", kerr.ErrorForCode(d.ErrorCode), d.Members)
	}
}

// alterGroupConfigs sends one IncrementalAlterConfigs of group through b
// and returns its code and message.
func alterGroupConfigs(t *testing.T, b *kgo.Broker, group string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeGroupConfig, group, configs
	req.Resources = append(req.Resources, res)
	resp, err := b.Request(testContext(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	msg := ""
	if rr.ErrorMessage != nil {
		msg = *rr.ErrorMessage
	}
	return rr.ErrorCode, msg
}

// groupConfigOp is one config change of an IncrementalAlterConfigs.
func groupConfigOp(op kmsg.IncrementalAlterConfigOp, name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, kmsg.StringPtr(value)
	return c
}

// describedConfigs asks b for a resource's configs: value and source by
// name.
func describedConfigs(t *testing.T, b *kgo.Broker, rt kmsg.ConfigResourceType, name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = rt, name
	req.Resources = append(req.Resources, res)
	resp, err := b.Request(testContext(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	if rr.ErrorCode != 0 {
		t.Fatalf("DescribeConfigs %s: %v", name, kerr.ErrorForCode(rr.ErrorCode))
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range rr.Configs {
		out[c.Name] = c
	}
	return out
}

// TestShareGroupConfigs: a group's share.* configs are SET, described as
// DYNAMIC_GROUP_CONFIG, DELETEd back to their defaults and replaced by
// AlterConfigs; invalid values, list operations, unknown names and the
// timings the flags set are refused; a second gateway sees the configs
// kept in DIS within its cache's second; the broker reports the share
// group flags under Kafka's names.
func TestShareGroupConfigs(t *testing.T) {
	t.Parallel()
	c, err := Start(Options{Dir: t.TempDir(), Gateways: 2, Gateway: func(cfg *gateway.Config) {
		cfg.ShareLimits.MaxLockDuration = 90 * time.Second
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	b0, b1 := seedBroker(t, c.Addrs[0]), seedBroker(t, c.Addrs[1])
	const group = "sg-configs"
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete

	d := describedConfigs(t, b0, kmsg.ConfigResourceTypeGroupConfig, group)
	for name, want := range map[string]string{"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted",
		"share.record.lock.duration.ms": "30000", "share.session.timeout.ms": "45000", "consumer.session.timeout.ms": "45000"} {
		if got := d[name]; got.Value == nil || *got.Value != want || got.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s of a group with none set: %v (source %v), want %s by default", name, got.Value, got.Source, want)
		}
	}
	if code, msg := alterGroupConfigs(t, b0, group, groupConfigOp(set, "share.auto.offset.reset", "by_duration:P1DT2H"),
		groupConfigOp(set, "share.isolation.level", "read_committed"), groupConfigOp(set, "share.record.lock.duration.ms", "75000")); code != 0 {
		t.Fatalf("SET: %v %s", kerr.ErrorForCode(code), msg)
	}
	want := map[string]string{"share.auto.offset.reset": "by_duration:P1DT2H", "share.isolation.level": "read_committed", "share.record.lock.duration.ms": "75000"}
	for i, b := range []*kgo.Broker{b0, b1} {
		waitFor(t, "the configs at gateway "+string(rune('0'+i)), func() bool {
			d := describedConfigs(t, b, kmsg.ConfigResourceTypeGroupConfig, group)
			for name, v := range want {
				if got := d[name]; got.Value == nil || *got.Value != v || got.Source != kmsg.ConfigSourceGroupConfig {
					return false
				}
			}
			return true
		})
	}

	for _, tc := range []struct {
		cfg  kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
	}{
		{groupConfigOp(set, "share.auto.offset.reset", "sometimes"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "share.auto.offset.reset", "by_duration:-PT1H"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "share.auto.offset.reset", "by_duration:1H"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "share.isolation.level", "READ_COMMITTED"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "share.record.lock.duration.ms", "999"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "share.record.lock.duration.ms", "90001"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "share.record.lock.duration.ms", "soon"), kerr.InvalidConfig.Code},
		{groupConfigOp(kmsg.IncrementalAlterConfigOpAppend, "share.isolation.level", "read_committed"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "share.no.such.config", "1"), kerr.InvalidConfig.Code},
		{groupConfigOp(set, "consumer.session.timeout.ms", "10000"), kerr.InvalidRequest.Code},
	} {
		if code, msg := alterGroupConfigs(t, b0, group, tc.cfg); code != tc.code || msg == "" {
			t.Errorf("%v %s=%s: %v %q, want %v with a message", tc.cfg.Op, tc.cfg.Name, *tc.cfg.Value, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code))
		}
	}
	if code, msg := alterGroupConfigs(t, b0, group, groupConfigOp(set, "consumer.session.timeout.ms", "45000")); code != 0 {
		t.Errorf("SET of a flag's config to its value: %v %s", kerr.ErrorForCode(code), msg)
	}
	if d := describedConfigs(t, b0, kmsg.ConfigResourceTypeGroupConfig, group); *d["share.isolation.level"].Value != "read_committed" {
		t.Errorf("refused changes changed the configs: %v", *d["share.isolation.level"].Value)
	}

	if code, msg := alterGroupConfigs(t, b0, group, groupConfigOp(del, "share.isolation.level", "")); code != 0 {
		t.Fatalf("DELETE: %v %s", kerr.ErrorForCode(code), msg)
	}
	d = describedConfigs(t, b0, kmsg.ConfigResourceTypeGroupConfig, group)
	if got := d["share.isolation.level"]; *got.Value != "read_uncommitted" || got.Source != kmsg.ConfigSourceDefaultConfig || *d["share.record.lock.duration.ms"].Value != "75000" {
		t.Errorf("after DELETE: isolation %s (source %v), lock %s", *got.Value, got.Source, *d["share.record.lock.duration.ms"].Value)
	}

	adm := kadm.NewClient(newClient(t, c))
	alter := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	rc := kmsg.NewAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, rc)
	alter.Resources = append(alter.Resources, res)
	resp, err := b0.Request(testContext(t, 10*time.Second), alter)
	if err != nil || resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, resp)
	}
	d = describedConfigs(t, b0, kmsg.ConfigResourceTypeGroupConfig, group)
	if *d["share.auto.offset.reset"].Value != "earliest" || d["share.record.lock.duration.ms"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("after AlterConfigs: reset %s, lock duration source %v (not listed, so back to its default)", *d["share.auto.offset.reset"].Value, d["share.record.lock.duration.ms"].Source)
	}
	groups, err := adm.ListGroups(testContext(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups[group]; ok {
		t.Errorf("a group with configs and no members is listed: %+v", groups[group])
	}

	broker := describedConfigs(t, b0, kmsg.ConfigResourceTypeBroker, "0")
	for name, v := range map[string]string{"group.share.session.timeout.ms": "45000", "group.share.heartbeat.interval.ms": "5000",
		"group.share.max.size": "200", "group.share.delivery.count.limit": "5", "group.share.record.lock.duration.ms": "30000",
		"group.share.max.record.lock.duration.ms": "90000", "group.share.partition.max.record.locks": "2000"} {
		if got := broker[name]; got.Value == nil || *got.Value != v || !got.ReadOnly {
			t.Errorf("broker config %s: %v, want %s read-only", name, got.Value, v)
		}
	}
}
