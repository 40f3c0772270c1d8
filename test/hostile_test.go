package test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// These tests play hostile clients against both transports (gnet for
// PLAINTEXT, crypto/tls for SSL) and check that each is disconnected, that
// the gateway's memory stays bounded, and that a fresh client is served
// afterwards.

// hostileCluster is a gateway with a PLAINTEXT and an SSL listener and its
// own metrics registry.
type hostileCluster struct {
	*Cluster
	reg *prometheus.Registry
	ca  *testCA
}

func startHostileCluster(t *testing.T, adjust func(*gateway.Config)) *hostileCluster {
	t.Helper()
	h := &hostileCluster{reg: prometheus.NewRegistry(), ca: newTestCA(t)}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{h.ca.server}, MinVersion: tls.VersionTLS12}
	c, err := Start(Options{Dir: t.TempDir(), Gateway: func(cfg *gateway.Config) {
		cfg.Registry = h.reg
		cfg.Listeners = []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SSL, TLS: tlsCfg}}
		adjust(cfg)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h.Cluster = c
	return h
}

// transport is one way to reach the gateway: a plain TCP dial, or a TLS
// dial with the handshake done.
type transport struct {
	name string
	// dial connects; readBuf, when set, shrinks the client's socket
	// receive buffer first, so the kernel absorbs little of what a client
	// that never reads is sent.
	dial func(t *testing.T, h *hostileCluster, readBuf int) (net.Conn, error)
}

var hostileTransports = []transport{
	{"PLAINTEXT", func(t *testing.T, h *hostileCluster, readBuf int) (net.Conn, error) {
		return dialTCP(h.Addr, readBuf)
	}},
	{"SSL", func(t *testing.T, h *hostileCluster, readBuf int) (net.Conn, error) {
		raw, err := dialTCP(h.Gateway.ListenerAddr(gateway.SSL).String(), readBuf)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, &tls.Config{RootCAs: h.ca.pool, ServerName: "127.0.0.1"})
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			_ = raw.Close()
			return nil, err
		}
		_ = tc.SetDeadline(time.Time{})
		return tc, nil
	}},
}

func dialTCP(addr string, readBuf int) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if readBuf > 0 {
		_ = c.(*net.TCPConn).SetReadBuffer(readBuf)
	}
	return c, nil
}

func (tr transport) mustDial(t *testing.T, h *hostileCluster) *rawConn {
	t.Helper()
	c, err := tr.dial(t, h, 0)
	if err != nil {
		t.Fatalf("dial %s: %v", tr.name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, conn: c, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile-test"))}
}

// assertServes checks that a fresh client gets ApiVersions answered.
func (tr transport) assertServes(t *testing.T, h *hostileCluster) {
	t.Helper()
	rc := tr.mustDial(t, h)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "hostile-test", "1"
	if resp := rc.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions on a fresh %s connection: error %d, %d keys", tr.name, resp.ErrorCode, len(resp.ApiKeys))
	}
	_ = rc.conn.Close()
}

// metric sums the series of name whose labels include value (any value when
// empty).
func (h *hostileCluster) metric(t *testing.T, name, value string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := value == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetValue() == value
			}
			if match {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// assertClosedByPeer reads c until the gateway closes it, discarding what
// was sent before.
func assertClosedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection stayed open, want it closed by the gateway")
	}
}

