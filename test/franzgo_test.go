package test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sentRecord is what a producer wrote and where the gateway said it went.
type sentRecord struct {
	key, value []byte
	headers    []kgo.RecordHeader
	ts         time.Time
	partition  int32
	offset     int64
	producer   int
	index      int
}

// TestFranzGoBulkAllCodecs produces 100k records with keys, headers and
// explicit timestamps through four idempotent producers, one per codec, into
// three partitions, then consumes everything back and compares each record
// and the per-partition order.
func TestFranzGoBulkAllCodecs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const topic = "bulk"
	createTopic(t, c, topic, 3, nil)

	codecs := []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	const perProducer = 25_000
	base := time.UnixMilli(1_700_000_000_000)
	ctx := testContext(t, 3*time.Minute)

	var mu sync.Mutex
	sent := make(map[string]*sentRecord, perProducer*len(codecs))
	var wg sync.WaitGroup
	for p, codec := range codecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(2*time.Millisecond))
			var pwg sync.WaitGroup
			for i := range perProducer {
				rec := &kgo.Record{
					Key:   fmt.Appendf(nil, "p%d-k%06d", p, i),
					Value: bytes.Repeat(fmt.Appendf(nil, "value %d/%d;", p, i), 1+i%7),
					Headers: []kgo.RecordHeader{
						{Key: "producer", Value: fmt.Appendf(nil, "%d", p)},
						{Key: "empty", Value: []byte{}},
					},
					Timestamp: base.Add(time.Duration(i) * time.Millisecond),
				}
				s := &sentRecord{key: rec.Key, value: rec.Value, headers: rec.Headers, ts: rec.Timestamp, producer: p, index: i}
				pwg.Add(1)
				cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
					defer pwg.Done()
					if err != nil {
						t.Errorf("produce %s: %v", r.Key, err)
						return
					}
					s.partition, s.offset = r.Partition, r.Offset
					mu.Lock()
					sent[string(r.Key)] = s
					mu.Unlock()
				})
			}
			pwg.Wait()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	total := perProducer * len(codecs)
	if len(sent) != total {
		t.Fatalf("acknowledged %d records, want %d", len(sent), total)
	}

	consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()},
	}))
	lastIndex := map[[2]int]int{} // (partition, producer) -> last index seen
	lastOffset := map[int32]int64{0: -1, 1: -1, 2: -1}
	got := 0
	for got < total {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, total, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got++
			s, ok := sent[string(r.Key)]
			if !ok {
				t.Fatalf("consumed unknown or duplicate key %q", r.Key)
			}
			delete(sent, string(r.Key))
			switch {
			case r.Partition != s.partition || r.Offset != s.offset:
				t.Fatalf("%s: consumed at %d/%d, produced at %d/%d", r.Key, r.Partition, r.Offset, s.partition, s.offset)
			case !bytes.Equal(r.Value, s.value):
				t.Fatalf("%s: value %q, want %q", r.Key, r.Value, s.value)
			case !r.Timestamp.Equal(s.ts):
				t.Fatalf("%s: timestamp %v, want %v", r.Key, r.Timestamp, s.ts)
			case len(r.Headers) != len(s.headers):
				t.Fatalf("%s: %d headers, want %d", r.Key, len(r.Headers), len(s.headers))
			}
			for i, h := range r.Headers {
				if h.Key != s.headers[i].Key || !bytes.Equal(h.Value, s.headers[i].Value) {
					t.Fatalf("%s: header %d = %q:%q, want %q:%q", r.Key, i, h.Key, h.Value, s.headers[i].Key, s.headers[i].Value)
				}
			}
			if r.Offset <= lastOffset[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, lastOffset[r.Partition])
			}
			lastOffset[r.Partition] = r.Offset
			k := [2]int{int(r.Partition), s.producer}
			if last, ok := lastIndex[k]; ok && s.index <= last {
				t.Fatalf("partition %d: producer %d record %d consumed after record %d", r.Partition, s.producer, s.index, last)
			}
			lastIndex[k] = s.index
		})
	}
	if len(sent) != 0 {
		t.Fatalf("%d produced records were never consumed", len(sent))
	}
}

// TestFranzGoNullsAndEmpties checks that the kafka record format keeps null
// and empty keys, values and header values apart.
func TestFranzGoNullsAndEmpties(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	const topic = "nulls"
	createTopic(t, c, topic, 1, nil)
	ctx := testContext(t, 30*time.Second)
	cl := newClient(t, c, kgo.DefaultProduceTopic(topic))
	recs := []*kgo.Record{
		{Key: nil, Value: nil},
		{Key: []byte{}, Value: []byte{}},
		{Key: []byte{0xff, 0x00}, Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "h", Value: nil}}},
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []*kgo.Record
	for len(got) < len(recs) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		w := recs[i]
		if (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Key, w.Key) {
			t.Errorf("record %d: key %#v, want %#v", i, r.Key, w.Key)
		}
		if (r.Value == nil) != (w.Value == nil) || !bytes.Equal(r.Value, w.Value) {
			t.Errorf("record %d: value %#v, want %#v", i, r.Value, w.Value)
		}
	}
	if h := got[2].Headers; len(h) != 1 || h[0].Value != nil {
		t.Errorf("null header value came back as %#v", h)
	}
}

// acks=0 gets no response, and the records are still written.
func TestFranzGoAcksZero(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "acks0", 1, nil)
	ctx := testContext(t, 30*time.Second)
	cl := newClient(t, c, kgo.DefaultProduceTopic("acks0"), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	const n = 100
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"acks0": {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < n; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d acks=0 records", got, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprint(got) {
				t.Fatalf("record %d is %q", got, r.Value)
			}
			got++
		})
	}
}
