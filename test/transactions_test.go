package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/test/faultproxy"
)

// txnProduce writes n records round-robin over partitions in one
// transaction of p, each value prefix-i, and commits or aborts it.
func txnProduce(t *testing.T, ctx context.Context, p *kgo.Client, topic string, partitions int32, prefix string, n int, commit bool) {
	t.Helper()
	if err := p.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", prefix, i, err)
		}
	}
	if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// readValues reads topic from the start with isolation level iso until it
// has want records, then for a moment more to see that nothing else comes,
// and returns the values sorted.
func readValues(t *testing.T, c *Cluster, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	return readValuesAt(t, []string{c.Addr}, topic, iso, want)
}

// readValuesAt is readValues through the gateways at addrs.
func readValuesAt(t *testing.T, addrs []string, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	cl := clientAt(t, addrs, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	var got []string
	settle := time.Time{}
	for settle.IsZero() || time.Now().Before(settle) {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s: %q", len(got), want, topic, got)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Fatalf("fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) >= want && settle.IsZero() {
			settle = time.Now().Add(time.Second)
		}
	}
	slices.Sort(got)
	return got
}

// txnVersions run a franz-go test under both transaction versions: capped
// at Kafka 3.9's request versions the client runs version 1
// (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn keeping the epoch); else it
// sees the finalized transaction.version 2 and runs KIP-890 part 2.
var txnVersions = []struct {
	name string
	opts []kgo.Opt
}{
	{"v1", []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}},
	{"v2", nil},
}

// values are prefix-0 … prefix-(n-1) for each prefix, sorted.
func values(n int, prefixes ...string) []string {
	var out []string
	for _, p := range prefixes {
		for i := range n {
			out = append(out, fmt.Sprintf("%s-%d", p, i))
		}
	}
	slices.Sort(out)
	return out
}

// A franz-go transactional producer commits, aborts and commits again over
// two partitions: read_committed consumers see exactly the committed
// records, read_uncommitted ones every record, and once every transaction
// ended the last stable offset is the high watermark.
func TestTransactionsCommitAndAbort(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	for _, tv := range txnVersions {
		t.Run(tv.name, func(t *testing.T) { commitAndAbort(t, c, "txn-basic-"+tv.name, tv.opts) })
	}
}

