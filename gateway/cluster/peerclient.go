package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PeerClients send Kafka requests to other gateways, signed in with
// MechPeer, for what one gateway asks of another: transaction markers, a
// transaction's verification, a forwarded offset commit
// (docs/design.md §13). Each peer gets one franz-go client, kept between
// calls, whose connections sign in again whenever they are opened again.
// TLS certificates are not verified, as a probe's are not (KafkaProber):
// the sign-in is what is trusted.
type PeerClients struct {
	// TLS is set when the peers' first listener is SSL or SASL_SSL.
	TLS bool
	// Secret is the peers' shared secret.
	Secret []byte
	// From is this gateway's node id, which the sign-in names.
	From int32

	mu      sync.Mutex
	clients map[int32]*peerClient
	closed  bool
}

// peerClient is the client of one peer at one address.
type peerClient struct {
	addr string
	cl   *kgo.Client
}

var errPeersClosed = errors.New("the gateway is stopping: no more calls to peers")

// Request sends req to p at the version both sides support best and
// returns p's answer; it is not retried.
func (pc *PeerClients) Request(ctx context.Context, p Peer, req kmsg.Request) (kmsg.Response, error) {
	cl, err := pc.client(p)
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errPeersClosed
	}
	return seeds[0].Request(ctx, req)
}

// client is p's client, made on first use and again when p's address
// changed.
func (pc *PeerClients) client(p Peer) (*kgo.Client, error) {
	addr := net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port)))
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return nil, errPeersClosed
	}
	if c := pc.clients[p.ID]; c != nil {
		if c.addr == addr {
			return c.cl, nil
		}
		c.cl.Close()
		delete(pc.clients, p.ID)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID("disgw-peer"),
		kgo.SASL(peerMechanism{secret: pc.Secret, from: pc.From}),
	}
	if pc.TLS {
		// Not verified on purpose: the sign-in is (see PeerClients).
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	if pc.clients == nil {
		pc.clients = make(map[int32]*peerClient)
	}
	pc.clients[p.ID] = &peerClient{addr: addr, cl: cl}
	return cl, nil
}

// Close closes every peer's client; later calls fail.
func (pc *PeerClients) Close() {
	pc.mu.Lock()
	clients := pc.clients
	pc.clients, pc.closed = nil, true
	pc.mu.Unlock()
	for _, c := range clients {
		c.cl.Close()
	}
}
