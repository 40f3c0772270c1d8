package test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
)

// startGateways starts n gateways over one embedded DIS, every one live in
// every gateway's view.
func startGateways(t *testing.T, n int) *Cluster {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, Gateways: n})
	if err != nil {
		t.Fatalf("start %d gateways: %v", n, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	return c
}

// clientAt is a franz-go client bootstrapped at the given addresses only.
func clientAt(t *testing.T, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// ownerOf is the owner of key when every one of n gateways is live, as
// every gateway's Membership computes it.
func ownerOf(c *Cluster, key string) int32 { return c.Members[0].Owner(key).ID }

// nameOwnedBy is the first of prefix-0, prefix-1, … whose key (made by
// keyOf) n live gateways give to owner.
func nameOwnedBy(c *Cluster, prefix string, owner int32, keyOf func(string) string) string {
	for i := 0; ; i++ {
		name := prefix + "-" + strconv.Itoa(i)
		if ownerOf(c, keyOf(name)) == owner {
			return name
		}
	}
}

// TestMultiGatewayMetadataAndOwners: every gateway lists the three as
// brokers, itself as controller, and the same owner as each partition's
// leader and each group's coordinator; a non-owner answers produce and
// fetch NOT_LEADER_OR_FOLLOWER with the owner as current leader, and the
// group APIs NOT_COORDINATOR.
func TestMultiGatewayMetadataAndOwners(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const topic = "multi-meta"
	const partitions = 12
	createTopic(t, c, topic, partitions, nil)

	var leaders []int32
	for i, addr := range c.Addrs {
		rc := dialRaw(t, addr)
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
		if resp.ControllerID != int32(i) {
			t.Errorf("gateway %d: controller %d, want itself", i, resp.ControllerID)
		}
		if len(resp.Brokers) != 3 {
			t.Fatalf("gateway %d lists %d brokers, want 3", i, len(resp.Brokers))
		}
		for _, b := range resp.Brokers {
			if got := b.Host + ":" + strconv.Itoa(int(b.Port)); got != c.Addrs[b.NodeID] {
				t.Errorf("gateway %d: broker %d at %s, want %s", i, b.NodeID, got, c.Addrs[b.NodeID])
			}
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != partitions {
			t.Fatalf("gateway %d: topic metadata %+v", i, resp.Topics)
		}
		got := make([]int32, partitions)
		for _, p := range resp.Topics[0].Partitions {
			if !slices.Equal(p.Replicas, []int32{p.Leader}) || !slices.Equal(p.ISR, []int32{p.Leader}) || p.LeaderEpoch != 0 {
				t.Errorf("gateway %d partition %d: leader %d replicas %v isr %v epoch %d", i, p.Partition, p.Leader, p.Replicas, p.ISR, p.LeaderEpoch)
			}
			got[p.Partition] = p.Leader
		}
		if leaders == nil {
			leaders = got
		} else if !slices.Equal(got, leaders) {
			t.Fatalf("gateway %d names leaders %v, gateway 0 %v", i, got, leaders)
		}
	}
	for p, l := range leaders {
		if want := ownerOf(c, cluster.PartitionKey(topic, int32(p))); l != want {
			t.Fatalf("partition %d led by %d, its owner is %d", p, l, want)
		}
	}
	if !slices.Contains(leaders, 0) || !slices.Contains(leaders, 1) || !slices.Contains(leaders, 2) {
		t.Fatalf("leaders %v: every gateway should lead some of %d partitions", leaders, partitions)
	}

	// Produce and fetch at the owner and at a non-owner of partition 0.
	owner := leaders[0]
	other := (owner + 1) % 3
	rcOwner, rcOther := dialRaw(t, c.Addrs[owner]), dialRaw(t, c.Addrs[other])
	if pr := rcOwner.roundTrip(produceReq(11, topic, 0, testBatch(-1, -1, -1, time.Now().UnixMilli(), "a"))).(*kmsg.ProduceResponse); pr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce at the owner: %v", kerr.ErrorForCode(pr.Topics[0].Partitions[0].ErrorCode))
	}
	for _, v := range []int16{9, 11} {
		pr := rcOther.roundTrip(produceReq(v, topic, 0, testBatch(-1, -1, -1, time.Now().UnixMilli(), "b"))).(*kmsg.ProduceResponse)
		sp := pr.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("produce v%d at a non-owner: %v, want NOT_LEADER_OR_FOLLOWER", v, kerr.ErrorForCode(sp.ErrorCode))
		}
		if v >= 10 && (sp.CurrentLeader.LeaderID != owner || len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != owner ||
			pr.Brokers[0].Host+":"+strconv.Itoa(int(pr.Brokers[0].Port)) != c.Addrs[owner]) {
			t.Fatalf("produce v%d at a non-owner: current leader %+v, brokers %+v, want %d at %s", v, sp.CurrentLeader, pr.Brokers, owner, c.Addrs[owner])
		}
	}
	fr := rcOther.roundTrip(fetchReq(12, topic, [16]byte{}, 0, 0)).(*kmsg.FetchResponse)
	if sp := fr.Topics[0].Partitions[0]; sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != owner || len(sp.RecordBatches) != 0 {
		t.Fatalf("fetch at a non-owner: %v, current leader %d, %d bytes", kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader.LeaderID, len(sp.RecordBatches))
	}
	if fr := rcOwner.roundTrip(fetchReq(12, topic, [16]byte{}, 0, 0)).(*kmsg.FetchResponse); fr.Topics[0].Partitions[0].ErrorCode != 0 || fr.Topics[0].Partitions[0].HighWatermark != 1 {
		t.Fatalf("fetch at the owner: %v, high watermark %d", kerr.ErrorForCode(fr.Topics[0].Partitions[0].ErrorCode), fr.Topics[0].Partitions[0].HighWatermark)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if got := rcOther.roundTrip(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
		t.Fatalf("list offsets at a non-owner: %v", kerr.ErrorForCode(got))
	}

	// A group: FindCoordinator names its owner everywhere; the others
	// refuse its group APIs.
	const group = "multi-meta-group"
	coord := ownerOf(c, cluster.GroupKey(group))
	for i, addr := range c.Addrs {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version = 4
		fc.CoordinatorKeys = []string{group}
		resp := dialRaw(t, addr).roundTrip(fc).(*kmsg.FindCoordinatorResponse)
		if co := resp.Coordinators[0]; co.ErrorCode != 0 || co.NodeID != coord || co.Host+":"+strconv.Itoa(int(co.Port)) != c.Addrs[coord] {
			t.Fatalf("gateway %d: coordinator %+v, want %d at %s", i, co, coord, c.Addrs[coord])
		}
	}
	nc := dialRaw(t, c.Addrs[(coord+1)%3])
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 9
	join.Group = group
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	if got := nc.roundTrip(join).(*kmsg.JoinGroupResponse).ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("join at a non-coordinator: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got))
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, "cg-member", 10_000
	hb.SubscribedTopicNames, hb.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if got := nc.roundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("consumer heartbeat at a non-coordinator: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got))
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{group}
	if got := nc.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("consumer group describe at a non-coordinator: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got))
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 8
	oc.Group, oc.Generation = group, -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = topic
	ot.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, ot)
	if got := nc.roundTrip(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("commit at a non-coordinator: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got))
	}
	if got := dialRaw(t, c.Addrs[coord]).roundTrip(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; got != 0 {
		t.Fatalf("commit at the coordinator: %v", kerr.ErrorForCode(got))
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 8
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group}}
	if got := nc.roundTrip(of).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("offset fetch at a non-coordinator: %v, want NOT_COORDINATOR", kerr.ErrorForCode(got))
	}
	// kadm asks every broker for its groups: the group is listed once.
	groups, err := kadm.NewClient(clientAt(t, c.Addrs)).ListGroups(testContext(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := groups[group]; !ok || g.Coordinator != coord {
		t.Fatalf("ListGroups: %+v, want %s at %d", groups, group, coord)
	}
}

// TestMultiGatewayProduceConsume: records produced through each gateway's
// bootstrap address are read back through another's, once and in order.
func TestMultiGatewayProduceConsume(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const topic = "multi-any"
	createTopic(t, c, topic, 6, nil)
	const perGateway = 300
	for i, addr := range c.Addrs {
		cl := clientAt(t, []string{addr}, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		var recs []*kgo.Record
		for j := range perGateway {
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "g%d-%04d", i, j)})
		}
		if err := cl.ProduceSync(testContext(t, 30*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("produce through gateway %d: %v", i, err)
		}
	}
	for i := range c.Addrs {
		cl := clientAt(t, []string{c.Addrs[(i+1)%3]}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		seen := map[string]bool{}
		last := map[int32]int64{}
		ctx := testContext(t, 30*time.Second)
		for len(seen) < 3*perGateway {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records through gateway %d", len(seen), 3*perGateway, (i+1)%3)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if seen[string(r.Value)] {
					t.Fatalf("record %s read twice", r.Value)
				}
				if prev, ok := last[r.Partition]; ok && r.Offset != prev+1 {
					t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
				}
				seen[string(r.Value)], last[r.Partition] = true, r.Offset
			})
		}
	}
}

// TestMultiGatewayGroupAssignment: franz-go members of one group, each
// bootstrapped at another gateway, find the one coordinator, get disjoint
// partitions that cover the topic, and consume every record once.
func TestMultiGatewayGroupAssignment(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const topic, group = "multi-group", "multi-group"
	createTopic(t, c, topic, 6, nil)
	produceValues(t, c, topic, 0, 600)
	ledger := newLedger()
	var members []*groupMember
	for i := range 3 {
		members = append(members, startMember(t, c, group, topic, fmt.Sprintf("m%d", i), ledger, kgo.SeedBrokers(c.Addrs[i])))
	}
	waitFor(t, "600 records through the group", func() bool { return ledger.count() >= 600 })
	adm := kadm.NewClient(clientAt(t, c.Addrs[2:]))
	waitFor(t, "three members with disjoint partitions covering all six", func() bool {
		described, err := adm.DescribeGroups(testContext(t, 10*time.Second), group)
		if err != nil || described[group].Err != nil || len(described[group].Members) != 3 {
			return false
		}
		var got []int32
		for _, m := range described[group].Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return false
			}
			for _, tp := range ca.Topics {
				got = append(got, tp.Partitions...)
			}
		}
		slices.Sort(got)
		return slices.Equal(got, []int32{0, 1, 2, 3, 4, 5})
	})
	for _, m := range members {
		m.stop()
	}
	if len(ledger.dups) > 0 {
		t.Fatalf("records consumed twice: %v", ledger.dups)
	}
}

// TestMultiGatewaySaramaGroup: sarama group members bootstrapped at
// different gateways share the partitions and consume every record once.
func TestMultiGatewaySaramaGroup(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const topic = "multi-sarama"
	createTopic(t, c, topic, 4, nil)
	produceValues(t, c, topic, 0, 400)
	ledger := newLedger()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 2 {
		cfg := saramaConfig()
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
		cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
		cfg.Consumer.Group.Session.Timeout = 6 * time.Second
		g, err := sarama.NewConsumerGroup([]string{c.Addrs[i+1]}, "multi-sarama-grp", cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer g.Close()
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, saramaHandler{fmt.Sprint(i), ledger}); err != nil && ctx.Err() == nil {
					t.Errorf("consume: %v", err)
					return
				}
			}
		}()
	}
	waitFor(t, "400 records through the sarama group", func() bool { return ledger.count() >= 400 })
	cancel()
	wg.Wait()
	if len(ledger.dups) > 0 {
		t.Fatalf("records consumed twice: %v", ledger.dups)
	}
}

