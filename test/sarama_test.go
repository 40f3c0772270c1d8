package test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "sarama-e2e"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// TestSaramaProduceConsume writes with sarama's sync producer (auto-creating
// the topic through Metadata) and reads back with a partition consumer.
func TestSaramaProduceConsume(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const topic = "sarama"
	const n = 500

	producer, err := sarama.NewSyncProducer([]string{c.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var offsets []int64
	for i := range n {
		msg := &sarama.ProducerMessage{
			Topic:     topic,
			Partition: 0,
			Key:       sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("value-%d", i)),
			Headers:   []sarama.RecordHeader{{Key: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}},
		}
		p, off, err := producer.SendMessage(msg)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if p != 0 {
			t.Fatalf("send %d went to partition %d", i, p)
		}
		offsets = append(offsets, off)
	}
	for i, off := range offsets {
		if off != int64(i) {
			t.Fatalf("record %d got offset %d", i, off)
		}
	}

	consumer, err := sarama.NewConsumer([]string{c.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	timeout := time.After(30 * time.Second)
	for i := range n {
		select {
		case m := <-pc.Messages():
			if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("key-%d", i) || string(m.Value) != fmt.Sprintf("value-%d", i) {
				t.Fatalf("message %d: offset %d key %q value %q", i, m.Offset, m.Key, m.Value)
			}
			if len(m.Headers) != 1 || string(m.Headers[0].Value) != fmt.Sprint(i) {
				t.Fatalf("message %d: headers %v", i, m.Headers)
			}
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-timeout:
			t.Fatalf("consumed %d of %d messages", i, n)
		}
	}
	if hwm := pc.HighWaterMarkOffset(); hwm != n {
		t.Fatalf("high watermark %d, want %d", hwm, n)
	}
}

// saramaHandler consumes into a ledger and marks every message; sarama
// commits marked offsets in the background and when the group closes.
type saramaHandler struct {
	name   string
	ledger *groupLedger
}

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.ledger.add(h.name, &kgo.Record{Value: m.Value})
		s.MarkMessage(m, "")
	}
	return nil
}

// TestSaramaConsumerGroup runs two sarama group members over four
// partitions; together they consume every record once.
func TestSaramaConsumerGroup(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "sarama-group", 4, nil)
	produceValues(t, c, "sarama-group", 0, 400)
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
		group, err := sarama.NewConsumerGroup([]string{c.Addr}, "sarama-grp", cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer group.Close()
			for ctx.Err() == nil {
				if err := group.Consume(ctx, []string{"sarama-group"}, saramaHandler{fmt.Sprint(i), ledger}); err != nil && ctx.Err() == nil {
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
	adm, err := sarama.NewClusterAdmin([]string{c.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	offsets, err := adm.ListConsumerGroupOffsets("sarama-grp", map[string][]int32{"sarama-group": {0, 1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, b := range offsets.Blocks["sarama-group"] {
		total += b.Offset
	}
	if total != 400 {
		t.Fatalf("committed offsets add up to %d, want 400", total)
	}
}

// TestSaramaTransactions: sarama's transactional producer (transaction
// version 1: AddPartitionsToTxn, EndTxn) commits one transaction and aborts
// another; read_committed reads only the committed one.
func TestSaramaTransactions(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const topic = "sarama-txn"
	createTopic(t, c, topic, 2, nil)
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "sarama-txn-1"
	cfg.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer([]string{c.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	write := func(prefix string, commit bool) {
		if err := producer.BeginTxn(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for i := range 6 {
			msg := &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))}
			if _, _, err := producer.SendMessage(msg); err != nil {
				t.Fatalf("send %s-%d: %v", prefix, i, err)
			}
		}
		end := producer.CommitTxn
		if !commit {
			end = producer.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
		}
	}
	write("kept", true)
	write("dropped", false)
	if got, want := readValues(t, c, topic, kgo.ReadCommitted(), 6), values(6, "kept"); !slices.Equal(got, want) {
		t.Errorf("read_committed read %q, want %q", got, want)
	}
}
