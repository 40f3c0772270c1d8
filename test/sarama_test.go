package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
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
