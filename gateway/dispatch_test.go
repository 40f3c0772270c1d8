package gateway

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// startWith starts a gateway on an embedded DIS wrapped by wrap.
func startWith(t *testing.T, cfg Config, wrap func(disclient.API) disclient.API) *Gateway {
	t.Helper()
	cfg.AutoCreateTopics = true
	return startGateway(t, cfg, wrap(localDIS(t)))
}

// testConn speaks kmsg over one raw connection.
type testConn struct {
	t    *testing.T
	conn net.Conn
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialTest(t *testing.T, gw *Gateway) *testConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", gw.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &testConn{t: t, conn: c, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("dispatch-test"))}
}

// roundTrip sends req and decodes the answer; a gateway that never answers
// fails the test when the read deadline passes.
func (c *testConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.corr++
	if _, err := c.conn.Write(c.fmt.AppendRequest(nil, req, c.corr)); err != nil {
		c.t.Fatal(err)
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		c.t.Fatalf("%s: no answer: %v", kmsg.NameForKey(req.Key()), err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.conn, buf); err != nil {
		c.t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != c.corr {
		c.t.Fatalf("correlation id %d, want %d", got, c.corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := buf[4:]
	if resp.IsFlexible() && resp.Key() != apiKeyApiVersions {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// apiVersionsWork checks that c still gets answers.
func (c *testConn) apiVersionsWork() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		c.t.Fatalf("ApiVersions after the failure: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// panicsRecovered reads disgw_panics_recovered_total.
func panicsRecovered(gw *Gateway) float64 {
	var m dto.Metric
	_ = gw.metrics.Panics.Write(&m)
	return m.GetCounter().GetValue()
}

// stuckDIS never answers the catalog's DIS calls: until ctx is done, or,
// with ignoreCtx, until the test ends.
type stuckDIS struct {
	disclient.API
	ignoreCtx bool
	release   chan struct{}
	calls     atomic.Int64
}

func (s *stuckDIS) wait(ctx context.Context) error {
	s.calls.Add(1)
	if s.ignoreCtx {
		<-s.release
		return context.DeadlineExceeded
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.release:
		return context.Canceled
	}
}

func (s *stuckDIS) DescribeStream(ctx context.Context, name, start string, limit int) (*disclient.DescribeStreamResponse, error) {
	return nil, s.wait(ctx)
}

func (s *stuckDIS) ListStreams(ctx context.Context, limit int, start string) (*disclient.ListStreamsResponse, error) {
	return nil, s.wait(ctx)
}

// Metadata and CreateTopics on a DIS that never answers are answered
// within their deadline with REQUEST_TIMED_OUT, by the handler when DIS
// honours the context and by the dispatcher when it does not; the
// connection stays usable.
func TestStuckDISAnswersWithinDeadline(t *testing.T) {
	for _, ignoreCtx := range []bool{false, true} {
		name := "honours ctx"
		if ignoreCtx {
			name = "ignores ctx"
		}
		t.Run(name, func(t *testing.T) {
			stuck := &stuckDIS{ignoreCtx: ignoreCtx, release: make(chan struct{})}
			gw := startWith(t, Config{RequestTimeout: 300 * time.Millisecond}, func(a disclient.API) disclient.API {
				stuck.API = a
				return stuck
			})
			t.Cleanup(func() { close(stuck.release) }) // before the gateway closes
			c := dialTest(t, gw)

			md := kmsg.NewPtrMetadataRequest()
			md.Version = 9
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr("stuck")
			md.Topics = []kmsg.MetadataRequestTopic{mt}
			topics := c.roundTrip(md).(*kmsg.MetadataResponse).Topics
			if len(topics) != 1 || topics[0].Topic == nil || *topics[0].Topic != "stuck" || topics[0].ErrorCode != kerr.RequestTimedOut.Code {
				t.Fatalf("Metadata answered %+v, want topic stuck with REQUEST_TIMED_OUT", topics)
			}
			c.apiVersionsWork()

			ct := kmsg.NewPtrCreateTopicsRequest()
			ct.Version = 5
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "stuck", 1, 1
			ct.Topics = []kmsg.CreateTopicsRequestTopic{rt}
			created := c.roundTrip(ct).(*kmsg.CreateTopicsResponse).Topics
			if len(created) != 1 || created[0].Topic != "stuck" || created[0].ErrorCode != kerr.RequestTimedOut.Code {
				t.Fatalf("CreateTopics answered %+v, want topic stuck with REQUEST_TIMED_OUT", created)
			}
			c.apiVersionsWork()
			if stuck.calls.Load() == 0 {
				t.Fatal("the handlers never called DIS")
			}
		})
	}
}

// panickyDIS panics in PutRecords while armed.
type panickyDIS struct {
	disclient.API
	armed atomic.Bool
}

func (p *panickyDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	if p.armed.Load() {
		panic("PutRecords boom")
	}
	return p.API.PutRecords(ctx, req)
}

// A partition writer whose call panics completes its batch with
// UNKNOWN_SERVER_ERROR instead of leaving the producer waiting, and takes
// the next batch as if nothing had happened.
func TestWriterPanicFailsBatchAndRecovers(t *testing.T) {
	p := &panickyDIS{}
	gw := startWith(t, Config{}, func(a disclient.API) disclient.API {
		p.API = a
		return p
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.DefaultProduceTopic("writer-panic"),
		kgo.AllowAutoTopicCreation(), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.armed.Store(true)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("boom")}).FirstErr(); err != kerr.UnknownServerError {
		t.Fatalf("produce during the panic: %v, want UNKNOWN_SERVER_ERROR", err)
	}
	p.armed.Store(false)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the panic: %v", err)
	}
	if n := panicsRecovered(gw); n != 1 {
		t.Fatalf("disgw_panics_recovered_total = %v, want 1", n)
	}
}
