package cluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeProber answers probes from a set of peers that are down, and
// keeps what each successful probe told its peer: whether it counts it
// live.
type fakeProber struct {
	mu   sync.Mutex
	down map[int32]bool
	told map[int32][]bool
}

func (f *fakeProber) Probe(_ context.Context, p Peer, live bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[p.ID] {
		return errors.New("down")
	}
	if f.told == nil {
		f.told = map[int32][]bool{}
	}
	f.told[p.ID] = append(f.told[p.ID], live)
	return nil
}

// toldSince is what successful probes told peer id from the n-th on.
func (f *fakeProber) toldSince(id int32, n int) []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.told[id][min(n, len(f.told[id])):])
}

func (f *fakeProber) set(id int32, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[id] = down
}

// syncBuffer is a log sink safe for the cluster's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitLive waits, through Changed, until c's live set is want.
func waitLive(t *testing.T, c *Cluster, want []int32) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ch := c.Changed()
		if got := ids(c.Live()); slices.Equal(got, want) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("live %v, want %v", ids(c.Live()), want)
		}
	}
}

// TestClusterFailover drives a Cluster with a prober whose peers go down
// and come back: Live and Owner follow, Changed wakes waiters, and each
// transition is logged once.
func TestClusterFailover(t *testing.T) {
	prober := &fakeProber{down: map[int32]bool{}}
	var logs syncBuffer
	c, err := New(Config{
		Self: peer(0), Peers: peerList(0, 1, 2),
		ProbeInterval: 10 * time.Millisecond, DeadAfter: 50 * time.Millisecond,
		Prober: prober, Logger: zerolog.New(&logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(c.Live()); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("live before any probe %v, want every peer", got)
	}
	c.Start(context.Background())
	defer c.Close()

	key := ""
	for i := 0; key == ""; i++ {
		if k := PartitionKey("t", int32(i)); c.Owner(k).ID == 2 {
			key = k
		}
	}
	prober.set(2, true)
	waitLive(t, c, []int32{0, 1})
	if o := c.Owner(key); o.ID == 2 {
		t.Fatalf("%s still owned by the dead peer", key)
	}
	before := len(prober.toldSince(2, 0))
	prober.set(2, false)
	waitLive(t, c, []int32{0, 1, 2})
	if o := c.Owner(key); o.ID != 2 {
		t.Fatalf("%s owned by %d after peer 2 came back", key, o.ID)
	}
	// The probe that brought peer 2 back told it it was not live yet;
	// the next ones tell it it is (what a starting gateway waits for).
	deadline := time.Now().Add(5 * time.Second)
	for len(prober.toldSince(2, before)) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if told := prober.toldSince(2, before); len(told) < 2 || told[0] || !told[1] {
		t.Fatalf("probes of the returning peer told it live %v, want false then true", told)
	}
	c.Close()
	out := logs.String()
	if n := strings.Count(out, `"peer dead`); n != 1 || !strings.Contains(out, `"level":"warn","node_id":2`) {
		t.Errorf("want one warn line for the dead peer, got:\n%s", out)
	}
	if n := strings.Count(out, `"peer alive"`); n != 1 {
		t.Errorf("want one line for the peer coming back, got:\n%s", out)
	}
}

// fakeResolver answers LookupHost from a settable list.
type fakeResolver struct {
	mu    sync.Mutex
	addrs []string
	err   error
}

func (f *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if host != "gateways.example" {
		return nil, errors.New("no such host " + host)
	}
	return slices.Clone(f.addrs), f.err
}

func (f *fakeResolver) set(addrs []string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs, f.err = addrs, err
}

// TestClusterDNS checks peers from DNS: ids come from addresses, self
// included; the peers are there when Start returns; a new address joins,
// a failed lookup keeps the peers known, and a vanished address leaves.
func TestClusterDNS(t *testing.T) {
	res := &fakeResolver{addrs: []string{"10.0.0.1", "10.0.0.2", "::ffff:10.0.0.3"}}
	c, err := New(Config{
		Self: Peer{Host: "10.0.0.1", Port: 9092}, DNS: "gateways.example:9092", Resolver: res,
		ProbeInterval: 10 * time.Millisecond, DeadAfter: time.Minute,
		Prober: &fakeProber{down: map[int32]bool{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if self := c.Self(); self.ID != 0x0a000001 {
		t.Fatalf("self id %#x, want 10.0.0.1's bits", self.ID)
	}
	c.Start(context.Background())
	defer c.Close()
	want := []Peer{{ID: 0x0a000001, Host: "10.0.0.1", Port: 9092}, {ID: 0x0a000002, Host: "10.0.0.2", Port: 9092}, {ID: 0x0a000003, Host: "10.0.0.3", Port: 9092}}
	if got := c.Live(); !slices.Equal(got, want) {
		t.Fatalf("live after Start %+v, want %+v", got, want)
	}
	res.set([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}, nil)
	waitLive(t, c, []int32{0x0a000001, 0x0a000002, 0x0a000003, 0x0a000004})
	res.set(nil, errors.New("SERVFAIL"))
	ch := c.Changed()
	select {
	case <-ch:
		t.Fatalf("a failed lookup changed the live set to %v", ids(c.Live()))
	case <-time.After(200 * time.Millisecond):
	}
	res.set([]string{"10.0.0.1", "10.0.0.4"}, nil)
	waitLive(t, c, []int32{0x0a000001, 0x0a000004})
}

func TestClusterConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no peers":              {Self: peer(0)},
		"list and DNS":          {Self: peer(0), Peers: peerList(1), DNS: "gw:9092"},
		"DNS without port":      {Self: peer(0), DNS: "gw"},
		"DNS, self a host name": {Self: Peer{Host: "gw0", Port: 9092}, DNS: "gw:9092"},
		"DNS, self elsewhere":   {Self: Peer{Host: "10.0.0.1", Port: 9093}, DNS: "gw:9092"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// kafkaStub answers ApiVersions like a Kafka listener; it counts the
// connections it accepted and closes each after closeAfter answers.
type kafkaStub struct {
	ln         net.Listener
	accepted   atomic.Int32
	closeAfter int
}

func startKafkaStub(t *testing.T, tlsCfg *tls.Config, closeAfter int) *kafkaStub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s := &kafkaStub{ln: ln, closeAfter: closeAfter}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go s.serve(conn)
		}
	}()
	return s
}

func (s *kafkaStub) serve(conn net.Conn) {
	defer conn.Close()
	for range s.closeAfter {
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		req := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, req); err != nil || len(req) < 8 {
			return
		}
		if key := binary.BigEndian.Uint16(req); key != 18 {
			return
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = int16(binary.BigEndian.Uint16(req[2:]))
		body := append(append([]byte{0, 0, 0, 0}, req[4:8]...), resp.AppendTo(nil)...)
		binary.BigEndian.PutUint32(body, uint32(len(body)-4))
		if _, err := conn.Write(body); err != nil {
			return
		}
	}
}

func (s *kafkaStub) peer() Peer {
	a := s.ln.Addr().(*net.TCPAddr)
	return Peer{ID: 1, Host: a.IP.String(), Port: int32(a.Port)}
}

func probeOnce(k *KafkaProber, p Peer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return k.Probe(ctx, p, true)
}

// TestKafkaProber checks that ApiVersions probes keep one connection open,
// open a new one after the peer closed it, and fail against a closed port.
func TestKafkaProber(t *testing.T) {
	stub := startKafkaStub(t, nil, 3)
	k := &KafkaProber{}
	defer k.Close()
	for i := range 3 {
		if err := probeOnce(k, stub.peer()); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
	}
	if n := stub.accepted.Load(); n != 1 {
		t.Fatalf("%d connections for three probes, want one kept open", n)
	}
	if err := probeOnce(k, stub.peer()); err == nil {
		t.Fatal("probe on a connection the peer closed succeeded")
	}
	if err := probeOnce(k, stub.peer()); err != nil {
		t.Fatalf("probe after reconnecting: %v", err)
	}
	if n := stub.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want a second after the first closed", n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr)
	_ = ln.Close()
	if err := probeOnce(k, Peer{ID: 2, Host: "127.0.0.1", Port: int32(closed.Port)}); err == nil {
		t.Fatal("probe of a closed port succeeded")
	}
}

// TestKafkaProberTLS probes a TLS listener with a self-signed certificate
// the prober does not verify; a plaintext prober gets no answer there.
func TestKafkaProberTLS(t *testing.T) {
	stub := startKafkaStub(t, selfSigned(t), 10)
	k := &KafkaProber{TLS: true}
	defer k.Close()
	if err := probeOnce(k, stub.peer()); err != nil {
		t.Fatalf("TLS probe: %v", err)
	}
	plain := &KafkaProber{}
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := plain.Probe(ctx, stub.peer(), true); err == nil {
		t.Fatal("a plaintext probe of a TLS listener succeeded")
	}
}

func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}
