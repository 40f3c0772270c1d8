package test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Sarama's batches of every codec are stored as sent and come back byte
// for byte, headers included, also to a consumer starting inside a batch.
func TestSaramaAllCodecs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	codecs := map[string]sarama.CompressionCodec{"gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "sarama-" + name
			cfg := saramaConfig()
			cfg.Producer.Compression = codec
			producer, err := sarama.NewSyncProducer([]string{c.Addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer producer.Close()
			const n = 50
			var msgs []*sarama.ProducerMessage
			for i := range n {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0,
					Key:     sarama.ByteEncoder(fmt.Appendf(nil, "k%d", i)),
					Value:   sarama.ByteEncoder(bytes.Repeat([]byte{byte(i)}, 200+i)),
					Headers: []sarama.RecordHeader{{Key: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}, {Key: []byte("e"), Value: []byte{}}}})
			}
			if err := producer.SendMessages(msgs); err != nil {
				t.Fatal(err)
			}
			consumer, err := sarama.NewConsumer([]string{c.Addr}, saramaConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer consumer.Close()
			const from = n / 2
			pc, err := consumer.ConsumePartition(topic, 0, from)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			timeout := time.After(30 * time.Second)
			for i := from; i < n; i++ {
				select {
				case m := <-pc.Messages():
					if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("k%d", i) || !bytes.Equal(m.Value, bytes.Repeat([]byte{byte(i)}, 200+i)) ||
						len(m.Headers) != 2 || string(m.Headers[0].Value) != fmt.Sprint(i) || len(m.Headers[1].Value) != 0 {
						t.Fatalf("message %d: offset %d key %q headers %v", i, m.Offset, m.Key, m.Headers)
					}
				case err := <-pc.Errors():
					t.Fatalf("consume: %v", err)
				case <-timeout:
					t.Fatalf("consumed up to %d of %d", i, n)
				}
			}
		})
	}
}

// kcat (librdkafka) produces with every codec and reads the batches back
// unchanged, headers included, from the start and from inside a batch.
func TestKcatAllCodecs(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	c := startCluster(t, nil)
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			createTopic(t, c, topic, 1, nil)
			var in strings.Builder
			for i := range 20 {
				fmt.Fprintf(&in, "k%d:value-%d-%s\n", i, i, strings.Repeat("x", i))
			}
			runKcat(t, in.String(), "-b", c.Addr, "-P", "-t", topic, "-p", "0", "-K:", "-z", codec,
				"-H", "h1=one", "-H", "h2=", "-X", "linger.ms=200")
			got := runKcat(t, "", "-b", c.Addr, "-C", "-t", topic, "-p", "0", "-o", "7", "-e", "-f", `%k=%s@%o %h\n`)
			var want strings.Builder
			for i := 7; i < 20; i++ {
				fmt.Fprintf(&want, "k%d=value-%d-%s@%d h1=one,h2=\n", i, i, strings.Repeat("x", i), i)
			}
			if got != want.String() {
				t.Fatalf("kcat consumed\n%s\nwant\n%s", got, want.String())
			}
		})
	}
}
