package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
)

// groupLedger records which records a group consumed, to find duplicates
// and gaps.
type groupLedger struct {
	mu   sync.Mutex
	seen map[string]string // value -> member that consumed it
	dups []string
}

func newLedger() *groupLedger { return &groupLedger{seen: map[string]string{}} }

func (l *groupLedger) add(member string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := string(r.Value)
	if prev, ok := l.seen[v]; ok {
		l.dups = append(l.dups, fmt.Sprintf("%s (by %s and %s)", v, prev, member))
		return
	}
	l.seen[v] = member
}

func (l *groupLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// groupMember is one franz-go group consumer that commits what it processed
// before it lets a rebalance happen, so the group consumes each record once.
type groupMember struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, c *Cluster, group, topic, name string, ledger *groupLedger, opts ...kgo.Opt) *groupMember {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(c.Addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ClientID(name),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{name: name, cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 500)
			fs.EachRecord(func(r *kgo.Record) { ledger.add(name, r) })
			if err := cl.CommitRecords(context.Background(), fs.Records()...); err != nil && ctx.Err() == nil {
				t.Errorf("%s: commit: %v", name, err)
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// stop ends the poll loop and closes the client (leaving the group).
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

func produceValues(t *testing.T, c *Cluster, topic string, from, to int) {
	t.Helper()
	cl := newClient(t, c, kgo.DefaultProduceTopic(topic))
	ctx := testContext(t, 60*time.Second)
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFranzGoGroupBalancers runs three members over six partitions with each
// of franz-go's balancers, then has one member leave and a new one join;
// every record is consumed exactly once across the group.
func TestFranzGoGroupBalancers(t *testing.T) {
	t.Parallel()
	balancers := map[string]kgo.GroupBalancer{
		"range":              kgo.RangeBalancer(),
		"roundrobin":         kgo.RoundRobinBalancer(),
		"sticky":             kgo.StickyBalancer(),
		"cooperative-sticky": kgo.CooperativeStickyBalancer(),
	}
	c := startCluster(t, nil)
	for name, balancer := range balancers {
		t.Run(name, func(t *testing.T) {
			topic, group := "grp-"+name, "group-"+name
			createTopic(t, c, topic, 6, nil)
			ledger := newLedger()
			produceValues(t, c, topic, 0, 600)
			var members []*groupMember
			for i := range 3 {
				members = append(members, startMember(t, c, group, topic, fmt.Sprintf("m%d", i), ledger, kgo.Balancers(balancer)))
			}
			waitFor(t, "the first 600 records", func() bool { return ledger.count() >= 600 })

			members[0].stop()
			produceValues(t, c, topic, 600, 1200)
			waitFor(t, "records after a member left", func() bool { return ledger.count() >= 1200 })

			members = append(members[1:], startMember(t, c, group, topic, "m3", ledger, kgo.Balancers(balancer)))
			produceValues(t, c, topic, 1200, 1800)
			waitFor(t, "records after a member joined", func() bool { return ledger.count() >= 1800 })
			for _, m := range members {
				m.stop()
			}
			if len(ledger.dups) > 0 {
				t.Fatalf("%d records consumed twice, e.g. %v", len(ledger.dups), ledger.dups[:min(5, len(ledger.dups))])
			}
			if n := ledger.count(); n != 1800 {
				t.Fatalf("consumed %d distinct records, want 1800", n)
			}
		})
	}
}

// TestGroupResumesAfterRestart commits, stops every consumer and the
// gateway, restarts both on the same data, and resumes exactly at the
// committed offsets.
func TestGroupResumesAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := startClusterIn(t, dir, nil)
	createTopic(t, c, "resume", 3, nil)
	produceValues(t, c, "resume", 0, 300)
	ledger := newLedger()
	m := startMember(t, c, "resumers", "resume", "first", ledger)
	waitFor(t, "the first 300 records", func() bool { return ledger.count() >= 300 })
	m.stop()
	produceValues(t, c, "resume", 300, 450)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, err := Start(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	adm := kadm.NewClient(newClient(t, c2))
	offsets, err := adm.FetchOffsets(testContext(t, 10*time.Second), "resumers")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 300 {
		t.Fatalf("committed offsets add up to %d after the restart, want 300", total)
	}
	m2 := startMember(t, c2, "resumers", "resume", "second", ledger)
	defer m2.stop()
	waitFor(t, "the 150 records produced after the commit", func() bool { return ledger.count() >= 450 })
	time.Sleep(300 * time.Millisecond) // any redelivery would show up by now
	if len(ledger.dups) > 0 || ledger.count() != 450 {
		t.Fatalf("after the restart: %d distinct records, duplicates %v", ledger.count(), ledger.dups)
	}
}

// TestStaticMemberRestart: a static member that comes back inside its
// session timeout keeps its partitions, and the other member sees no
// rebalance.
func TestStaticMemberRestart(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "static", 4, nil)
	var mu sync.Mutex
	var assigned map[string][]int32
	rebalancesOfB := 0
	ledger := newLedger()
	a := startMember(t, c, "statics", "static", "a", ledger, kgo.InstanceID("a"),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			assigned = m
			mu.Unlock()
		}))
	b := startMember(t, c, "statics", "static", "b", ledger, kgo.InstanceID("b"),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
			mu.Lock()
			rebalancesOfB++
			mu.Unlock()
		}))
	defer b.stop()
	produceValues(t, c, "static", 0, 100)
	waitFor(t, "both members consuming", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ledger.count() == 100 && len(assigned["static"]) == 2
	})
	mu.Lock()
	before := append([]int32(nil), assigned["static"]...)
	slices.Sort(before)
	revokesBefore := rebalancesOfB
	mu.Unlock()

	// Static members do not leave the group on close: the coordinator keeps
	// their place for the session timeout.
	a.stop()
	a = startMember(t, c, "statics", "static", "a", ledger, kgo.InstanceID("a"),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			assigned = m
			mu.Unlock()
		}))
	defer a.stop()
	produceValues(t, c, "static", 100, 200)
	waitFor(t, "the restarted member's records", func() bool { return ledger.count() == 200 })
	mu.Lock()
	defer mu.Unlock()
	after := append([]int32(nil), assigned["static"]...)
	slices.Sort(after)
	if !slices.Equal(after, before) {
		t.Fatalf("restarted static member got %v, had %v", assigned["static"], before)
	}
	if rebalancesOfB != revokesBefore {
		t.Fatalf("the other member went through %d rebalances while the static member restarted", rebalancesOfB-revokesBefore)
	}
}

