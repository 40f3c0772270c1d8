package test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
)

// produceIdempotent writes counts[p] records to partition p of topic, one
// synchronous produce each, with an idempotent franz-go producer, and
// returns its producer id and epoch and the time span the records' (client
// set) timestamps fall in.
func produceIdempotent(t *testing.T, addrs []string, topic string, counts map[int32]int) (id int64, epoch int16, from, to int64) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	cl := clientAt(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	from = time.Now().UnixMilli()
	for p, n := range counts {
		for i := range n {
			r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to partition %d: %v", p, err)
			}
		}
	}
	to = time.Now().UnixMilli()
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("producer id: %v", err)
	}
	return id, epoch, from, to
}

// describeProducers asks with kadm for the producers of the partitions of
// topic and returns them by partition; every partition must answer without
// error.
func describeProducers(t *testing.T, addr, topic string, partitions ...int32) map[int32][]kadm.DescribedProducer {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	adm := kadm.NewClient(clientAt(t, []string{addr}))
	s := make(kadm.TopicsSet)
	s.Add(topic, partitions...)
	described, err := adm.DescribeProducers(ctx, s)
	if err != nil {
		t.Fatalf("describe producers: %v", err)
	}
	out := make(map[int32][]kadm.DescribedProducer)
	for _, p := range described[topic].Partitions.Sorted() {
		if p.Err != nil {
			t.Fatalf("describe producers of partition %d: %v (%s)", p.Partition, p.Err, p.ErrMessage)
		}
		out[p.Partition] = p.ActiveProducers.Sorted()
	}
	if len(out) != len(partitions) {
		t.Fatalf("described partitions %v, asked for %v", out, partitions)
	}
	return out
}

