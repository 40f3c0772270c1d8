package gateway

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
)

// Another gateway signs in with the peers' secret (cluster.MechPeer) on a
// PLAINTEXT listener and is answered as a broker; one with another secret
// is refused.
func TestPeerSignIn(t *testing.T) {
	secret := []byte("0123456789abcdef-peer")
	gw := startGateway(t, Config{PeerSecret: secret}, localDIS(t))
	host, port, _ := net.SplitHostPort(gw.Addr().String())
	p, _ := strconv.Atoi(port)
	peer := cluster.Peer{ID: 0, Host: host, Port: int32(p)}
	call := func(secret []byte) (kmsg.Response, error) {
		pc := &cluster.PeerClients{Secret: secret, From: 5}
		defer pc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return pc.Request(ctx, peer, kmsg.NewPtrListTransactionsRequest())
	}
	resp, err := call(secret)
	if err != nil {
		t.Fatalf("a peer with the secret: %v", err)
	}
	if code := resp.(*kmsg.ListTransactionsResponse).ErrorCode; code != 0 {
		t.Fatalf("ListTransactions from a peer: %d", code)
	}
	if _, err := call([]byte("another-secret-0123456")); err == nil {
		t.Fatal("a peer with another secret was answered")
	}
}

// peersMembership is a membership with peers that never changes.
type peersMembership struct{ switchableOwner }

func (m *peersMembership) Changed() <-chan struct{} { return make(chan struct{}) }

// Gateways with peers serve transactions to clients of their own DIS
// credentials only, with a way to call each other; a passthrough tenant's
// credentials stay on one gateway, so its transactions are refused. A
// gateway alone serves every tenant's.
func TestTransactionalTenants(t *testing.T) {
	alone, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	passthrough := newTenant(alone, "ak/hash", "ak", nil)
	if !alone.transactional(alone.tenant) || !alone.transactional(passthrough) {
		t.Fatal("a gateway alone refuses transactions")
	}
	self := cluster.Peer{ID: 0}
	m := &peersMembership{switchableOwner{owner: self, peers: []cluster.Peer{self, {ID: 1}}}}
	noCalls, err := New(Config{Membership: m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if noCalls.transactional(noCalls.tenant) {
		t.Fatal("a gateway with peers and no way to call them serves transactions")
	}
	withCalls, err := New(Config{Membership: m, Peers: &cluster.PeerClients{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !withCalls.transactional(withCalls.tenant) || withCalls.transactional(newTenant(withCalls, "ak/hash", "ak", nil)) {
		t.Fatal("with peers: want the own tenant served and a passthrough tenant refused")
	}
}
