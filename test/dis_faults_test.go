package test

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/test/faultproxy"
)

// startFaultyCluster starts a gateway whose DIS calls pass through a
// fault-injecting proxy in front of the embedded DIS.
func startFaultyCluster(t *testing.T) (*Cluster, *faultproxy.Proxy) {
	t.Helper()
	proxy := faultproxy.New()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, DISHandler: proxy.Wrap})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		proxy.Close()
		_ = c.Close()
	})
	return c, proxy
}

// produceOne sends one acks=-1 Produce v9 of one record with the given
// timeout and returns the partition's answer and the request's throttle.
func produceOne(t *testing.T, rc *rawConn, topic string, timeout time.Duration) (kmsg.ProduceResponseTopicPartition, int32) {
	t.Helper()
	req := produceReq(9, topic, 0, testBatch(-1, -1, -1, time.Now().UnixMilli(), "v"))
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	resp := rc.roundTrip(req).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0], resp.ThrottleMillis
}

// A DIS that answers slowly, throttles, fails with 5xx or not at all makes
// produce answer within its timeout with a retriable error; a hanging
// stream does not hold up the others; once DIS is well again the gateway
// works again without a restart.
func TestFailingDISProduceAnswersInTime(t *testing.T) {
	t.Parallel()
	c, proxy := startFaultyCluster(t)
	createTopic(t, c, "slow", 1, nil)
	createTopic(t, c, "fine", 1, nil)
	rc := dialRaw(t, c.Addr)

	cases := []struct {
		name  string
		fault faultproxy.Fault
	}{
		{"latency", faultproxy.Fault{Latency: 3 * time.Second}},
		{"hang", faultproxy.Fault{Hang: true}},
		{"5xx", faultproxy.Fault{Status: http.StatusInternalServerError, Code: disclient.CodeSystemError}},
		{"throttle", faultproxy.Fault{Status: http.StatusBadRequest, Code: disclient.CodeTrafficControl}},
		{"drop", faultproxy.Fault{Drop: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxy.Set(faultproxy.Rule{Match: faultproxy.All(faultproxy.PutRecords, faultproxy.BodyContains(`slow`)), Fault: tc.fault})
			slow := dialRaw(t, c.Addr)
			req := produceReq(9, "slow", 0, testBatch(-1, -1, -1, time.Now().UnixMilli(), "v"))
			req.TimeoutMillis = 1000
			corr := slow.send(req)
			type answer struct {
				frame []byte
				err   error
			}
			answered := make(chan answer, 1)
			go func() { f, err := slow.readFrame(); answered <- answer{f, err} }()
			// Another stream keeps working meanwhile.
			if p, _ := produceOne(t, rc, "fine", 5*time.Second); p.ErrorCode != 0 {
				t.Fatalf("produce to a healthy stream while another fails: %v", kerr.ErrorForCode(p.ErrorCode))
			}
			var a answer
			select {
			case a = <-answered:
			case <-time.After(20 * time.Second):
				t.Fatal("produce with a 1 s timeout not answered in 20 s")
			}
			if a.err != nil {
				t.Fatalf("produce with a 1 s timeout: %v", a.err)
			}
			resp := kmsg.NewPtrProduceResponse()
			resp.SetVersion(9)
			if got := int32(binary.BigEndian.Uint32(a.frame)); got != corr {
				t.Fatalf("correlation id %d, want %d", got, corr)
			}
			if err := resp.ReadFrom(a.frame[5:]); err != nil {
				t.Fatalf("decode produce response: %v", err)
			}
			p := resp.Topics[0].Partitions[0]
			if !kerr.IsRetriable(kerr.ErrorForCode(p.ErrorCode)) {
				t.Fatalf("answer %v, want a retriable error", kerr.ErrorForCode(p.ErrorCode))
			}
			proxy.Clear()
			if p, _ := produceOne(t, slow, "slow", 10*time.Second); p.ErrorCode != 0 {
				t.Fatalf("produce after DIS recovered: %v", kerr.ErrorForCode(p.ErrorCode))
			}
		})
	}
}

