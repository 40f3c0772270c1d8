package test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/gateway/authz"
)

// aclUsers are the SASL users of the ACL tests: admin is a super user.
var aclUsers = map[string]string{"admin": "admin-pw", "bob": "bob-pw"}

// startACLCluster runs a gateway with the ACL authorizer and a
// SASL_PLAINTEXT listener.
func startACLCluster(t *testing.T) *Cluster {
	t.Helper()
	users, err := gateway.NewSASLUsers(aclUsers)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(Options{Dir: t.TempDir(), Gateway: func(cfg *gateway.Config) {
		cfg.SASL = users
		cfg.Listeners = []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext}}
		cfg.Authorizer = gateway.AuthorizerACL
		cfg.SuperUsers = []string{"User:admin"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// aclClient is user's client of the gateway's SASL listener.
func aclClient(t *testing.T, c *Cluster, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{
		kgo.SeedBrokers(c.Gateway.ListenerAddr(gateway.SASLPlaintext).String()),
		kgo.SASL(scram.Auth{User: user, Pass: aclUsers[user]}.AsSha256Mechanism()),
		kgo.RetryTimeout(5 * time.Second), kgo.RequestRetries(2), kgo.RecordDeliveryTimeout(5 * time.Second),
	}
	cl, err := kgo.NewClient(append(o, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceAs writes one record to topic as user.
func produceAs(t *testing.T, c *Cluster, user, topic string) error {
	t.Helper()
	cl := aclClient(t, c, user, kgo.DisableIdempotentWrite())
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

func isTopicDenied(err error) bool { return errors.Is(err, kerr.TopicAuthorizationFailed) }

// TestACLs grants, denies and removes ACLs with kadm and checks that a
// SASL client is held to them, across a gateway restart: a denied
// producer gets TOPIC_AUTHORIZATION_FAILED and writes nothing, a prefixed
// allow lets it write, a deny wins over the allow, Metadata hides what it
// may not describe, and only a super user may change ACLs.
func TestACLs(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "orders", "secret"); err != nil {
		t.Fatal(err)
	}

	if err := produceAs(t, c, "bob", "orders"); !isTopicDenied(err) {
		t.Fatalf("bob without ACLs: produce answered %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("orders", 0); o.Offset != 0 {
		t.Fatalf("a denied produce wrote: end offset %d", o.Offset)
	}

	grant := kadm.NewACLs().Allow("User:bob").Topics("ord").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite)
	created, err := adm.CreateACLs(ctx, grant)
	if err != nil || len(created) != 1 || created[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, created)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 1 {
		t.Fatalf("DescribeACLs: %v %+v", err, described)
	}
	if d := described[0].Described[0]; d.Name != "ord" || d.Pattern != kadm.ACLPatternPrefixed || d.Operation != kadm.OpWrite || d.Principal != "User:bob" || d.Host != "*" {
		t.Fatalf("described %+v", d)
	}
	if err := produceAs(t, c, "bob", "orders"); err != nil {
		t.Fatalf("bob with a prefixed allow: %v", err)
	}
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	// The SASL listener came back on another port.
	adm = kadm.NewClient(aclClient(t, c, "admin"))
	if err := produceAs(t, c, "bob", "orders"); err != nil {
		t.Fatalf("bob with a prefixed allow, after a gateway restart: %v", err)
	}

	topics, err := kadm.NewClient(aclClient(t, c, "bob")).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); !slices.Contains(names, "orders") || slices.Contains(names, "secret") {
		t.Fatalf("bob's metadata lists %v: want orders (WRITE implies DESCRIBE) and not secret", names)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.IncludeTopicAuthorizedOperations = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("orders")
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, aclClient(t, c, "bob"))
	if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("bob's metadata for orders: %v %+v", err, mresp)
	}
	if got, want := mresp.Topics[0].AuthorizedOperations, int32(1<<kmsg.ACLOperationWrite|1<<kmsg.ACLOperationDescribe); got != want {
		t.Fatalf("bob's authorized operations on orders: %b, want WRITE and DESCRIBE (%b)", got, want)
	}
	if err := produceAs(t, c, "bob", "secret"); !isTopicDenied(err) {
		t.Fatalf("bob writing a topic outside the prefix: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	res, err := kadm.NewClient(aclClient(t, c, "bob")).CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("secret").Operations(kadm.OpAll))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob creating ACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, res)
	}

	deny := kadm.NewACLs().Deny("User:bob").Topics("orders").Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(ctx, deny); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs deny: %v %+v", err, res)
	}
	if err := produceAs(t, c, "bob", "orders"); !isTopicDenied(err) {
		t.Fatalf("bob with a deny over the prefixed allow: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().Deny("User:bob").DenyHosts().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	matched := 0
	for _, d := range deleted {
		if d.Err != nil {
			t.Fatalf("DeleteACLs: %+v", d)
		}
		matched += len(d.Deleted)
	}
	if matched != 2 {
		t.Fatalf("DeleteACLs removed %d ACLs, want 2: %+v", matched, deleted)
	}
	if err := produceAs(t, c, "bob", "orders"); !isTopicDenied(err) {
		t.Fatalf("after removing bob's ACLs: produce answered %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produceAs(t, c, "admin", "secret"); err != nil {
		t.Fatalf("the super user, without any ACL: %v", err)
	}
}

// metadataCode asks gateway addr for topic's metadata over a raw
// connection, so the answer comes from that gateway and no other, and
// returns the topic's error code.
func metadataCode(t *testing.T, addr, topic string) int16 {
	t.Helper()
	rc := dialRaw(t, addr)
	defer rc.conn.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("metadata answered %d topics", len(resp.Topics))
	}
	return resp.Topics[0].ErrorCode
}

// TestACLsReachOtherGateways: an ACL created through one gateway is
// enforced by another in front of the same DIS within its poll interval.
// Both serve PLAINTEXT clients, User:ANONYMOUS, and allow what no ACL
// decides, so the client may create the ACL that then denies it.
func TestACLsReachOtherGateways(t *testing.T) {
	t.Parallel()
	c, err := Start(Options{Dir: t.TempDir(), Gateways: 2, Gateway: func(cfg *gateway.Config) {
		cfg.Authorizer = gateway.AuthorizerACL
		cfg.AllowEveryoneIfNoACLFound = true
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	createTopic(t, c, "shared", 1, nil)
	if code := metadataCode(t, c.Addrs[1], "shared"); code != 0 {
		t.Fatalf("before any ACL: metadata through gateway 1 answered %s", kerr.ErrorForCode(code))
	}
	adm := kadm.NewClient(newClient(t, c))
	res, err := adm.CreateACLs(context.Background(), kadm.NewACLs().Deny("User:ANONYMOUS").Topics("shared").Operations(kadm.OpDescribe))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	if code := metadataCode(t, c.Addrs[0], "shared"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("metadata through gateway 0 after the deny: %s", kerr.ErrorForCode(code))
	}
	deadline := time.Now().Add(20 * time.Second)
	for metadataCode(t, c.Addrs[1], "shared") != kerr.TopicAuthorizationFailed.Code {
		if time.Now().After(deadline) {
			t.Fatal("gateway 1 never enforced the ACL created through gateway 0")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestACLAPIsWithoutAuthorizer: without --authorizer=acl the ACL APIs
// answer SECURITY_DISABLED, as a Kafka broker without an authorizer does.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	adm := kadm.NewClient(newClient(t, c))
	described, err := adm.DescribeACLs(context.Background(), kadm.NewACLs().Allow().AllowHosts().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil || len(described) == 0 || !errors.Is(described[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeACLs: %v %+v, want SECURITY_DISABLED", err, described)
	}
	res, err := adm.CreateACLs(context.Background(), kadm.NewACLs().Allow("User:x").Topics("t").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateACLs: %v %+v, want SECURITY_DISABLED", err, res)
	}
}

// TestACLsForGroups: a consumer needs READ on its group and its topic;
// without the group ACL its JoinGroup gets GROUP_AUTHORIZATION_FAILED, and
// ListGroups and OffsetFetch show it only what it may describe.
func TestACLsForGroups(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	if err := produceAs(t, c, "admin", "events"); err != nil {
		t.Fatal(err)
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("events").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	consume := func(group string) error {
		cl := aclClient(t, c, "bob", kgo.ConsumeTopics("events"), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(pctx)
			if err := fs.Err0(); err != nil {
				return err
			}
			if fs.NumRecords() > 0 {
				return cl.CommitUncommittedOffsets(pctx)
			}
		}
	}
	if err := consume("billing"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("bob consuming in a group without a group ACL: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Groups("billing").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	if err := consume("billing"); err != nil {
		t.Fatalf("bob consuming with READ on topic and group: %v", err)
	}
	// Another group, committed by the super user, stays out of bob's sight.
	if _, err := adm.CommitOffsets(ctx, "audit", kadm.OffsetsFromRecords(kgo.Record{Topic: "events", Partition: 0, Offset: 0})); err != nil {
		t.Fatal(err)
	}
	bob := kadm.NewClient(aclClient(t, c, "bob"))
	groups, err := bob.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := groups.Groups(); !slices.Contains(names, "billing") || slices.Contains(names, "audit") {
		t.Fatalf("bob lists groups %v: want billing and not audit", names)
	}
	if _, err := bob.FetchOffsets(ctx, "audit"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("bob fetching audit's offsets: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	offsets, err := bob.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offsets.Lookup("events", 0); !ok || o.At != 1 {
		t.Fatalf("bob's committed offset in billing: %+v %v, want 1", o, ok)
	}
}

// TestKafkaAclsTool: Apache Kafka's kafka-acls.sh (its AclCommand main
// class) adds, lists and removes ACLs, and a SASL client is held to them.
// The tool connects over PLAINTEXT as User:ANONYMOUS, made a super user.
func TestKafkaAclsTool(t *testing.T) {
	t.Parallel()
	skipWithoutJava(t)
	ctx := testContext(t, 5*time.Minute)
	cp := kafkaToolsClasspath(ctx, t)
	users, err := gateway.NewSASLUsers(aclUsers)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(Options{Dir: t.TempDir(), Gateway: func(cfg *gateway.Config) {
		cfg.SASL = users
		cfg.Listeners = []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext}}
		cfg.Authorizer = gateway.AuthorizerACL
		cfg.SuperUsers = []string{"User:ANONYMOUS"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	createTopic(t, c, "orders-eu", 1, nil)
	k := &kafkaTools{t: t, ctx: ctx, cp: cp, addr: c.Addr}
	const acls = "org.apache.kafka.tools.AclCommand"

	if err := produceAs(t, c, "bob", "orders-eu"); !isTopicDenied(err) {
		t.Fatalf("bob without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	k.run(acls, "--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "orders-", "--resource-pattern-type", "prefixed")
	list := k.run(acls, "--list", "--topic", "orders-", "--resource-pattern-type", "prefixed")
	if !strings.Contains(list, "User:bob") || !strings.Contains(list, "WRITE") || !strings.Contains(list, "PREFIXED") {
		t.Fatalf("kafka-acls --list:\n%s", list)
	}
	if err := produceAs(t, c, "bob", "orders-eu"); err != nil {
		t.Fatalf("bob after kafka-acls --add: %v", err)
	}
	k.run(acls, "--remove", "--force", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "orders-", "--resource-pattern-type", "prefixed")
	if list := k.run(acls, "--list"); strings.Contains(list, "User:bob") {
		t.Fatalf("kafka-acls --list after --remove:\n%s", list)
	}
	if err := produceAs(t, c, "bob", "orders-eu"); !isTopicDenied(err) {
		t.Fatalf("bob after kafka-acls --remove: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// TestSaramaACLs: sarama's cluster admin creates, lists and deletes ACLs,
// and a sarama producer without them gets TOPIC_AUTHORIZATION_FAILED.
func TestSaramaACLs(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	addr := []string{c.Gateway.ListenerAddr(gateway.SASLPlaintext).String()}
	conf := func(user string) *sarama.Config {
		cfg := saramaConfig()
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		cfg.Net.SASL.User, cfg.Net.SASL.Password = user, aclUsers[user]
		cfg.Metadata.Retry.Max = 0
		cfg.Producer.Retry.Max = 0
		return cfg
	}
	admin, err := sarama.NewClusterAdmin(addr, conf("admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic("payments", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	send := func() error {
		p, err := sarama.NewSyncProducer(addr, conf("bob"))
		if err != nil {
			return err
		}
		defer p.Close()
		_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: "payments", Partition: 0, Value: sarama.StringEncoder("v")})
		return err
	}
	if err := send(); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("bob without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	res := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "payments", ResourcePatternType: sarama.AclPatternLiteral}
	acl := sarama.Acl{Principal: "User:bob", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionAllow}
	if err := admin.CreateACLs([]*sarama.ResourceAcls{{Resource: res, Acls: []*sarama.Acl{&acl}}}); err != nil {
		t.Fatal(err)
	}
	bob := "User:bob"
	filter := sarama.AclFilter{Version: 1, ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Principal: &bob, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}
	listed, err := admin.ListAcls(filter)
	if err != nil || len(listed) != 1 || listed[0].ResourceName != "payments" || len(listed[0].Acls) != 1 {
		t.Fatalf("ListAcls: %v %+v", err, listed)
	}
	if err := send(); err != nil {
		t.Fatalf("bob with WRITE: %v", err)
	}
	matched, err := admin.DeleteACL(filter, false)
	if err != nil || len(matched) != 1 {
		t.Fatalf("DeleteACL: %v %+v", err, matched)
	}
	if err := send(); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("bob after DeleteACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// TestACLsHideNamesOfTopicIDs: a principal that may not describe a topic
// and names it by id, in Metadata or DeleteTopics, gets
// TOPIC_AUTHORIZATION_FAILED with the id and no name, as Kafka answers; with
// DESCRIBE but not DELETE it gets the name and the refusal. The topic stays.
func TestACLsHideNamesOfTopicIDs(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	admin := aclClient(t, c, "admin")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "hidden"); err != nil {
		t.Fatal(err)
	}
	details, err := adm.ListTopics(ctx, "hidden")
	if err != nil || details["hidden"].Err != nil {
		t.Fatalf("admin's metadata: %v %+v", err, details)
	}
	id := [16]byte(details["hidden"].ID)
	bob := aclClient(t, c, "bob")

	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.TopicID = id
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, bob)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("bob's metadata by id: %v %+v", err, mresp)
	}
	if got := mresp.Topics[0]; got.ErrorCode != kerr.TopicAuthorizationFailed.Code || got.Topic != nil || got.TopicID != id {
		t.Fatalf("bob's metadata by id: code %d, name %v, id %x; want TOPIC_AUTHORIZATION_FAILED, no name, the id", got.ErrorCode, got.Topic, got.TopicID)
	}

	deleteByID := func() kmsg.DeleteTopicsResponseTopic {
		t.Helper()
		dreq := kmsg.NewPtrDeleteTopicsRequest()
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.TopicID = id
		dreq.Topics = append(dreq.Topics, dt)
		dresp, err := dreq.RequestWith(ctx, bob)
		if err != nil || len(dresp.Topics) != 1 {
			t.Fatalf("bob's DeleteTopics by id: %v %+v", err, dresp)
		}
		return dresp.Topics[0]
	}
	if got := deleteByID(); got.ErrorCode != kerr.TopicAuthorizationFailed.Code || got.Topic != nil {
		t.Fatalf("bob's DeleteTopics by id: code %d, name %v; want TOPIC_AUTHORIZATION_FAILED and no name", got.ErrorCode, got.Topic)
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("hidden").Operations(kadm.OpDescribe)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	waitFor(t, "bob's DESCRIBE to show the name", func() bool {
		got := deleteByID()
		return got.ErrorCode == kerr.TopicAuthorizationFailed.Code && got.Topic != nil && *got.Topic == "hidden"
	})
	if details, err := adm.ListTopics(ctx, "hidden"); err != nil || details["hidden"].Err != nil {
		t.Fatalf("the topic after bob's deletes: %v %+v", err, details)
	}
}

// TestACLRecordsForgedInDISAreRefused: someone who can write the DIS
// stream of the ACLs but lacks the gateways' key appends a snapshot of
// the highest version granting bob everything. The gateway takes none of
// it: bob stays denied, and a super user's CreateAcls still works.
func TestACLRecordsForgedInDISAreRefused(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "orders", "secret"); err != nil {
		t.Fatal(err)
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("orders").Operations(kadm.OpWrite))
	if err != nil || len(created) != 1 || created[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, created)
	}
	forged := fmt.Sprintf(`{"version":%d,"acls":[`+
		`{"resource_type":2,"resource_name":"*","pattern_type":3,"principal":"User:bob","host":"*","operation":2,"permission":3},`+
		`{"resource_type":4,"resource_name":"kafka-cluster","pattern_type":3,"principal":"User:bob","host":"*","operation":2,"permission":3}]}`,
		int64(math.MaxInt64))
	resp, err := c.Client.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: authz.StreamName,
		Records: []disclient.PutRecordsEntry{{Data: []byte(forged), PartitionID: disclient.PartitionID(0)}}})
	if err != nil || resp.FailedRecordCount != 0 {
		t.Fatalf("appending the forged snapshot: %v %+v", err, resp)
	}
	// CreateAcls reads the stream up to the forged record before it
	// writes, so what follows is decided after the gateway saw it.
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("payments").Operations(kadm.OpWrite))
	if err != nil || len(created) != 1 || created[0].Err != nil {
		t.Fatalf("CreateACLs after the forged snapshot: %v %+v", err, created)
	}
	if err := produceAs(t, c, "bob", "secret"); !isTopicDenied(err) {
		t.Fatalf("bob produced to secret after the forged snapshot: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produceAs(t, c, "bob", "orders"); err != nil {
		t.Fatalf("bob's own grant stopped working: %v", err)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil || len(described) != 1 || len(described[0].Described) != 2 {
		t.Fatalf("DescribeACLs: %v %+v, want bob's two grants", err, described)
	}
}

// Transactional ids are ACL resources as in Kafka: a producer needs WRITE
// on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED without
// it) and WRITE on the topics, and lists only the ids it may describe.
func TestACLsForTransactionalIDs(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := testContext(t, time.Minute)
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "ledger"); err != nil {
		t.Fatal(err)
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("ledger").Operations(kadm.OpWrite, kadm.OpDescribe)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	commit := func(id string) error {
		cl := aclClient(t, c, "bob", kgo.TransactionalID(id), kgo.DefaultProduceTopic("ledger"))
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(id)}).FirstErr(); err != nil {
			return err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err := commit("bob-txn"); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("bob's transaction without an ACL on its id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	acl := kadm.NewACLs().Allow("User:bob").TransactionalIDs("bob-txn").Operations(kadm.OpWrite, kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	if err := commit("bob-txn"); err != nil {
		t.Fatalf("bob's transaction with WRITE on its id: %v", err)
	}
	if err := commit("admin-txn-as-bob"); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("bob using another id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	admin := aclClient(t, c, "admin", kgo.TransactionalID("admin-txn"), kgo.DefaultProduceTopic("ledger"))
	if err := admin.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Value: []byte("admin")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := admin.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	listed, err := kadm.NewClient(aclClient(t, c, "bob")).ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := listed.TransactionalIDs(); !slices.Equal(ids, []string{"bob-txn"}) {
		t.Errorf("bob lists transactional ids %v, want only bob-txn", ids)
	}
}