// A group id DIS cannot hold as an app name is encoded; after a restart
// (no live members, nothing in memory) ListGroups and DescribeGroups still
// show the real id, and its offsets and metadata come back.
func TestEncodedGroupIDSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := startClusterIn(t, dir, nil)
	createTopic(t, c, "enc", 2, nil)
	const group = "team.payments:consumer/v1"
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 30*time.Second)
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "enc", Partition: 1, At: 7, Metadata: "meta-1", LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, err := Start(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	adm = kadm.NewClient(newClient(t, c2))
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed[group]; !ok {
		t.Fatalf("ListGroups after restart: %v, want %q", listed.Groups(), group)
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if d := described[group]; d.Err != nil || d.State != "Empty" {
		t.Fatalf("describe: state %q, %v", d.State, d.Err)
	}
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := fetched.Lookup("enc", 1)
	if !ok || o.At != 7 || o.Metadata != "meta-1" {
		t.Fatalf("offset after restart: %+v (found %v)", o, ok)
	}
	if _, ok := fetched.Lookup("enc", 0); ok {
		t.Fatal("a partition without a commit was listed")
	}
}

// Offset metadata beyond DIS's 1000 characters is refused per partition.
func TestOffsetMetadataTooLarge(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "meta", 1, nil)
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 30*time.Second)
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "meta", Partition: 0, At: 1, Metadata: strings.Repeat("m", 1001), LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, "meta-group", offsets)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resp.Error(), kerr.OffsetMetadataTooLarge) {
		t.Fatalf("commit with 1001 characters of metadata: %v, want OFFSET_METADATA_TOO_LARGE", resp.Error())
	}
}

// Deleting a group with live members is refused; once they are gone its
// offsets go with it.
func TestDeleteGroup(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "del", 2, nil)
	produceValues(t, c, "del", 0, 20)
	ledger := newLedger()
	m := startMember(t, c, "deleters", "del", "m", ledger)
	waitFor(t, "the records", func() bool { return ledger.count() == 20 })
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 30*time.Second)
	resp, err := adm.DeleteGroups(ctx, "deleters")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resp["deleters"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a group with a member: %v, want GROUP_NOT_EMPTY", resp["deleters"].Err)
	}
	m.stop()
	if resp, err = adm.DeleteGroups(ctx, "deleters"); err != nil || resp["deleters"].Err != nil {
		t.Fatalf("deleting the empty group: %v %v", err, resp["deleters"].Err)
	}
	fetched, err := adm.FetchOffsets(ctx, "deleters")
	if err != nil {
		t.Fatal(err)
	}
	if len(fetched) != 0 {
		t.Fatalf("offsets left after DeleteGroups: %v", fetched)
	}
}

// TestEmptyGroupOffsetsExpire: a group with no members whose last commit is
// older than the offsets retention (Kafka's offsets.retention.minutes)
// expires through the whole gateway: its DIS app goes, and OffsetFetch
// reads no offset.
func TestEmptyGroupOffsetsExpire(t *testing.T) {
	t.Parallel()
	c := startCluster(t, func(cfg *gateway.Config) { cfg.OffsetsRetention = 300 * time.Millisecond })
	ctx := testContext(t, 30*time.Second)
	createTopic(t, c, "expiring", 1, nil)
	adm := kadm.NewClient(newClient(t, c))
	offsets := kadm.Offsets{"expiring": {0: {Topic: "expiring", Partition: 0, At: 7, LeaderEpoch: -1}}}
	if resp, err := adm.CommitOffsets(ctx, "expiring-group", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	fetched := func() int64 {
		resp, err := adm.FetchOffsets(ctx, "expiring-group")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := resp.Lookup("expiring", 0); ok {
			return o.At
		}
		return -1
	}
	if got := fetched(); got != 7 {
		t.Fatalf("committed %d, want 7", got)
	}
	waitFor(t, "the group's DIS app to expire", func() bool {
		apps, err := c.Client.ListApps(ctx, 100, "", "")
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(apps.Apps, func(a disclient.App) bool { return a.AppName == "expiring-group" })
	})
	if got := fetched(); got != -1 {
		t.Fatalf("committed %d after expiry, want none", got)
	}
}
