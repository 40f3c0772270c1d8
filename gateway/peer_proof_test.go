package gateway

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/disgw/disgw/gateway/cluster"
)

// A peer counts only when it proves it holds the cluster's secret: a
// probe with the gateway's secret succeeds, one with another secret fails,
// and a gateway holding no secret (any Kafka-like listener) is no peer.
func TestPeerProbeNeedsProof(t *testing.T) {
	secret := []byte("0123456789abcdef-peer")
	with := startGateway(t, Config{PeerSecret: secret}, localDIS(t))
	without := startGateway(t, Config{}, localDIS(t))
	probe := func(prober *cluster.KafkaProber, gw *Gateway) error {
		defer prober.Close()
		host, port, _ := net.SplitHostPort(gw.Addr().String())
		p, _ := strconv.Atoi(port)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return prober.Probe(ctx, cluster.Peer{ID: 1, Host: host, Port: int32(p)}, true)
	}
	if err := probe(&cluster.KafkaProber{Secret: secret}, with); err != nil {
		t.Fatalf("a gateway with the secret: %v", err)
	}
	if err := probe(&cluster.KafkaProber{Secret: []byte("another-secret-0123456")}, with); err == nil {
		t.Fatal("a probe with another secret took the gateway for a peer")
	}
	if err := probe(&cluster.KafkaProber{Secret: secret}, without); err == nil {
		t.Fatal("a gateway without the secret was taken for a peer")
	}
}

// A probe names its sender and whether it counts the probed gateway live;
// a starting gateway coordinates groups once its peers count it live.
func TestPeerProbeNamesSender(t *testing.T) {
	gw := startGateway(t, Config{GroupHandoverWait: time.Hour}, localDIS(t))
	host, port, _ := net.SplitHostPort(gw.Addr().String())
	p, _ := strconv.Atoi(port)
	prober := &cluster.KafkaProber{From: 7}
	defer prober.Close()
	live := []cluster.Peer{{ID: gw.cfg.NodeID}, {ID: 7}}
	for _, counted := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := prober.Probe(ctx, cluster.Peer{ID: 1, Host: host, Port: int32(p)}, counted)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := gw.handover.over(gw.cfg.NodeID, live); got != counted {
			t.Fatalf("after a probe from node 7 counting it live=%v: coordinating %v", counted, got)
		}
	}
}