func commitAndAbort(t *testing.T, c *Cluster, topic string, opts []kgo.Opt) {
	createTopic(t, c, topic, 2, nil)
	ctx := testContext(t, time.Minute)
	p := newClient(t, c, append([]kgo.Opt{kgo.TransactionalID(topic), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	txnProduce(t, ctx, p, topic, 2, "c1", 10, true)
	txnProduce(t, ctx, p, topic, 2, "a1", 10, false)
	txnProduce(t, ctx, p, topic, 2, "c2", 10, true)

	if got, want := readValues(t, c, topic, kgo.ReadCommitted(), 20), values(10, "c1", "c2"); !slices.Equal(got, want) {
		t.Errorf("read_committed read %q, want %q", got, want)
	}
	if got, want := readValues(t, c, topic, kgo.ReadUncommitted(), 30), values(10, "a1", "c1", "c2"); !slices.Equal(got, want) {
		t.Errorf("read_uncommitted read %q, want %q", got, want)
	}
	adm := kadm.NewClient(newClient(t, c))
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for part := range int32(2) {
		s, _ := stable.Lookup(topic, part)
		e, _ := ends.Lookup(topic, part)
		if s.Err != nil || e.Err != nil || s.Offset != e.Offset {
			t.Errorf("partition %d: last stable offset %d (%v), high watermark %d (%v): want equal", part, s.Offset, s.Err, e.Offset, e.Err)
		}
		// 5 records of each of 3 transactions and 3 markers.
		if e.Offset != 18 {
			t.Errorf("partition %d: high watermark %d, want 18", part, e.Offset)
		}
	}
}

// An open transaction holds read_committed consumers at its first offset:
// they read what was committed before it and nothing of it until it
// commits; ListOffsets with read_committed answers that first offset.
func TestTransactionsOpenHoldsLastStableOffset(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const topic = "txn-open"
	createTopic(t, c, topic, 1, nil)
	ctx := testContext(t, time.Minute)
	p := newClient(t, c, kgo.TransactionalID("open"), kgo.DefaultProduceTopic(topic))
	txnProduce(t, ctx, p, topic, 1, "before", 3, true)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "open-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(newClient(t, c))
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := stable.Lookup(topic, 0); s.Offset != 4 {
		t.Errorf("last stable offset with a transaction open at 4: %d", s.Offset)
	}
	if got, want := readValues(t, c, topic, kgo.ReadCommitted(), 3), values(3, "before"); !slices.Equal(got, want) {
		t.Errorf("read_committed during an open transaction read %q, want %q", got, want)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got, want := readValues(t, c, topic, kgo.ReadCommitted(), 6), values(3, "before", "open"); !slices.Equal(got, want) {
		t.Errorf("read_committed after the commit read %q, want %q", got, want)
	}
}

// A second producer with the same transactional id fences the first: the
// first's open transaction is aborted and its next write or commit fails
// as fenced, so a zombie cannot commit.
func TestTransactionsZombieFenced(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const topic = "txn-zombie"
	createTopic(t, c, topic, 1, nil)
	ctx := testContext(t, time.Minute)
	zombie := newClient(t, c, kgo.TransactionalID("fenced"), kgo.DefaultProduceTopic(topic))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := newClient(t, c, kgo.TransactionalID("fenced"), kgo.DefaultProduceTopic(topic))
	txnProduce(t, ctx, fresh, topic, 1, "fresh", 2, true)
	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Errorf("the fenced producer's commit failed with %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if got, want := readValues(t, c, topic, kgo.ReadCommitted(), 2), values(2, "fresh"); !slices.Equal(got, want) {
		t.Errorf("read_committed read %q, want only the fresh producer's records %q", got, want)
	}
}

// A transaction left open past its timeout is aborted by the coordinator:
// the last stable offset moves on without the producer, and its records
// are never read committed.
func TestTransactionsTimeoutAborts(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const topic = "txn-timeout"
	createTopic(t, c, topic, 1, nil)
	ctx := testContext(t, time.Minute)
	p := newClient(t, c, kgo.TransactionalID("slow"), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(2*time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("abandoned")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, c))
	for {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := stable.Lookup(topic, 0); s.Offset == 2 {
			break // the record and the abort marker
		}
		if ctx.Err() != nil {
			t.Fatal("the timed-out transaction still holds the last stable offset")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Error("a transaction the coordinator aborted was committed")
	}
	if got := readValues(t, c, topic, kgo.ReadCommitted(), 0); len(got) != 0 {
		t.Errorf("read_committed read %q of an aborted transaction", got)
	}
}

// Consume-transform-produce with franz-go's GroupTransactSession: every
// input record comes out exactly once in the output, read committed, and
// the group's offsets are committed with the transactions.
func TestTransactionsGroupTransactSession(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	for _, tv := range txnVersions {
		t.Run(tv.name, func(t *testing.T) { groupTransactSession(t, c, tv.name, tv.opts) })
	}
}

func groupTransactSession(t *testing.T, c *Cluster, name string, opts []kgo.Opt) {
	in, out, group := "txn-in-"+name, "txn-out-"+name, "etl-"+name
	const n = 300
	createTopic(t, c, in, 2, nil)
	createTopic(t, c, out, 2, nil)
	ctx := testContext(t, 2*time.Minute)
	src := newClient(t, c, kgo.DefaultProduceTopic(in))
	for i := range n {
		src.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v-%d", i)}, nil)
	}
	if err := src.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{kgo.SeedBrokers(c.Addr), kgo.TransactionalID(group),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(out), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := 0
	for done < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("transformed %d of %d records", done, n)
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		k := 0
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}, nil)
			k++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if committed {
			done += k
		}
	}
	got := readValues(t, c, out, kgo.ReadCommitted(), n)
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("out-v-%d", i)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("output holds %d records, want each of %d once", len(got), n)
	}
	adm := kadm.NewClient(newClient(t, c))
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Errorf("the group committed offsets summing to %d, want %d", sum, n)
	}
}

// A gateway that stops after a commit was answered (PrepareCommit in DIS)
// but before its markers were written leaves the transaction to the next
// one: reading the partition finds the open transaction, which loads the
// coordinator's state, which writes the markers, and read_committed
// consumers get the committed records.
func TestTransactionsMarkersAfterRestart(t *testing.T) {
	t.Parallel()
	c, proxy := startFaultyCluster(t)
	const topic = "txn-restart"
	createTopic(t, c, topic, 2, nil)
	ctx := testContext(t, time.Minute)
	p := newClient(t, c, kgo.TransactionalID("restart"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "kept-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The data partitions refuse every write from here on: the markers
	// cannot be written; the state topic still takes its records.
	proxy.Set(faultproxy.Rule{Match: faultproxy.All(faultproxy.PutRecords, faultproxy.BodyContains(topic)),
		Fault: faultproxy.Fault{Status: http.StatusInternalServerError, Code: disclient.CodeSystemError}})
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	p.Close()
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	proxy.Clear()
	if got, want := readValues(t, c, topic, kgo.ReadCommitted(), 4), values(4, "kept"); !slices.Equal(got, want) {
		t.Errorf("read_committed after the restart read %q, want %q", got, want)
	}
}

// The transaction metrics count what happened: one commit and one abort
// over two partitions end two transactions and write four markers.
func TestTransactionsMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := startCluster(t, func(cfg *gateway.Config) { cfg.Registry = reg })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	const topic = "txn-metrics"
	createTopic(t, c, topic, 2, nil)
	ctx := testContext(t, time.Minute)
	p := newClient(t, c, kgo.TransactionalID("metrics"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txnProduce(t, ctx, p, topic, 2, "c", 2, true)
	txnProduce(t, ctx, p, topic, 2, "a", 2, false)
	for {
		text := scrape(t, srv.URL+"/metrics")
		commits, _ := sample(text, "disgw_transactions_ended_total", "outcome", "commit")
		aborts, _ := sample(text, "disgw_transactions_ended_total", "outcome", "abort")
		markers, _ := sample(text, "disgw_transaction_markers_total", "result", "written")
		if commits == 1 && aborts == 1 && markers == 4 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("commits %v, aborts %v, markers written %v; want 1, 1, 4", commits, aborts, markers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