// TestMultiGatewaySplitBrain: two gateways both believe they own partition
// 0 (their Memberships disagree) while an idempotent acks=all producer
// writes through each, both at once. Reading the partition back finds
// offsets dense and used once, and every acknowledged record exactly once,
// at the offset it was acknowledged with (docs/design.md §6, fencing).
func TestMultiGatewaySplitBrain(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 2)
	const topic = "multi-split"
	createTopic(t, c, topic, 1, nil)
	key := cluster.PartitionKey(topic, 0)
	c.Members[0].Pin(key, 0)
	c.Members[1].Pin(key, 1)

	type producer struct {
		rc  *rawConn
		pid int64
		seq int32
	}
	var ps []*producer
	for _, addr := range c.Addrs {
		rc := dialRaw(t, addr)
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.Version = 4
		ip.ProducerID, ip.ProducerEpoch = -1, -1
		resp := rc.roundTrip(ip).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("init producer id: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		ps = append(ps, &producer{rc: rc, pid: resp.ProducerID})
	}
	acked := map[string]int64{} // value → offset
	const rounds = 150
	for round := range rounds {
		// Both gateways write at once: send to each, then read both.
		corrs := make([]int32, len(ps))
		values := make([][]string, len(ps))
		for i, p := range ps {
			for k := range 1 + round%3 {
				values[i] = append(values[i], fmt.Sprintf("p%d-%03d-%d", i, round, k))
			}
			req := produceReq(9, topic, 0, testBatch(p.pid, 0, p.seq, time.Now().UnixMilli(), values[i]...))
			p.seq += int32(len(values[i]))
			corrs[i] = p.rc.send(req)
		}
		for i, p := range ps {
			resp := &kmsg.ProduceResponse{Version: 9}
			p.rc.read(corrs[i], resp)
			sp := resp.Topics[0].Partitions[0]
			if sp.ErrorCode != 0 {
				t.Fatalf("round %d, producer %d: %v", round, i, kerr.ErrorForCode(sp.ErrorCode))
			}
			for k, v := range values[i] {
				acked[v] = sp.BaseOffset + int64(k)
			}
		}
	}

	// The two really wrote at once: their offsets interleave.
	lo, hi := [2]int64{1 << 62, 1 << 62}, [2]int64{-1, -1}
	for v, off := range acked {
		i := v[1] - '0'
		lo[i], hi[i] = min(lo[i], off), max(hi[i], off)
	}
	if lo[0] > hi[1] || lo[1] > hi[0] {
		t.Fatalf("offsets of the two producers do not interleave: %d–%d and %d–%d", lo[0], hi[0], lo[1], hi[1])
	}

	cl := clientAt(t, c.Addrs[:1], kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx := testContext(t, 30*time.Second)
	var next int64
	seen := map[string]bool{}
	for next < int64(len(acked)) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", next, len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			switch off, ok := acked[v]; {
			case r.Offset != next:
				t.Fatalf("record %s at offset %d, want the dense next %d", v, r.Offset, next)
			case seen[v]:
				t.Fatalf("record %s read twice", v)
			case !ok:
				t.Fatalf("record %s at %d was never acknowledged", v, r.Offset)
			case off != r.Offset:
				t.Fatalf("record %s at offset %d, acknowledged at %d", v, r.Offset, off)
			}
			seen[v] = true
			next++
		})
	}
}

