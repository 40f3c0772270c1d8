package test

import (
	"fmt"
	"slices"
	"testing"
	"time"

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
