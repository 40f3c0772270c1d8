package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/txns"
)

// txnStatePartitions is the gateways' default --transaction-state-partitions.
const txnStatePartitions = 4

// txnCoordinatorOf is the gateway that coordinates transactional id when
// every gateway of c is live: the owner of its state partition.
func txnCoordinatorOf(c *Cluster, id string) int32 { return ownerOf(c, txnStateKey(id)) }

// txnStateKey is the ownership key of transactional id's state partition.
func txnStateKey(id string) string {
	return cluster.PartitionKey("__transaction_state", txns.PartitionOf(id, txnStatePartitions))
}

// spreadName is the first prefix-i for which distinct(i's owners) holds:
// names whose transaction's coordinator, group coordinator and partitions
// sit on different gateways, so every call between them crosses gateways.
func spreadName(c *Cluster, prefix string, distinct func(name string) []int32) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		owners := distinct(name)
		if len(slices.Compact(slices.Sorted(slices.Values(owners)))) == len(owners) {
			return name
		}
	}
}

// Across three gateways, with the transaction's coordinator on one and
// its two partitions on the two others, a franz-go transactional producer
// commits, aborts and commits again under both transaction versions:
// every marker and KIP-890 verification crosses gateways, and
// read_committed consumers see exactly the committed records.
func TestTransactionsAcrossGateways(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	for _, tv := range txnVersions {
		t.Run(tv.name, func(t *testing.T) {
			topic := spreadName(c, "txn-peers-"+tv.name, func(name string) []int32 {
				return []int32{txnCoordinatorOf(c, name), ownerOf(c, cluster.PartitionKey(name, 0)), ownerOf(c, cluster.PartitionKey(name, 1))}
			})
			commitAndAbort(t, c, topic, tv.opts)
		})
	}
}

// A consume-transform-produce chain whose group coordinator and
// transaction coordinator are different gateways: TxnOffsetCommit goes to
// the group's coordinator, which forwards it to the transaction's, and the
// offsets land with the commits.
func TestTransactionsGroupSessionAcrossGateways(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	for _, tv := range txnVersions {
		t.Run(tv.name, func(t *testing.T) {
			name := spreadName(c, "peers-"+tv.name, func(name string) []int32 {
				group := "etl-" + name
				return []int32{txnCoordinatorOf(c, group), ownerOf(c, cluster.GroupKey(group))}
			})
			groupTransactSession(t, c, name, tv.opts)
		})
	}
}

