package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

// heldDurability is the embedded DIS served in process, with the
// durability of its PutRecords in the test's hands: every wait blocks
// until release is closed, then fails with failure when set (as after a
// failed fsync, for good) or waits for the real fsync.
type heldDurability struct {
	disclient.API
	release chan struct{}
	failure error
	calls   atomic.Int32 // pipelined PutRecords calls answered
}

func (d *heldDurability) PutRecordsPipelined(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, func() error, error) {
	resp, wait, err := d.API.(disclient.PipelinedPutter).PutRecordsPipelined(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	d.calls.Add(1)
	return resp, func() error {
		<-d.release
		if d.failure != nil {
			return d.failure
		}
		return wait()
	}, nil
}

// pipelineGateway starts a gateway over d, which holds the embedded DIS's
// in-process client, and a client with a one-partition topic.
func pipelineGateway(t *testing.T, d *heldDurability) *kgo.Client {
	t.Helper()
	srv := dislocaltest.Start(t)
	d.API = srv.DIS.LocalClient(dislocaltest.ProjectID, srv.Client)
	gw := startGateway(t, Config{}, d)
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "piped", 1, 1
	create.Topics = append(create.Topics, ct)
	if resp, err := create.RequestWith(context.Background(), kc); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %v", resp, err)
	}
	return kc
}

// produced is the answer to one produce of produceAsync.
type produced struct {
	base int64
	code int16
	err  error
}

// produceAsync produces records to partition 0 of topic with acks=all and
// delivers the answer on the channel it returns.
func produceAsync(cl *kgo.Client, topic string, records []byte) <-chan produced {
	out := make(chan produced, 1)
	go func() {
		resp, err := produceRequest(topic, records).RequestWith(context.Background(), cl)
		if err != nil {
			out <- produced{err: err}
			return
		}
		p := resp.Topics[0].Partitions[0]
		out <- produced{base: p.BaseOffset, code: p.ErrorCode}
	}()
	return out
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A partition writer over the in-process DIS makes its next call while
// the last one waits for its fsync, but nothing of either is answered or
// readable until it is durable; then both are, in order, with dense
// offsets.
func TestPipelinedWritesWaitForDurability(t *testing.T) {
	d := &heldDurability{release: make(chan struct{})}
	kc := pipelineGateway(t, d)
	first := produceAsync(kc, "piped", batchesOf(t, 1, 3, 10))
	waitFor(t, "the first call", func() bool { return d.calls.Load() == 1 })
	second := produceAsync(kc, "piped", batchesOf(t, 2, 2, 10))
	waitFor(t, "the second call, made while the first waits for its fsync", func() bool { return d.calls.Load() == 2 })

	select {
	case p := <-first:
		t.Fatalf("the first produce was answered before its records were durable: %+v", p)
	case p := <-second:
		t.Fatalf("the second produce was answered before its records were durable: %+v", p)
	case <-time.After(100 * time.Millisecond):
	}
	if first, last, hwm := fetchAt(t, kc, "piped", 0); first != -1 || hwm != 0 {
		t.Fatalf("before the fsync a fetch got offsets %d..%d and high watermark %d; want nothing and 0", first, last, hwm)
	}

	close(d.release)
	for i, want := range []int64{0, 3} {
		p := <-[]<-chan produced{first, second}[i]
		if p.err != nil || p.code != 0 || p.base != want {
			t.Fatalf("produce %d answered %+v, want base offset %d", i+1, p, want)
		}
	}
	if first, last, hwm := fetchAt(t, kc, "piped", 0); first != 0 || last != 6 || hwm != 7 {
		t.Fatalf("after the fsync the partition holds %d..%d, high watermark %d; want 0..6 and 7", first, last, hwm)
	}
}

// Records DIS sequenced but could not make durable are not answered as
// written and never become readable: their producers get the error a
// failed PutRecords gives (KAFKA_STORAGE_ERROR, retriable), as do the
// calls pipelined behind them.
func TestPipelinedWritesFailWhenNotDurable(t *testing.T) {
	d := &heldDurability{release: make(chan struct{}),
		failure: &disclient.Error{Status: 500, Code: "DIS.5000", Message: "an earlier fsync of the record log failed; restart the server"}}
	kc := pipelineGateway(t, d)
	first := produceAsync(kc, "piped", batchesOf(t, 1, 3, 10))
	waitFor(t, "the first call", func() bool { return d.calls.Load() == 1 })
	second := produceAsync(kc, "piped", batchesOf(t, 1, 2, 10))
	waitFor(t, "the second call", func() bool { return d.calls.Load() == 2 })
	close(d.release)
	var wg sync.WaitGroup
	for i, ch := range []<-chan produced{first, second} {
		wg.Go(func() {
			p := <-ch
			if p.err != nil || p.code != kerr.KafkaStorageError.Code {
				t.Errorf("produce %d answered %+v, want KAFKA_STORAGE_ERROR", i+1, p)
			}
		})
	}
	wg.Wait()
	if first, last, hwm := fetchAt(t, kc, "piped", 0); first != -1 || hwm != 0 {
		t.Fatalf("a fetch got offsets %d..%d and high watermark %d of records never durable; want nothing and 0", first, last, hwm)
	}
}
