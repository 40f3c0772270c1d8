package test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/test/faultproxy"
)

// largeOpts let a franz-go producer send 5 MiB records.
func largeOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ProducerBatchMaxBytes(16 << 20), kgo.BrokerMaxWriteBytes(32 << 20), kgo.FetchMaxBytes(32 << 20), kgo.FetchMaxWait(200 * time.Millisecond)}
}

// randomBytes is n bytes that do not compress.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// consumeLarge reads n records of topic from the start.
func consumeLarge(t *testing.T, c *Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, c, append(largeOpts(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	ctx := testContext(t, 30*time.Second)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// A topic created with max.message.bytes 16 MiB takes a 5 MiB record,
// stored over several DIS records, and serves it back byte for byte, with
// the small records after it; DescribeConfigs reports the topic's value.
// A topic with the default refuses it with MESSAGE_TOO_LARGE.
func TestLargeRecordRoundTrip(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "large", 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("16777216")})
	createTopic(t, c, "default-limit", 1, nil)
	cl := newClient(t, c, largeOpts()...)
	ctx := testContext(t, 60*time.Second)

	adm := kadm.NewClient(cl)
	rc, err := adm.DescribeTopicConfigs(ctx, "large")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("large", nil); err != nil || !hasConfig(v, "max.message.bytes", "16777216") {
		t.Fatalf("DescribeConfigs: %+v %v", v, err)
	}

	big := randomBytes(5 << 20)
	recs := []*kgo.Record{{Topic: "large", Value: big}, {Topic: "large", Value: []byte("a")}, {Topic: "large", Value: []byte("b")}}
	for _, r := range recs {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	got := consumeLarge(t, c, "large", 3)
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, recs[i].Value) {
			t.Fatalf("record %d: offset %d, %d bytes; want offset %d, %d bytes as sent", i, r.Offset, len(r.Value), i, len(recs[i].Value))
		}
	}

	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "default-limit", Value: big}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("5 MiB to a topic with the default max.message.bytes: %v, want MESSAGE_TOO_LARGE", err)
	}
}

// hasConfig reports whether the resource has config name at value.
func hasConfig(rc kadm.ResourceConfig, name, value string) bool {
	for _, c := range rc.Configs {
		if c.Key == name && c.MaybeValue() == value {
			return true
		}
	}
	return false
}

// When DIS fails a PutRecords call in the middle of a large batch's
// fragments, nothing of the batch is visible: the high watermark stays
// and consumers see only the records before it. The producer's retry then
// succeeds, and the offsets go on after the record before it.
func TestLargeRecordPartialWriteHidden(t *testing.T) {
	t.Parallel()
	proxy := faultproxy.New()
	// Calls of 2 MiB: the batch's six fragments take three.
	c, err := Start(Options{Dir: t.TempDir(), DISHandler: proxy.Wrap, Gateway: func(cfg *gateway.Config) { cfg.PutRecordsMaxBytes = 2 << 20 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proxy.Close()
		_ = c.Close()
	})
	createTopic(t, c, "frag", 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("16777216")})
	cl := newClient(t, c, largeOpts()...)
	ctx := testContext(t, 90*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "frag", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Let the batch's first call through, fail the ones after.
	var calls atomic.Int64
	proxy.Set(faultproxy.Rule{
		Match: func(r *http.Request) bool { return faultproxy.PutRecords(r) && calls.Add(1) > 1 },
		Fault: faultproxy.Fault{Status: http.StatusInternalServerError, Code: disclient.CodeSystemError},
	})
	big := randomBytes(5 << 20)
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "frag", Value: big}).FirstErr() }()
	for proxy.Faulted() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the produce finished with %v before DIS failed it", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	adm := kadm.NewClient(newClient(t, c))
	ends, err := adm.ListEndOffsets(ctx, "frag")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("frag", 0); o.Offset != 1 {
		t.Fatalf("high watermark %d while the large batch is written in part, want 1", o.Offset)
	}
	proxy.Clear()
	if err := <-done; err != nil {
		t.Fatalf("the retry of the large record: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "frag", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consumeLarge(t, c, "frag", 3)
	want := [][]byte{[]byte("before"), big, []byte("after")}
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, want[i]) {
			t.Fatalf("record %d: offset %d, %d bytes; want offset %d, %d bytes", i, r.Offset, len(r.Value), i, len(want[i]))
		}
	}
}