// describeProducersRaw sends DescribeProducers for partition p of topic to
// addr and returns that partition's answer.
func describeProducersRaw(t *testing.T, addr, topic string, p int32) kmsg.DescribeProducersResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp := dialRaw(t, addr).roundTrip(req).(*kmsg.DescribeProducersResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != p {
		t.Fatalf("DescribeProducers for %s/%d answered %+v", topic, p, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// checkProducer checks that ps is the one idempotent producer id/epoch,
// with n records written and its last timestamp within [from, to].
func checkProducer(t *testing.T, p int32, ps []kadm.DescribedProducer, id int64, epoch int16, n int, from, to int64) {
	t.Helper()
	if len(ps) != 1 {
		t.Fatalf("partition %d: producers %+v, want one", p, ps)
	}
	d := ps[0]
	if d.ProducerID != id || d.ProducerEpoch != epoch {
		t.Errorf("partition %d: producer %d epoch %d, want %d epoch %d", p, d.ProducerID, d.ProducerEpoch, id, epoch)
	}
	if d.LastSequence != int32(n-1) {
		t.Errorf("partition %d: last sequence %d after %d records, want %d", p, d.LastSequence, n, n-1)
	}
	if d.LastTimestamp < from || d.LastTimestamp > to {
		t.Errorf("partition %d: last timestamp %d outside the produce's [%d, %d]", p, d.LastTimestamp, from, to)
	}
	if d.CoordinatorEpoch != -1 || d.CurrentTxnStartOffset != -1 {
		t.Errorf("partition %d: coordinator epoch %d, transaction start %d; want -1 and -1 without transactions", p, d.CoordinatorEpoch, d.CurrentTxnStartOffset)
	}
}

// TestDescribeProducers: an idempotent producer's id, epoch, last sequence
// and last timestamp per partition; on a kafka topic the same answer after
// a gateway restart (rebuilt from the partitions' tails), on a raw topic
// none (raw producer state is in memory only); unknown topics and
// partitions are UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeProducers(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "producers", 2, nil)
	createTopic(t, c, "producers-raw", 1, map[string]*string{"dis.record.format": kadm.StringPtr("raw")})
	counts := map[int32]int{0: 5, 1: 3}
	id, epoch, from, to := produceIdempotent(t, []string{c.Addr}, "producers", counts)
	rawID, rawEpoch, rawFrom, rawTo := produceIdempotent(t, []string{c.Addr}, "producers-raw", map[int32]int{0: 4})

	before := describeProducers(t, c.Addr, "producers", 0, 1)
	for p, n := range counts {
		checkProducer(t, p, before[p], id, epoch, n, from, to)
	}
	checkProducer(t, 0, describeProducers(t, c.Addr, "producers-raw", 0)[0], rawID, rawEpoch, 4, rawFrom, rawTo)

	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	after := describeProducers(t, c.Addr, "producers", 0, 1)
	for p := range counts {
		if fmt.Sprint(after[p]) != fmt.Sprint(before[p]) {
			t.Errorf("partition %d after the restart: %+v, before %+v", p, after[p], before[p])
		}
	}
	if got := describeProducers(t, c.Addr, "producers-raw", 0)[0]; len(got) != 0 {
		t.Errorf("raw partition after the restart: %+v, want none (raw producer state is in memory only)", got)
	}

	for _, tp := range []struct {
		topic string
		p     int32
	}{{"no-such-topic", 0}, {"producers", 2}, {"producers", -1}} {
		if sp := describeProducersRaw(t, c.Addr, tp.topic, tp.p); sp.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(sp.ActiveProducers) != 0 {
			t.Errorf("%s/%d: %v with %d producers, want UNKNOWN_TOPIC_OR_PARTITION", tp.topic, tp.p, kerr.ErrorForCode(sp.ErrorCode), len(sp.ActiveProducers))
		}
	}
}

// TestMultiGatewayDescribeProducers: the owner of a partition lists its
// producer; another gateway answers NOT_LEADER_OR_FOLLOWER, so admin
// clients go to the leader Metadata names.
func TestMultiGatewayDescribeProducers(t *testing.T) {
	t.Parallel()
	c := startGateways(t, 3)
	const p = 0
	topic := nameOwnedBy(c, "multi-producers", 1, func(name string) string { return cluster.PartitionKey(name, p) })
	createTopic(t, c, topic, 2, nil)
	id, epoch, from, to := produceIdempotent(t, c.Addrs, topic, map[int32]int{p: 2})

	if sp := describeProducersRaw(t, c.Addrs[0], topic, p); sp.ErrorCode != kerr.NotLeaderForPartition.Code || len(sp.ActiveProducers) != 0 {
		t.Errorf("gateway 0 for partition %d of gateway 1: %v with %d producers, want NOT_LEADER_OR_FOLLOWER", p, kerr.ErrorForCode(sp.ErrorCode), len(sp.ActiveProducers))
	}
	sp := describeProducersRaw(t, c.Addrs[1], topic, p)
	if sp.ErrorCode != 0 || len(sp.ActiveProducers) != 1 {
		t.Fatalf("gateway 1 for its partition %d: %v with producers %+v", p, kerr.ErrorForCode(sp.ErrorCode), sp.ActiveProducers)
	}
	// kadm sends each partition to its leader, from any bootstrap gateway.
	checkProducer(t, p, describeProducers(t, c.Addrs[2], topic, p)[p], id, epoch, 2, from, to)
}

// TestKafkaTransactionsDescribeProducers runs Apache Kafka's
// `kafka-transactions.sh describe-producers` (its main class, from the
// jars test/kafkatools/pom.xml resolves) and checks its table for an
// idempotent producer: no coordinator epoch (-1) and no open transaction
// (None). It needs Java 17 and Maven, and is skipped where either is
// missing.
func TestKafkaTransactionsDescribeProducers(t *testing.T) {
	t.Parallel()
	skipWithoutJava(t)
	ctx := testContext(t, 5*time.Minute)
	cp := kafkaToolsClasspath(ctx, t)
	c := startCluster(t, nil)
	createTopic(t, c, "txn-tool", 2, nil)
	id, epoch, _, _ := produceIdempotent(t, []string{c.Addr}, "txn-tool", map[int32]int{0: 4})
	want := describeProducers(t, c.Addr, "txn-tool", 0)[0]
	if len(want) != 1 {
		t.Fatalf("producers %+v, want one", want)
	}

	run := exec.CommandContext(ctx, "java", "-cp", cp, "org.apache.kafka.tools.TransactionsCommand",
		"--bootstrap-server", c.Addr, "describe-producers", "--topic", "txn-tool", "--partition", "0")
	out, err := run.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kafka-transactions.sh describe-producers: %v\n%s%s", err, out, stderr)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("kafka-transactions.sh printed %d lines, want a header and one producer:\n%s", len(lines), out)
	}
	header := strings.Fields(lines[0])
	wantHeader := []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") {
		t.Fatalf("header %q, want %q", header, wantHeader)
	}
	row := strings.Fields(lines[1])
	wantRow := []string{strconv.FormatInt(id, 10), strconv.Itoa(int(epoch)), "-1", "3", strconv.FormatInt(want[0].LastTimestamp, 10), "None"}
	if strings.Join(row, " ") != strings.Join(wantRow, " ") {
		t.Fatalf("row %q, want %q\n%s", row, wantRow, out)
	}
}

// kafkaToolsClasspath resolves Apache Kafka's tools with Maven (once per
// test binary) and returns their class path.
func kafkaToolsClasspath(ctx context.Context, t *testing.T) string {
	t.Helper()
	return mavenClasspath(ctx, t, "kafkatools")
}
