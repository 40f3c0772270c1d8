package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/gateway/cluster"
)

// Share groups (KIP-932) through franz-go's share consumer: delivery to
// one member at a time, acknowledgements, redelivery and archiving, over
// real sockets (docs/design.md §14).

// setGroupConfigs sets configs of group, name then value, as
// kafka-configs.sh --entity-type groups does.
func setGroupConfigs(t *testing.T, c *Cluster, group string, kvs ...string) {
	t.Helper()
	var configs []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for i := 0; i+1 < len(kvs); i += 2 {
		configs = append(configs, groupConfigOp(kmsg.IncrementalAlterConfigOpSet, kvs[i], kvs[i+1]))
	}
	if code, msg := alterGroupConfigs(t, seedBroker(t, c.Addr), group, configs...); code != 0 {
		t.Fatalf("setting configs of %s: %v (%s)", group, kerr.ErrorForCode(code), msg)
	}
}

// shareConsumer is a franz-go share consumer of group on topic.
func shareConsumer(t *testing.T, c *Cluster, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// shareGroup makes a 2-partition topic holding n records and a share
// group reading it from the earliest offset, with extra group configs.
func shareGroup(t *testing.T, c *Cluster, name string, n int, configs ...string) (topic, group string) {
	t.Helper()
	topic, group = name, name+"-g"
	createTopic(t, c, topic, 2, nil)
	setGroupConfigs(t, c, group, append([]string{"share.auto.offset.reset", "earliest"}, configs...)...)
	produceValues(t, c, topic, 0, n)
	return topic, group
}

// pollUntil polls cl until done says so or the test's patience ends,
// handing each record to take, which says how to acknowledge it.
func pollUntil(t *testing.T, cl *kgo.Client, done func() bool, take func(r *kgo.Record) kgo.AckStatus) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("gave up waiting for share deliveries")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { r.Ack(take(r)) })
	}
}

// Four share consumers on two partitions: every record is delivered and
// accepted exactly once, and the partitions are shared (more consumers
// than partitions get records).
func TestShareGroupSharesPartitions(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const n = 400
	topic, group := shareGroup(t, c, "share-spread", n)
	var mu sync.Mutex
	seen := map[string]int{}
	by := map[int]int{}
	total := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	}
	var wg sync.WaitGroup
	for i := range 4 {
		cl := shareConsumer(t, c, group, topic, kgo.ShareMaxRecords(10))
		wg.Add(1)
		go func() {
			defer wg.Done()
			pollUntil(t, cl, total, func(r *kgo.Record) kgo.AckStatus {
				mu.Lock()
				seen[string(r.Value)]++
				by[i]++
				mu.Unlock()
				time.Sleep(time.Millisecond) // work, so that the others get their share
				return kgo.AckAccept
			})
		}()
	}
	wg.Wait()
	for v, k := range seen {
		if k != 1 {
			t.Errorf("%s delivered %d times", v, k)
		}
	}
	if len(by) < 3 {
		t.Errorf("records went to %d of 4 consumers (%v): the 2 partitions were not shared", len(by), by)
	}
}