// liveHeap is the heap and goroutine stacks in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// peakHeap samples the heap until stop is called, which returns the peak.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// A client that pipelines 2000 Fetch requests and never reads a response is
// paused once its unread responses fill its 1 MiB budget, then disconnected
// after the write timeout. Each response carries 256 KiB, so the 2000 of
// them, were they all queued, would hold 500 MiB; the bound below, half
// that, leaves room for the 256 requests accepted before the first response
// was ready (64 MiB of responses) and for garbage the collector has not
// reached yet (the peak is sampled without collecting).
func TestHostilePipelineNeverRead(t *testing.T) {
	// Not parallel: it measures the process's heap.
	const perResponse = 256 << 10
	const heapBound = 256 << 20
	h := startHostileCluster(t, func(cfg *gateway.Config) {
		cfg.MaxInflightBytesPerConn = 1 << 20
		cfg.WriteTimeout = time.Second
	})
	createTopic(t, h.Cluster, "unread", 1, nil)
	producer := newClient(t, h.Cluster, kgo.DefaultProduceTopic("unread"), kgo.ProducerBatchMaxBytes(2<<20))
	var recs []*kgo.Record
	for range 32 {
		recs = append(recs, &kgo.Record{Value: bytes.Repeat([]byte("x"), perResponse/32)})
	}
	if err := producer.ProduceSync(testContext(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	producer.Close()

	for _, tr := range hostileTransports {
		t.Run(tr.name, func(t *testing.T) {
			closedBefore := h.metric(t, "disgw_connections_closed_total", "write_timeout")
			pausedBefore := h.metric(t, "disgw_backpressure_total", "")
			c, err := tr.dial(t, h, 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("never-reads"))
			var pipeline []byte
			for i := range 2000 {
				req := fetchReq(11, "unread", [16]byte{}, 0, 0)
				req.MaxWaitMillis = 0
				req.MaxBytes, req.Topics[0].Partitions[0].PartitionMaxBytes = 2*perResponse, 2*perResponse
				pipeline = append(pipeline, rf.AppendRequest(nil, req, int32(i+1))...)
			}
			base := liveHeap()
			stop := peakHeap()
			// The gateway stops reading a paused TLS connection, so this
			// write may block until the connection is closed.
			go func() {
				_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
				_, _ = c.Write(pipeline)
			}()
			waitFor(t, "the never-reading client to be disconnected", func() bool {
				return h.metric(t, "disgw_connections_closed_total", "write_timeout") > closedBefore
			})
			peak := stop()
			if h.metric(t, "disgw_backpressure_total", "") <= pausedBefore {
				t.Error("the connection was never paused")
			}
			t.Logf("heap peak grew %d MiB", (peak-base)>>20)
			if peak > base && peak-base > heapBound {
				t.Errorf("heap grew by %d MiB (peak %d MiB), bound %d MiB", (peak-base)>>20, peak>>20, heapBound>>20)
			}
			assertClosedByPeer(t, c)
			waitFor(t, "the in-flight budget to be released", func() bool {
				return h.metric(t, "disgw_inflight_bytes", "") == 0
			})
			tr.assertServes(t, h)
		})
	}
}

// raiseFileLimit makes room for n more file descriptors, or skips.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n+1024 {
		return
	}
	if lim.Max < n+1024 {
		t.Skipf("file descriptor limit %d, this test needs %d", lim.Max, n+1024)
	}
	old := lim.Cur
	lim.Cur = n + 1024
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		lim.Cur = old
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	})
}

// Many idle connections: past MaxConnections they are closed at once, the
// admitted ones cost a bounded amount of memory each, and the idle timeout
// closes them all. PLAINTEXT opens 5000 connections against a limit of
// 4000; SSL opens 300 against 200, since 5000 TLS handshakes (both ends in
// this process) would take minutes on a small test machine. A TCP
// connection to the SSL listener that never starts its handshake is closed
// by the handshake timeout.
func TestHostileIdleConnections(t *testing.T) {
	// Not parallel: it measures the process's heap and raises its file limit.
	const perConnBound = 48 << 10
	for _, tc := range []struct {
		tr          transport
		open, limit int
	}{{hostileTransports[0], 5000, 4000}, {hostileTransports[1], 300, 200}} {
		t.Run(tc.tr.name, func(t *testing.T) {
			raiseFileLimit(t, uint64(2*tc.open))
			h := startHostileCluster(t, func(cfg *gateway.Config) {
				cfg.MaxConnections = tc.limit
				cfg.MaxConnectionsPerIP = 2 * tc.open
				cfg.IdleTimeout = 10 * time.Second
				cfg.TLSHandshakeTimeout = 500 * time.Millisecond
			})
			base := liveHeap()
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					_ = c.Close()
				}
			}()
			for range tc.open {
				// A refused TLS connection fails its handshake; the
				// refusal counter below checks that it was refused.
				if c, err := tc.tr.dial(t, h, 0); err == nil {
					conns = append(conns, c)
				}
			}
			refused := float64(tc.open - tc.limit)
			waitFor(t, "the connections past the limit to be refused", func() bool {
				return h.metric(t, "disgw_connections_refused_total", "max_connections") == refused &&
					h.metric(t, "disgw_connections", "") == float64(tc.limit)
			})
			grew := int64(liveHeap()) - int64(base)
			t.Logf("%d connections: %d KiB each", tc.limit, grew/int64(tc.limit)>>10)
			if grew > int64(tc.limit)*perConnBound {
				t.Errorf("%d idle connections hold %d KiB each, bound %d KiB", tc.limit, grew/int64(tc.limit)>>10, perConnBound>>10)
			}
			waitFor(t, "the idle connections to be closed", func() bool {
				return h.metric(t, "disgw_connections", "") == 0
			})
			if got := h.metric(t, "disgw_connections_closed_total", "idle"); got != float64(tc.limit) {
				t.Errorf("%v connections closed as idle, want %d", got, tc.limit)
			}
			for _, c := range conns[:10] {
				assertClosedByPeer(t, c)
			}
			if tc.tr.name == "SSL" {
				c, err := dialTCP(h.Gateway.ListenerAddr(gateway.SSL).String(), 0)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
				assertClosedByPeer(t, c)
				if h.metric(t, "disgw_connections_closed_total", "tls_handshake") == 0 {
					t.Error("a silent TLS client was not counted as a failed handshake")
				}
			}
			tc.tr.assertServes(t, h)
		})
	}
}

