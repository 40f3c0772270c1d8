package test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932) through franz-go's share consumer: delivery to
// one member at a time, acknowledgements, redelivery and archiving, over
// real sockets (docs/design.md §14).

// setGroupConfigs sets configs of group with IncrementalAlterConfigs on
// the GROUP resource, as kafka-configs.sh --entity-type groups does.
func setGroupConfigs(t *testing.T, cl *kgo.Client, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("IncrementalAlterConfigs %s: %v", group, err)
		}
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
	admin := newClient(t, c)
	setGroupConfigs(t, admin, group, append([]string{"share.auto.offset.reset", "earliest"}, configs...)...)
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
// times is archived.
func TestShareGroupReleaseRejectArchive(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
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

// A consumer that stops acknowledging loses its records when the lock
// expires, and another consumer gets them with delivery count 2; a
// consumer that closes releases what it held at once.
func TestShareGroupLockTimeoutAndClose(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const n = 20
	topic, group := shareGroup(t, c, "share-locks", n, "share.record.lock.duration.ms", "2000")
	stuck := shareConsumer(t, c, group, topic)
	held := 0
	pollUntil(t, stuck, func() bool { return held > 0 }, func(*kgo.Record) kgo.AckStatus {
		held++
		return kgo.AckRenew // neither done nor given back
	})
	other := shareConsumer(t, c, group, topic)
	redelivered := 0
	began := time.Now()
	pollUntil(t, other, func() bool { return redelivered == held }, func(r *kgo.Record) kgo.AckStatus {
		if r.DeliveryCount() == 2 {
			redelivered++
		}
		return kgo.AckAccept
	})
	if waited := time.Since(began); waited < time.Second {
		t.Errorf("held records came back after %v, before their 2 s lock expired", waited)
	}
	stuck.Close()

	// Close: a consumer's unacknowledged records go back at once.
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
	pollUntil(t, second, func() bool { return again == got }, func(r *kgo.Record) kgo.AckStatus {
		if r.DeliveryCount() == 2 {
			again++
		}
		return kgo.AckAccept
	})
	if waited := time.Since(began); waited > 25*time.Second {
		t.Errorf("a closed consumer's records came back after %v: not released on close", waited)
	}
}

// A gateway restarted while a consumer holds records: what was accepted
// stays done, what was held comes back, and nothing is lost.
func TestShareGroupGatewayRestartRedelivers(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const n = 60
	topic, group := shareGroup(t, c, "share-restart", n)
	cl := shareConsumer(t, c, group, topic, kgo.ShareMaxRecords(10))
	accepted := map[string]bool{}
	held := map[string]bool{}
	pollUntil(t, cl, func() bool { return len(accepted) >= 20 && len(held) > 0 }, func(r *kgo.Record) kgo.AckStatus {
		if len(accepted) < 20 {
			accepted[string(r.Value)] = true
			return kgo.AckAccept
		}
		held[string(r.Value)] = true
		return kgo.AckRenew
	})
	if err := cl.FlushAcks(context.Background()); err != nil {
		t.Fatalf("flush acks: %v", err)
	}
	cl.Close()
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
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
	for v := range held {
		if !seen[v] {
			t.Errorf("%s, held when the gateway restarted, never came back", v)
		}
	}
}

// Under share.isolation.level=read_committed a share group never gets the
// records of an aborted transaction; under read_uncommitted it does.
func TestShareGroupReadCommitted(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	topic := "share-txn"
	createTopic(t, c, topic, 2, nil)
	admin := newClient(t, c)
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
		setGroupConfigs(t, admin, group, "share.auto.offset.reset", "earliest", "share.isolation.level", level)
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