// While a transaction holds a group's offsets pending, an OffsetFetch with
// require_stable at the group's coordinator answers UNSTABLE_OFFSET_COMMIT
// although another gateway coordinates the transaction; once it commits,
// the offsets are there.
func TestTransactionsPendingOffsetsAcrossGateways(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const topic = "txn-peers-pending"
	createTopic(t, c, topic, 1, nil)
	group := spreadName(c, "pending", func(name string) []int32 {
		return []int32{txnCoordinatorOf(c, name), ownerOf(c, cluster.GroupKey(name))}
	})
	ctx := testContext(t, time.Minute)
	// Transaction version 1 throughout: the raw requests below are its.
	cl := clientAt(t, c.Addrs, kgo.TransactionalID(group), kgo.MaxVersions(kversion.V3_9_0()), kgo.DefaultProduceTopic(topic))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = group, id, epoch, group
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = group, group, id, epoch
	commit.Generation, commit.MemberID = -1, ""
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = topic
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 1, -1
	ct.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{cp}
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{ct}
	cresp, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := cresp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("TxnOffsetCommit through the group's coordinator: %v", kerr.ErrorForCode(code))
	}
	fetch := func() (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
		req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		gr := resp.Groups[0]
		if gr.ErrorCode != 0 {
			return -1, gr.ErrorCode
		}
		p := gr.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	if _, code := fetch(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("OffsetFetch require_stable with the offset pending at another gateway: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the committed offset", 10*time.Second, func() bool {
		off, code := fetch()
		return code == 0 && off == 1
	})
}

// A transaction left open by a coordinator that is no longer live is
// taken over by the gateway that now owns its state partition, which
// aborts it at its timeout without any client asking: the partition's
// last stable offset moves on, read_committed consumers never see the
// open transaction's record, and the old producer is fenced.
func TestTransactionsOpenTakenOverByNewCoordinator(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const topic = "txn-move-open"
	createTopic(t, c, topic, 1, nil)
	id := spreadName(c, "move-open", func(name string) []int32 {
		return []int32{txnCoordinatorOf(c, name), ownerOf(c, cluster.PartitionKey(topic, 0))}
	})
	old := txnCoordinatorOf(c, id)
	ctx := testContext(t, time.Minute)
	p := clientAt(t, c.Addrs, kgo.TransactionalID(id), kgo.TransactionTimeout(3*time.Second), kgo.DefaultProduceTopic(topic))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var live []int32
	for i := range int32(3) {
		if i != old {
			live = append(live, i)
		}
	}
	for _, m := range c.Members {
		m.SetLive(live...)
	}
	var addrs []string
	for _, i := range live {
		addrs = append(addrs, c.Addrs[i])
	}
	after := clientAt(t, addrs, kgo.TransactionalID(id+"-after"), kgo.DefaultProduceTopic(topic))
	txnProduce(t, ctx, after, topic, 1, "after", 1, true)
	if got := readValuesAt(t, addrs, topic, kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"after-0"}) {
		t.Fatalf("read_committed read %q, want only the later transaction's record", got)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the timed-out transaction committed after its coordinator moved")
	}
}

// A coordinator that answered a commit (PrepareCommit in DIS) but could
// not write its marker, because the partition's owner had stopped, stops
// too: the gateway left takes both the state partition and the data
// partition over, finds the transaction prepared, writes the marker, and
// read_committed consumers get the committed record.
func TestTransactionsPreparedFinishedByNewCoordinator(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const topic = "txn-move-prepared"
	createTopic(t, c, topic, 1, nil)
	var coord, owner, survivor int32
	id := spreadName(c, "move-prepared", func(name string) []int32 {
		coord, owner = txnCoordinatorOf(c, name), ownerOf(c, cluster.PartitionKey(topic, 0))
		survivor = 3 - coord - owner
		return []int32{coord, owner}
	})
	ctx := testContext(t, time.Minute)
	p := clientAt(t, c.Addrs, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("prepared")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseGateway(int(owner)); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit, answered once PrepareCommit is in DIS: %v", err)
	}
	if err := c.CloseGateway(int(coord)); err != nil {
		t.Fatal(err)
	}
	c.Members[survivor].SetLive(survivor)
	addrs := []string{c.Addrs[survivor]}
	if got := readValuesAt(t, addrs, topic, kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"prepared"}) {
		t.Fatalf("read_committed read %q, want the prepared transaction's record", got)
	}
}