// A size prefix claiming 100 MiB, then silence: the gateway allocates
// nothing for the claim and closes the connection by the idle timeout.
func TestHostileSizePrefixThenSilence(t *testing.T) {
	// Not parallel: it measures the process's heap.
	const heapBound = 16 << 20
	h := startHostileCluster(t, func(cfg *gateway.Config) { cfg.IdleTimeout = 2 * time.Second })
	for _, tr := range hostileTransports {
		t.Run(tr.name, func(t *testing.T) {
			idleBefore := h.metric(t, "disgw_connections_closed_total", "idle")
			rc := tr.mustDial(t, h)
			base := liveHeap()
			var prefix [4]byte
			binary.BigEndian.PutUint32(prefix[:], 100<<20)
			rc.write(prefix[:])
			time.Sleep(300 * time.Millisecond)
			if grew := int64(liveHeap()) - int64(base); grew > heapBound {
				t.Errorf("a 4-byte prefix claiming 100 MiB grew the heap by %d MiB, bound %d MiB", grew>>20, heapBound>>20)
			}
			assertClosedByPeer(t, rc.conn)
			if h.metric(t, "disgw_connections_closed_total", "idle") <= idleBefore {
				t.Error("the silent connection was not closed by the idle timeout")
			}
			tr.assertServes(t, h)
		})
	}
}

// Past MaxConnectionsPerIP a connection from the same address is closed at
// once; when one of the others closes, a new one is admitted.
func TestHostilePerIPLimit(t *testing.T) {
	t.Parallel()
	h := startHostileCluster(t, func(cfg *gateway.Config) { cfg.MaxConnectionsPerIP = 3 })
	for i, tr := range hostileTransports {
		t.Run(tr.name, func(t *testing.T) {
			var held []*rawConn
			for range 3 {
				rc := tr.mustDial(t, h)
				held = append(held, rc)
			}
			waitFor(t, "three connections open", func() bool { return h.metric(t, "disgw_connections", "") == 3 })
			c, err := tr.dial(t, h, 0)
			if err == nil {
				defer func() { _ = c.Close() }()
				assertClosedByPeer(t, c)
			}
			waitFor(t, "the fourth connection to be refused", func() bool {
				return h.metric(t, "disgw_connections_refused_total", "max_connections_per_ip") == float64(i+1)
			})
			_ = held[0].conn.Close()
			waitFor(t, "a held connection to close", func() bool { return h.metric(t, "disgw_connections", "") == 2 })
			tr.assertServes(t, h)
			for _, rc := range held[1:] {
				_ = rc.conn.Close()
			}
			waitFor(t, "the held connections to close", func() bool { return h.metric(t, "disgw_connections", "") == 0 })
		})
	}
}