// TestMultiGatewayOwnershipMove takes a gateway that leads partitions and
// coordinates the group out of the others' live sets, and stops it, while
// an idempotent producer and a three-member group run. Production and
// consumption go on through the two left; every acknowledged record is
// stored once, at its acknowledged offset, and consumed; committed offsets
// never go backwards.
func TestMultiGatewayOwnershipMove(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	topic := nameOwnedBy(c, "move", 2, func(n string) string { return cluster.PartitionKey(n, 0) })
	group := nameOwnedBy(c, "move-group", 2, cluster.GroupKey)
	const partitions = 6
	createTopic(t, c, topic, partitions, nil)
	type loc struct {
		p   int32
		off int64
	}
	var mu sync.Mutex
	acked := map[string]loc{}
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	// The producer: idempotent and acks=all, franz-go's defaults.
	prodCtx, stopProducing := context.WithCancel(ctx)
	prod := clientAt(t, c.Addrs, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; prodCtx.Err() == nil; n += 10 {
			var recs []*kgo.Record
			for i := n; i < n+10; i++ {
				recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "v%06d", i)})
			}
			for _, r := range prod.ProduceSync(ctx, recs...) {
				if r.Err != nil {
					t.Logf("produce %s: %v", r.Record.Value, r.Err)
					continue
				}
				mu.Lock()
				acked[string(r.Record.Value)] = loc{r.Record.Partition, r.Record.Offset}
				mu.Unlock()
			}
		}
	}()
	// The group: three members, each bootstrapped at another gateway
	// first; a commit refused while the coordinator moves is left to the
	// next one.
	ledger := newLedger()
	for i := range 3 {
		seeds := append(slices.Clone(c.Addrs[i:]), c.Addrs[:i]...)
		cl := clientAt(t, seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(fmt.Sprint("m", i)),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 500)
				fs.EachRecord(func(r *kgo.Record) { ledger.add(fmt.Sprint("m", i), r) })
				if err := cl.CommitRecords(ctx, fs.Records()...); err != nil && ctx.Err() == nil {
					t.Logf("m%d: commit: %v", i, err)
				}
				cl.AllowRebalance()
			}
			cl.Close()
		}()
	}
	// Committed offsets, sampled through the gateways that stay.
	var backwards []string
	adm := kadm.NewClient(clientAt(t, c.Addrs[:2]))
	wg.Add(1)
	go func() {
		defer wg.Done()
		high := map[int32]int64{}
		for ctx.Err() == nil {
			fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
			offs, err := adm.FetchOffsets(fctx, group)
			fcancel()
			if err == nil {
				offs.Each(func(o kadm.OffsetResponse) {
					if o.Err == nil && o.At < high[o.Partition] {
						mu.Lock()
						backwards = append(backwards, fmt.Sprintf("partition %d: %d after %d", o.Partition, o.At, high[o.Partition]))
						mu.Unlock()
					}
					high[o.Partition] = max(high[o.Partition], o.At)
				})
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	waitFor(t, "the group consuming", func() bool { return ackedCount() >= 500 && ledger.count() >= 300 })
	c.Members[0].SetLive(0, 1)
	c.Members[1].SetLive(0, 1)
	if err := c.CloseGateway(2); err != nil {
		t.Fatalf("close gateway 2: %v", err)
	}
	moved := ackedCount()
	waitFor(t, "production through the two left", func() bool { return ackedCount() >= moved+1000 })
	stopProducing()
	waitFor(t, "the group consuming every acknowledged record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		for v := range acked {
			if _, ok := ledger.seen[v]; !ok {
				return false
			}
		}
		return true
	})
	cancel()
	wg.Wait()
	if len(backwards) > 0 {
		t.Fatalf("committed offsets went backwards: %v", backwards)
	}

	// Every acknowledged record is stored once, where it was acknowledged.
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := clientAt(t, c.Addrs[:1], kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	rctx := testContext(t, 30*time.Second)
	next := map[int32]int64{}
	found := 0
	seen := map[string]bool{}
	for found < len(acked) {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("read back %d of %d acknowledged records", found, len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: record at %d, want the dense next %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			if seen[v] {
				t.Fatalf("record %s stored twice", v)
			}
			seen[v] = true
			if at, ok := acked[v]; ok {
				if at != (loc{r.Partition, r.Offset}) {
					t.Fatalf("record %s at %d/%d, acknowledged at %d/%d", v, r.Partition, r.Offset, at.p, at.off)
				}
				found++
			}
		})
	}
}
