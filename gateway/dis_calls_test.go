package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/protocol"
)

// countingDIS wraps the DIS API to observe how the gateway uses it.
type countingDIS struct {
	disclient.API
	getCursor, getRecords atomic.Int64

	mu           sync.Mutex
	putInFlight  map[string]int // partition id -> calls in flight
	maxInFlight  int
	putCalls     int
	putRecords   int
	putCallsSeen map[string]int
}

func (c *countingDIS) GetCursor(ctx context.Context, req *disclient.GetCursorRequest) (*disclient.GetCursorResponse, error) {
	c.getCursor.Add(1)
	return c.API.GetCursor(ctx, req)
}

func (c *countingDIS) GetRecords(ctx context.Context, cursor string, max int) (*disclient.GetRecordsResponse, error) {
	c.getRecords.Add(1)
	return c.API.GetRecords(ctx, cursor, max)
}

func (c *countingDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	parts := map[string]bool{}
	for _, r := range req.Records {
		parts[r.PartitionID] = true
	}
	c.mu.Lock()
	c.putCalls++
	c.putRecords += len(req.Records)
	for p := range parts {
		c.putInFlight[p]++
		c.putCallsSeen[p]++
		c.maxInFlight = max(c.maxInFlight, c.putInFlight[p])
	}
	c.mu.Unlock()
	// Give concurrent produce requests time to pile up behind this call.
	time.Sleep(2 * time.Millisecond)
	resp, err := c.API.PutRecords(ctx, req)
	c.mu.Lock()
	for p := range parts {
		c.putInFlight[p]--
	}
	c.mu.Unlock()
	return resp, err
}

func startCounted(t testing.TB) (*Gateway, *countingDIS) {
	t.Helper()
	dis := &countingDIS{API: localDIS(t), putInFlight: map[string]int{}, putCallsSeen: map[string]int{}}
	return startGateway(t, Config{AutoCreateTopics: true}, dis), dis
}

// Many producers writing one partition share PutRecords calls, and the
// gateway never has two calls in flight for one partition (docs/design.md §4).
func TestOnePutRecordsInFlightPerPartition(t *testing.T) {
	gw, dis := startCounted(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const producers, perProducer = 8, 200
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.DefaultProduceTopic("shared"),
				kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			for i := range perProducer {
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	dis.mu.Lock()
	defer dis.mu.Unlock()
	if dis.maxInFlight != 1 {
		t.Errorf("up to %d PutRecords calls in flight for one partition, want 1", dis.maxInFlight)
	}
	if dis.putRecords != producers*perProducer {
		t.Errorf("wrote %d records, want %d", dis.putRecords, producers*perProducer)
	}
	if dis.putCalls >= producers*perProducer {
		t.Errorf("%d PutRecords calls for %d records: concurrent produces were not batched", dis.putCalls, dis.putRecords)
	}
}

// A consumer reading a partition front to back opens one DIS cursor and then
// follows next_partition_cursor.
func TestSequentialFetchReusesCursor(t *testing.T) {
	gw, dis := startCounted(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.DefaultProduceTopic("seq"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 3000
	for range n {
		prod.Produce(ctx, &kgo.Record{Value: make([]byte, 1000)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// A fresh gateway view: drop the partition's state, with what the
	// writer cached, so reads go to DIS, and recover its offsets.
	seq, err := gw.tenant.catalog.Get(ctx, "seq")
	if err != nil {
		t.Fatal(err)
	}
	gw.tenant.parts.EvictIdle(time.Now().Add(time.Hour))
	if _, err := gw.partitionFor(gw.tenant.key(seq, 0)).Next(ctx); err != nil {
		t.Fatal(err)
	}
	before := dis.getCursor.Load()
	cons, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"seq": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxPartitionBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", got, n)
		}
		got += fs.NumRecords()
	}
	cursors, reads := dis.getCursor.Load()-before, dis.getRecords.Load()
	if cursors != 1 {
		t.Errorf("%d GetCursor calls for one sequential read (%d GetRecords), want 1", cursors, reads)
	}
	if reads < 1 {
		t.Errorf("only %d GetRecords calls: the read did not go through DIS", reads)
	}
}

// throttlingDIS answers the first calls of PutRecords with DIS.4303 for
// every record, as DIS does when a partition is over its quota.
type throttlingDIS struct {
	disclient.API
	left atomic.Int64
}

func (d *throttlingDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	if d.left.Add(-1) >= 0 {
		resp := &disclient.PutRecordsResponse{FailedRecordCount: int32(len(req.Records))}
		for range req.Records {
			resp.Records = append(resp.Records, disclient.PutRecordsResult{ErrorCode: disclient.CodeTrafficControl, ErrorMessage: "Exceeded traffic control limit."})
		}
		return resp, nil
	}
	return d.API.PutRecords(ctx, req)
}

// DIS throttling that outlasts a produce timeout reaches the client as a
// retriable error with throttle_time_ms, and shorter throttling is waited
// out; either way the records land once.
func TestThrottlingBecomesRetriableError(t *testing.T) {
	cl := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone }),
		dislocaltest.WithClient(func(c *disclient.Config) { c.Retry = disclient.RetryPolicy{MaxAttempts: 1} })).Client
	dis := &throttlingDIS{API: cl}
	gw := startGateway(t, Config{AutoCreateTopics: true}, dis)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "hot", PartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
	// Throttled past the produce timeout: the writer resends until then,
	// and the producer gets a retriable error.
	dis.left.Store(1 << 30)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 1000
	b, _ := protocol.AppendBatch(nil, []protocol.Record{{Value: []byte("v"), Timestamp: 1}}, protocol.CodecNone, -1)
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "hot", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: b}}}}
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	resp, err := req.RequestWith(ctx, kc)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.RequestTimedOut.Code || resp.ThrottleMillis <= 0 {
		t.Fatalf("throttled produce: %v, throttle %d ms; want REQUEST_TIMED_OUT with a throttle time", kerr.ErrorForCode(p.ErrorCode), resp.ThrottleMillis)
	}

	// A real producer retries through more throttling, and nothing is lost
	// or doubled.
	dis.left.Store(3)
	prod, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.DefaultProduceTopic("hot"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 5 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	d, err := cl.DescribeStream(ctx, "hot", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.Partitions[0].SequenceNumberRange != "[0 : 5]" {
		t.Fatalf("stream holds %s after throttled retries, want [0 : 5]", d.Partitions[0].SequenceNumberRange)
	}
}