// Three gateway processes; a transactional producer commits transactions
// over three partitions, one per gateway, and the gateway that coordinates
// its id is killed with SIGKILL mid-way. The producer, made again when a
// transaction fails, commits again through the new coordinator, every
// partition's last stable offset reaches its high watermark, and
// read_committed consumers read each committed transaction whole and once,
// and of a transaction whose commit failed all or nothing.
func TestTransactionsKillCoordinator(t *testing.T) {
	// Not parallel: like the failover tests, it needs commits again within
	// a failover budget.
	tr := startGatewayTrio(t)
	ctx := testContext(t, 3*time.Minute)
	const topic = "txn-kill"
	adm := kadm.NewClient(clientAt(t, tr.addrs))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// An id whose coordinator does not lead partition 0, so that the kill
	// moves the coordinator apart from some of the partitions.
	id := ""
	for i := 0; id == "" || txnCoordinatorAmong(id, 3) == ownerAmong(cluster.PartitionKey(topic, 0), 3); i++ {
		id = fmt.Sprintf("txn-kill-%d", i)
	}
	victim := txnCoordinatorAmong(id, 3)
	type txn struct {
		values    []string
		committed bool // else unknown: the commit failed
	}
	var txns []txn
	var producer *kgo.Client
	defer func() {
		if producer != nil {
			producer.Close()
		}
	}()
	run := func(until time.Time) (committed int) {
		for n := len(txns); time.Now().Before(until); n++ {
			if producer == nil {
				var err error
				producer, err = kgo.NewClient(kgo.SeedBrokers(tr.addrs...), kgo.TransactionalID(id),
					kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(5*time.Second),
					kgo.RecordDeliveryTimeout(10*time.Second), kgo.RetryTimeout(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
			}
			tx := txn{}
			tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err := producer.BeginTransaction()
			if err == nil {
				var recs []*kgo.Record
				for p := range int32(3) {
					v := fmt.Sprintf("t%d-p%d", n, p)
					tx.values = append(tx.values, v)
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
				}
				err = producer.ProduceSync(tctx, recs...).FirstErr()
				err = errors.Join(err, producer.EndTransaction(tctx, kgo.TransactionEndTry(err == nil)))
			}
			cancel()
			tx.committed = err == nil
			if len(tx.values) > 0 {
				txns = append(txns, tx)
			}
			if err != nil {
				producer.Close()
				producer = nil
				continue
			}
			committed++
		}
		return committed
	}
	if n := run(time.Now().Add(3 * time.Second)); n == 0 {
		t.Fatal("no transaction committed before the kill")
	}
	tr.kill(t, int(victim))
	if n := run(time.Now().Add(failoverBudget)); n == 0 {
		t.Fatalf("no transaction committed in the %v after the coordinator (gateway %d) was killed", failoverBudget, victim)
	}
	var live []string
	for i, addr := range tr.addrs {
		if int32(i) != victim {
			live = append(live, addr)
		}
	}
	var wantAll []string
	for _, tx := range txns {
		if tx.committed {
			wantAll = append(wantAll, tx.values...)
		}
	}
	waitUntil(t, "every last stable offset at its high watermark", time.Minute, func() bool {
		a := kadm.NewClient(clientAt(t, live))
		stable, err1 := a.ListCommittedOffsets(ctx, topic)
		ends, err2 := a.ListEndOffsets(ctx, topic)
		if err1 != nil || err2 != nil {
			return false
		}
		for p := range int32(3) {
			s, _ := stable.Lookup(topic, p)
			e, _ := ends.Lookup(topic, p)
			if s.Err != nil || e.Err != nil || s.Offset != e.Offset {
				return false
			}
		}
		return true
	})
	got := readValuesAt(t, live, topic, kgo.ReadCommitted(), len(wantAll))
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i, tx := range txns {
		n := 0
		for _, v := range tx.values {
			if seen[v] > 1 {
				t.Errorf("%s read %d times", v, seen[v])
			}
			if seen[v] > 0 {
				n++
			}
		}
		switch {
		case tx.committed && n != len(tx.values):
			t.Errorf("committed transaction %d: %d of its %d records read", i, n, len(tx.values))
		case !tx.committed && n != 0 && n != len(tx.values):
			t.Errorf("transaction %d whose commit failed: %d of its %d records read, want all or none", i, n, len(tx.values))
		}
	}
	t.Logf("%d transactions, %d records read committed; gateway %d (the coordinator) killed", len(txns), len(got), victim)
}

// txnCoordinatorAmong is the coordinator of transactional id among n live
// gateway processes with node ids 0 to n-1 and the default state
// partitions.
func txnCoordinatorAmong(id string, n int32) int32 { return ownerAmong(txnStateKey(id), n) }

// ownerAmong is the owner of key among n live gateways with node ids 0 to
// n-1.
func ownerAmong(key string, n int32) int32 {
	var peers []cluster.Peer
	for id := range n {
		peers = append(peers, cluster.Peer{ID: id})
	}
	return cluster.Owner(key, peers).ID
}
