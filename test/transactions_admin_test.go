package test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactionsCommand is kafka-transactions.sh's main class.
const transactionsCommand = "org.apache.kafka.tools.TransactionsCommand"

// ListTransactions at every version, with the edges Kafka answers: no
// transaction is listed before any transactional producer came, a state
// filter that is no state comes back as unknown, a bad pattern is
// INVALID_REGULAR_EXPRESSION.
func TestListTransactions(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	rc := dialRaw(t, c.Addr)
	for v := int16(0); v <= 2; v++ {
		list := kmsg.NewPtrListTransactionsRequest()
		list.Version = v
		list.StateFilters = []string{"Ongoing", "Bogus"}
		resp := rc.roundTrip(list).(*kmsg.ListTransactionsResponse)
		if resp.ErrorCode != 0 || len(resp.TransactionStates) != 0 || strings.Join(resp.UnknownStateFilters, ",") != "Bogus" {
			t.Fatalf("ListTransactions v%d: %+v", v, resp)
		}
	}
	list := kmsg.NewPtrListTransactionsRequest()
	list.Version = 2
	bad := "app-(["
	list.TransactionalIDPattern = &bad
	if code := rc.roundTrip(list).(*kmsg.ListTransactionsResponse).ErrorCode; code != kerr.InvalidRegularExpression.Code {
		t.Fatalf("ListTransactions with pattern %q: %v, want INVALID_REGULAR_EXPRESSION", bad, kerr.ErrorForCode(code))
	}
}

// kafka-transactions.sh against an open transaction: list and describe
// show it Ongoing on its partition, describe-producers shows its producer
// and where its transaction began, find-hanging finds nothing hanging
// (the coordinator knows it), and once it commits list shows it
// CompleteCommit.
func TestKafkaTransactionsTool(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const topic = "txn-tool"
	createTopic(t, c, topic, 2, nil)
	ctx := testContext(t, time.Minute)
	p := newClient(t, c, kgo.TransactionalID("app-1"), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txnProduce(t, ctx, p, topic, 1, "first", 2, true)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if got := k.run(transactionsCommand, "list"); !strings.Contains(got, "app-1") || !strings.Contains(got, "Ongoing") {
		t.Errorf("list: %q, want app-1 Ongoing", got)
	}
	if got := k.run(transactionsCommand, "describe", "--transactional-id", "app-1"); !strings.Contains(got, "Ongoing") || !strings.Contains(got, topic+"-0") {
		t.Errorf("describe: %q, want Ongoing on %s-0", got, topic)
	}
	// The first transaction holds offsets 0-2 (two records, a marker).
	if got := k.run(transactionsCommand, "describe-producers", "--topic", topic, "--partition", "0"); !strings.Contains(got, "\t3") && !strings.Contains(got, " 3") {
		t.Errorf("describe-producers: %q, want the open transaction starting at offset 3", got)
	}
	if got := lines(k.run(transactionsCommand, "find-hanging", "--topic", topic)); len(got) != 1 || !strings.HasPrefix(got[0], "Topic") {
		t.Errorf("find-hanging: %q, want the header alone", got)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := k.run(transactionsCommand, "list"); !strings.Contains(got, "CompleteCommit") {
		t.Errorf("list after the commit: %q, want CompleteCommit", got)
	}
	// An id nobody used is TRANSACTIONAL_ID_NOT_FOUND, which the tool
	// reports by exiting non-zero.
	k.fail("", transactionsCommand, "describe", "--transactional-id", "no-such-id")
}

// A transaction its coordinator no longer knows (here its state stream
// was deleted behind the gateway's back) hangs: it holds the partition's
// last stable offset. kafka-transactions.sh find-hanging finds it from
// DescribeProducers and ListTransactions, and abort ends it with
// WriteTxnMarkers to the partition's leader, after which read_committed
// consumers move past it.
func TestKafkaTransactionsAbortHanging(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const topic = "txn-hanging"
	createTopic(t, c, topic, 1, nil)
	ctx := testContext(t, time.Minute)
	p := newClient(t, c, kgo.TransactionalID("lost"), kgo.DefaultProduceTopic(topic))
	txnProduce(t, ctx, p, topic, 1, "before", 2, true)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("hanging")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := c.Client.DeleteStream(ctx, "__transaction_state"); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	k.addr = c.Addr

	hanging := lines(k.run(transactionsCommand, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"))
	if len(hanging) != 2 || !strings.HasPrefix(hanging[1], topic) {
		t.Fatalf("find-hanging: %q, want the header and the hanging transaction", hanging)
	}
	// The transaction began after the first one's two records and marker.
	k.run(transactionsCommand, "abort", "--topic", topic, "--partition", "0", "--start-offset", "3")
	if got := lines(k.run(transactionsCommand, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")); len(got) != 1 {
		t.Errorf("find-hanging after the abort: %q, want the header alone", got)
	}
	if got, want := readValues(t, c, topic, kgo.ReadCommitted(), 2), values(2, "before"); !slices.Equal(got, want) {
		t.Errorf("read_committed after the abort read %q, want %q", got, want)
	}
	stable, err := kadm.NewClient(newClient(t, c)).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := stable.Lookup(topic, 0); s.Offset != 5 {
		t.Errorf("last stable offset after the abort: %d, want 5 (past the abort marker)", s.Offset)
	}
}