// Released records come back with their delivery count raised; rejected
// ones never do; a record released up to group.share.delivery.count.limit
// times is archived. The share metrics count every event.
func TestShareGroupReleaseRejectArchive(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := startCluster(t, func(cfg *gateway.Config) { cfg.Registry = reg })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	const n = 30
	topic, group := shareGroup(t, c, "share-acks", n)
	cl := shareConsumer(t, c, group, topic)
	counts := map[string][]int32{}
	deliveries := 0
	pollUntil(t, cl, func() bool { return deliveries >= n*2 && settled(counts, n) }, func(r *kgo.Record) kgo.AckStatus {
		v := string(r.Value)
		counts[v] = append(counts[v], r.DeliveryCount())
		deliveries++
		i, _ := strconv.Atoi(v[1:])
		switch {
		case i%3 == 0:
			return kgo.AckReject
		case i%3 == 1:
			return kgo.AckRelease // until the limit archives it
		}
		if r.DeliveryCount() == 1 {
			return kgo.AckRelease
		}
		return kgo.AckAccept
	})
	// Nothing more may come: poll a little longer.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	fs := cl.PollFetches(ctx)
	cancel()
	fs.EachRecord(func(r *kgo.Record) {
		t.Errorf("%s delivered again (count %d) after it was done", r.Value, r.DeliveryCount())
	})
	for v, cs := range counts {
		i, _ := strconv.Atoi(v[1:])
		want := []int32{1}
		switch i % 3 {
		case 1:
			want = []int32{1, 2, 3, 4, 5}
		case 2:
			want = []int32{1, 2}
		}
		if fmt.Sprint(cs) != fmt.Sprint(want) {
			t.Errorf("%s delivered with counts %v, want %v", v, cs, want)
		}
	}
	// 10 records rejected at once, 10 released five times, 10 released
	// once then accepted: 80 deliveries; the last acknowledgements may
	// still be on their way.
	want := map[string]float64{"acquired": 80, "accepted": 10, "released": 60, "rejected": 10, "renewed": 0}
	deadline := time.Now().Add(10 * time.Second)
	for {
		text := scrape(t, srv.URL+"/metrics")
		got := map[string]float64{}
		for event := range want {
			got[event], _ = sample(text, "disgw_share_records_total", "event", event)
		}
		writes, _ := sample(text, "disgw_share_state_writes_total", "result", "written")
		if fmt.Sprint(got) == fmt.Sprint(want) && writes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("disgw_share_records_total %v, want %v; %v state writes", got, want, writes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settled reports whether all n records were seen and every one is done:
// rejected (i%3 == 0, once), released to the limit (i%3 == 1, five
// times), released once and accepted (i%3 == 2, twice).
func settled(counts map[string][]int32, n int) bool {
	if len(counts) != n {
		return false
	}
	for v, cs := range counts {
		i, _ := strconv.Atoi(v[1:])
		if want := []int{1, 5, 2}[i%3]; len(cs) < want {
			return false
		}
	}
	return true
}

// A member that stops acknowledging loses its records when the lock
// expires, and another consumer gets them with delivery count 2; a
// consumer that closes releases what it held at once.
func TestShareGroupLockTimeoutAndClose(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const n = 20
	topic, group := shareGroup(t, c, "share-locks", n, "share.record.lock.duration.ms", "2000")
	// The stuck member acquires with one ShareFetch and is never heard
	// of again (a franz-go consumer would go on fetching in the
	// background).
	held := acquireRaw(t, c, group, "stuck", topic)
	if held == 0 {
		t.Fatal("the stuck member acquired nothing")
	}
	other := shareConsumer(t, c, group, topic)
	redelivered := 0
	began := time.Now()
	pollUntil(t, other, func() bool { return redelivered >= held }, func(r *kgo.Record) kgo.AckStatus {
		if r.DeliveryCount() == 2 {
			redelivered++
		}
		return kgo.AckAccept
	})
	if redelivered != held {
		t.Errorf("%d records delivered a second time, want the %d the stuck member held", redelivered, held)
	}
	if waited := time.Since(began); waited < time.Second {
		t.Errorf("held records came back after %v, before their 2 s lock expired", waited)
	}

	// Close: a consumer's unacknowledged records go back at once, long
	// before the default 30 s lock would expire.
	topic2, group2 := shareGroup(t, c, "share-close", n)
	first := shareConsumer(t, c, group2, topic2)
	got := 0
	pollUntil(t, first, func() bool { return got > 0 }, func(*kgo.Record) kgo.AckStatus {
		got++
		return kgo.AckRenew
	})
	first.Close()
	second := shareConsumer(t, c, group2, topic2)
	again := 0
	began = time.Now()
	pollUntil(t, second, func() bool { return again >= got }, func(r *kgo.Record) kgo.AckStatus {
		if r.DeliveryCount() == 2 {
			again++
		}
		return kgo.AckAccept
	})
	if waited := time.Since(began); waited > 20*time.Second {
		t.Errorf("a closed consumer's records came back after %v: not released on close", waited)
	}
}

// acquireRaw acquires records of topic's partitions for member of group
// with one ShareFetch per partition, and returns how many.
func acquireRaw(t *testing.T, c *Cluster, group, member, topic string) int {
	t.Helper()
	b := seedBroker(t, c.Addr)
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	resp, err := b.Request(testContext(t, 10*time.Second), md)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.(*kmsg.MetadataResponse).Topics[0].TopicID
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
	req.MaxWaitMillis, req.MinBytes = 2000, 1
	rt := kmsg.ShareFetchRequestTopic{TopicID: id}
	for p := range int32(2) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.ShareFetchRequestTopic{rt}
	fr, err := b.Request(testContext(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ft := range fr.(*kmsg.ShareFetchResponse).Topics {
		for _, fp := range ft.Partitions {
			for _, a := range fp.AcquiredRecords {
				n += int(a.LastOffset - a.FirstOffset + 1)
			}
		}
	}
	return n
}

// A gateway restarted while a member holds records: what was accepted
// stays done, and what was held comes back at once, not when its 30 s lock
// would have expired (locks do not outlive the gateway).
func TestShareGroupGatewayRestartRedelivers(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const n = 60
	topic, group := shareGroup(t, c, "share-restart", n)
	cl := shareConsumer(t, c, group, topic, kgo.ShareMaxRecords(10))
	accepted := map[string]bool{}
	pollUntil(t, cl, func() bool { return len(accepted) >= 20 }, func(r *kgo.Record) kgo.AckStatus {
		accepted[string(r.Value)] = true
		return kgo.AckAccept
	})
	if err := cl.FlushAcks(context.Background()); err != nil {
		t.Fatalf("flush acks: %v", err)
	}
	cl.Close() // what it held beyond the accepted is released
	held := acquireRaw(t, c, group, "stuck", topic)
	if held == 0 {
		t.Fatal("the stuck member acquired nothing")
	}
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	after := shareConsumer(t, c, group, topic)
	seen := map[string]bool{}
	pollUntil(t, after, func() bool { return len(seen)+len(accepted) >= n }, func(r *kgo.Record) kgo.AckStatus {
		v := string(r.Value)
		if accepted[v] {
			t.Errorf("%s delivered again after it was accepted", v)
		}
		seen[v] = true
		return kgo.AckAccept
	})
	if waited := time.Since(began); waited > 20*time.Second {
		t.Errorf("the records held at the restart came back after %v", waited)
	}
}

// Under share.isolation.level=read_committed a share group never gets the
// records of an aborted transaction; under read_uncommitted it does.
func TestShareGroupReadCommitted(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	topic := "share-txn"
	createTopic(t, c, topic, 2, nil)
	txn := newClient(t, c, kgo.TransactionalID("share-txn-producer"), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, commit := range []bool{false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			v := fmt.Sprintf("%v-%d", commit, i)
			if err := txn.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	for _, level := range []string{"read_committed", "read_uncommitted"} {
		group := "share-txn-" + level
		setGroupConfigs(t, c, group, "share.auto.offset.reset", "earliest", "share.isolation.level", level)
		cl := shareConsumer(t, c, group, topic)
		seen := map[string]bool{}
		want := 10
		if level == "read_uncommitted" {
			want = 20
		}
		pollUntil(t, cl, func() bool { return len(seen) >= want }, func(r *kgo.Record) kgo.AckStatus {
			seen[string(r.Value)] = true
			return kgo.AckAccept
		})
		for v := range seen {
			if level == "read_committed" && v[:5] == "false" {
				t.Errorf("read_committed share group got %s of an aborted transaction", v)
			}
		}
	}
}

// Three gateway processes; the one leading a partition, and so holding its
// share-partition, is killed with SIGKILL while two share consumers work
// through the topic. Every record is delivered and accepted in the end,
// and none whose acceptance was answered is delivered again: an answered
// acknowledgement was durable. (An acceptance whose answer was lost in the
// kill may have landed, and its record then never comes back.)
func TestShareGroupKillGateway(t *testing.T) {
	// Not parallel: like the failover tests, it needs the survivors to
	// take over within a failover budget.
	tr := startGatewayTrio(t)
	ctx := testContext(t, 3*time.Minute)
	const topic, group, n = "share-kill", "share-kill-g", 600
	adm := kadm.NewClient(clientAt(t, tr.addrs))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	producer := clientAt(t, tr.addrs, kgo.DefaultProduceTopic(topic))
	var recs []*kgo.Record
	for i := range n {
		v := fmt.Sprintf("v%d", i)
		recs = append(recs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code, msg := alterGroupConfigs(t, seedBroker(t, tr.addrs[0]), group, groupConfigOp(kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("share.auto.offset.reset: %v (%s)", kerr.ErrorForCode(code), msg)
	}
	time.Sleep(1500 * time.Millisecond) // other gateways cache group configs for 1 s
	victim := ownerAmong(cluster.PartitionKey(topic, 0), 3)

	var mu sync.Mutex
	confirmed := map[string]bool{}
	delivered := map[string]bool{}
	redelivered := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		// A partition's failed acknowledgements, counted by the callback;
		// a flush whose count did not move was answered.
		var ackErrs [2]atomic.Int64
		cl := clientAt(t, tr.addrs, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(20),
			kgo.ShareAckCallback(func(_ *kgo.Client, res kgo.ShareAckResults) {
				for _, r := range res {
					if r.Err != nil {
						ackErrs[r.Partition].Add(1)
					}
				}
			}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollFetches(pctx)
				cancel()
				var polled []*kgo.Record
				fs.EachRecord(func(r *kgo.Record) {
					r.Ack(kgo.AckAccept)
					polled = append(polled, r)
				})
				if len(polled) == 0 {
					continue
				}
				before := [2]int64{ackErrs[0].Load(), ackErrs[1].Load()}
				if err := cl.FlushAcks(ctx); err != nil {
					return
				}
				mu.Lock()
				for _, r := range polled {
					v := string(r.Value)
					if confirmed[v] {
						t.Errorf("%s delivered again (count %d) after its acceptance was answered", v, r.DeliveryCount())
					}
					if r.DeliveryCount() > 1 {
						redelivered++
					}
					delivered[v] = true
					if ackErrs[r.Partition].Load() == before[r.Partition] {
						confirmed[v] = true
					}
				}
				mu.Unlock()
			}
		}()
	}
	progress := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered)
	}
	deadline := time.Now().Add(60 * time.Second)
	for progress() < n/4 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d records accepted before the kill", progress(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr.kill(t, int(victim))
	deadline = time.Now().Add(90 * time.Second)
	for progress() < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if got := progress(); got < n {
		t.Fatalf("%d of %d records delivered within 90 s of killing gateway %d", got, n, victim)
	}
	t.Logf("gateway %d killed after %d deliveries; %d of %d acceptances answered; %d deliveries were redeliveries", victim, n/4, len(confirmed), n, redelivered)
}

// ShareFetch and ShareAcknowledge need READ on the group (else the whole
// request is GROUP_AUTHORIZATION_FAILED) and READ on each topic (else
// that partition is TOPIC_AUTHORIZATION_FAILED).
func TestShareFetchACLs(t *testing.T) {
	t.Parallel()
	c := startACLCluster(t)
	ctx := context.Background()
	adm := kadm.NewClient(aclClient(t, c, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "sf-acl"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "sf-acl")
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["sf-acl"].ID
	addr := c.Gateway.ListenerAddr(gateway.SASLPlaintext).String()
	bob := seedBroker(t, addr, aclClientOpts("bob")...)
	fetch := func() *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr("sf-acl-g"), kmsg.StringPtr("bob-0")
		p := kmsg.NewShareFetchRequestTopicPartition()
		req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{p}}}
		resp, err := bob.Request(testContext(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ShareFetchResponse)
	}
	acknowledge := func() *kmsg.ShareAcknowledgeResponse {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sf-acl-g"), kmsg.StringPtr("bob-0"), 1
		p := kmsg.NewShareAcknowledgeRequestTopicPartition()
		p.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}
		req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{p}}}
		resp, err := bob.Request(testContext(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ShareAcknowledgeResponse)
	}
	if resp := fetch(); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("share fetch without READ on the group: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Groups("sf-acl-g").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	resp := fetch()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("share fetch without READ on the topic: %v %+v, want TOPIC_AUTHORIZATION_FAILED on its partition", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
	if resp := acknowledge(); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("share acknowledge without READ on the topic: %v %+v, want TOPIC_AUTHORIZATION_FAILED on its partition", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
}

// A topic deleted and created again under its name is another topic to a
// share group, as Kafka's topic ids make it: the group starts it afresh
// (share.auto.offset.reset) rather than taking offsets done in the old
// one as done in the new.
func TestShareGroupTopicRecreated(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const n = 10
	topic, group := shareGroup(t, c, "share-recreated", n)
	first := shareConsumer(t, c, group, topic)
	got := 0
	pollUntil(t, first, func() bool { return got >= n }, func(*kgo.Record) kgo.AckStatus {
		got++
		return kgo.AckAccept
	})
	if err := first.FlushAcks(context.Background()); err != nil {
		t.Fatal(err)
	}
	first.Close()
	adm := kadm.NewClient(newClient(t, c))
	if _, err := adm.DeleteTopic(testContext(t, 10*time.Second), topic); err != nil {
		t.Fatal(err)
	}
	createTopic(t, c, topic, 2, nil)
	produceValues(t, c, topic, 0, n/2)
	second := shareConsumer(t, c, group, topic)
	again := map[string]bool{}
	pollUntil(t, second, func() bool { return len(again) >= n/2 }, func(r *kgo.Record) kgo.AckStatus {
		if r.DeliveryCount() != 1 {
			t.Errorf("%s of the new topic delivered with count %d", r.Value, r.DeliveryCount())
		}
		again[string(r.Value)] = true
		return kgo.AckAccept
	})
}

// Two passthrough tenants signed in with keys of one DIS project share its
// streams, the share state topic among them, but not their share groups:
// each tenant's group "g" reads the one topic from the start on its own,
// and after a gateway restart each goes on from where it was.
func TestShareGroupsPassthroughTenantsApart(t *testing.T) {
	t.Parallel()
	c, _, _ := startPassthroughCluster(t)
	ctx := testContext(t, 60*time.Second)
	const topic, n = "share-tenants", 20
	if _, err := kadm.NewClient(passthroughClient(t, c, tenant1AK, tenant1SK)).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	producer := passthroughClient(t, c, tenant1AK, tenant1SK, kgo.DefaultProduceTopic(topic))
	for i := range n {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tenants := [][2]string{{tenant1AK, tenant1SK}, {tenant2AK, tenant2SK}}
	addr := c.Gateway.ListenerAddr(gateway.SASLPlaintext).String()
	for _, tn := range tenants {
		b := seedBroker(t, addr, kgo.SASL(plain.Auth{User: tn[0], Pass: tn[1]}.AsMechanism()))
		if code, msg := alterGroupConfigs(t, b, "g", groupConfigOp(kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", "earliest")); code != 0 {
			t.Fatalf("share.auto.offset.reset for %s: %v (%s)", tn[0], kerr.ErrorForCode(code), msg)
		}
	}
	// Each tenant accepts half the records, in turn, so that their share
	// state records interleave in the state topic.
	consume := func(tn [2]string, want int, seen map[string]bool) {
		t.Helper()
		cl := passthroughClient(t, c, tn[0], tn[1], kgo.ShareGroup("g"), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(5))
		pollUntil(t, cl, func() bool { return len(seen) >= want }, func(r *kgo.Record) kgo.AckStatus {
			if seen[string(r.Value)] {
				t.Errorf("tenant %s: %s delivered again", tn[0], r.Value)
			}
			seen[string(r.Value)] = true
			return kgo.AckAccept
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}
	seen := []map[string]bool{{}, {}}
	for i, tn := range tenants {
		consume(tn, n/2, seen[i])
	}
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	for i, tn := range tenants {
		consume(tn, n, seen[i])
	}
}