// DIS throttling reaches the client as throttle_time_ms on a retriable
// error, never as loss.
func TestFailingDISThrottleHint(t *testing.T) {
	t.Parallel()
	c, proxy := startFaultyCluster(t)
	createTopic(t, c, "throttled", 1, nil)
	rc := dialRaw(t, c.Addr)
	proxy.Set(faultproxy.Rule{Match: faultproxy.PutRecords, Fault: faultproxy.Fault{Status: http.StatusBadRequest, Code: disclient.CodeTrafficControl}})
	p, throttle := produceOne(t, rc, "throttled", 3*time.Second)
	if p.ErrorCode == 0 {
		t.Fatal("a throttled write was acknowledged")
	}
	if !kerr.IsRetriable(kerr.ErrorForCode(p.ErrorCode)) {
		t.Fatalf("throttled write answered %v, want a retriable error", kerr.ErrorForCode(p.ErrorCode))
	}
	if throttle <= 0 {
		t.Fatalf("throttle_time_ms %d, want > 0", throttle)
	}
}

// Every record the gateway acknowledged while DIS misbehaved in each way in
// turn is read back once DIS is well again: a failing DIS costs retries,
// never an acknowledged record.
func TestFailingDISLosesNoAcknowledgedRecord(t *testing.T) {
	t.Parallel()
	c, proxy := startFaultyCluster(t)
	const topic = "acked"
	createTopic(t, c, topic, 2, nil)
	ctx := testContext(t, 3*time.Minute)
	producer := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.ProduceRequestTimeout(2*time.Second),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))

	faults := []faultproxy.Fault{
		{Latency: 2500 * time.Millisecond},
		{Status: http.StatusInternalServerError, Code: disclient.CodeSystemError},
		{Status: http.StatusServiceUnavailable, Code: disclient.CodeServiceUnavailable},
		{Status: http.StatusBadRequest, Code: disclient.CodeTrafficControl},
		{Drop: true},
		{CutBody: true},
		{Hang: true},
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	n := 0
	for _, f := range faults {
		proxy.Set(faultproxy.Rule{Match: faultproxy.PutRecords, Fault: f})
		for range 50 {
			n++
			wg.Add(1)
			producer.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%05d", n)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err == nil {
					mu.Lock()
					acked[string(r.Value)] = true
					mu.Unlock()
				}
			})
		}
		time.Sleep(700 * time.Millisecond)
	}
	// Reads fail too while the producer retries.
	proxy.Set(faultproxy.Rule{Match: faultproxy.Op(http.MethodGet, "records"), Fault: faultproxy.Fault{CutBody: true}})
	time.Sleep(500 * time.Millisecond)
	proxy.Clear()
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged after DIS recovered")
	}
	if proxy.Faulted() == 0 {
		t.Fatal("the proxy injected no fault")
	}

	consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()},
	}))
	seen := map[string]bool{}
	for missing := len(acked); missing > 0; {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d acknowledged records never read back: %v", missing, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if acked[v] && !seen[v] {
				seen[v] = true
				missing--
			}
		})
	}
}

// A fetch while DIS's GetRecords hangs or is cut mid-body is answered soon
// after its max wait, not when a client would have given up, and reads the
// records once DIS is well again.
func TestFailingDISFetchAnswersInTime(t *testing.T) {
	t.Parallel()
	c, proxy := startFaultyCluster(t)
	createTopic(t, c, "reads", 1, nil)
	rc := dialRaw(t, c.Addr)
	if p, _ := produceOne(t, rc, "reads", 5*time.Second); p.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	for _, f := range []faultproxy.Fault{{Hang: true}, {CutBody: true}, {Status: http.StatusInternalServerError, Code: disclient.CodeSystemError}} {
		proxy.Set(
			faultproxy.Rule{Match: faultproxy.Op(http.MethodGet, "records"), Fault: f},
			faultproxy.Rule{Match: faultproxy.Op(http.MethodGet, "cursors"), Fault: f},
		)
		// At the end of the partition the fetch long-polls DIS for
		// records written by anyone else.
		fc := dialRaw(t, c.Addr)
		req := fetchReq(12, "reads", [16]byte{}, 0, 1)
		req.MaxWaitMillis = 500
		began := time.Now()
		corr := fc.send(req)
		frame, err := fc.readFrame() // the raw read waits at most 10 s
		if err != nil {
			t.Fatalf("fault %+v: fetch with a 500 ms max wait not answered: %v", f, err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
		t.Logf("fault %+v: answered after %v", f, time.Since(began).Round(10*time.Millisecond))
		proxy.Clear()
	}
	resp := rc.roundTrip(fetchReq(12, "reads", [16]byte{}, 0, 0)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(batchValues(t, p.RecordBatches)) != 1 {
		t.Fatalf("fetch after DIS recovered: %v, %d records", kerr.ErrorForCode(p.ErrorCode), len(batchValues(t, p.RecordBatches)))
	}
}
