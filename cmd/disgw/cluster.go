package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/gateway/cluster"
)

// newCluster builds the membership --peers or --peers-dns ask for and sets
// cfg.Membership and cfg.NodeID from it; without either the gateway is
// alone with --node-id, and nil is returned. A peer's address is the
// advertised address of its first listener (--listen, or the first of
// --listeners with --listen -): with --peers this gateway's own entry is
// that address, and becomes it when none is advertised.
// minPeerSecret is the shortest --peer-secret taken: 16 random characters
// are already beyond guessing by probes.
const minPeerSecret = 16

func newCluster(o *options, cfg *gateway.Config, log zerolog.Logger) (*cluster.Cluster, error) {
	if o.nodeID < 0 || o.nodeID > math.MaxInt32 {
		return nil, fmt.Errorf("--node-id must be from 0 to %d", math.MaxInt32)
	}
	cfg.NodeID = int32(o.nodeID)
	if o.peers == "" && o.peersDNS == "" {
		return nil, nil
	}
	switch {
	case o.peers != "" && o.peersDNS != "":
		return nil, errors.New("use either --peers or --peers-dns, not both")
	case o.peersDNS != "" && o.nodeIDSet:
		return nil, errors.New("--node-id cannot go with --peers-dns: node ids come from the peers' addresses")
	case o.peerProbeInterval <= 0 || o.peerDeadAfter <= o.peerProbeInterval:
		return nil, errors.New("--peer-probe-interval must be positive and --peer-dead-after longer")
	case len(o.peerSecret) < minPeerSecret:
		return nil, fmt.Errorf("--peers and --peers-dns need a shared secret of at least %d characters in DISGW_PEER_SECRET (--peer-secret), the same on every gateway: "+
			"a peer must prove it holds it, or any address that answers like Kafka would become a peer that clients are sent to", minPeerSecret)
	}
	cfg.PeerSecret = []byte(o.peerSecret)
	listen, advertised, protocol := &cfg.Listen, &cfg.AdvertisedAddr, gateway.Plaintext
	if cfg.Listen == "-" {
		if len(cfg.Listeners) == 0 {
			return nil, errors.New("--peers and --peers-dns need a Kafka listener")
		}
		first := &cfg.Listeners[0]
		listen, advertised, protocol = &first.Addr, &first.AdvertisedAddr, first.Protocol
	}
	tls := protocol == gateway.SSL || protocol == gateway.SASLSSL
	prober := &cluster.KafkaProber{TLS: tls, Secret: cfg.PeerSecret}
	peers := &cluster.PeerClients{TLS: tls, Secret: cfg.PeerSecret}
	ccfg := cluster.Config{
		ProbeInterval: o.peerProbeInterval,
		DeadAfter:     o.peerDeadAfter,
		Prober:        prober,
		Logger:        log,
	}
	if o.peers != "" {
		peers, err := cluster.ParsePeers(o.peers)
		if err != nil {
			return nil, fmt.Errorf("--peers: %w", err)
		}
		i := slices.IndexFunc(peers, func(p cluster.Peer) bool { return p.ID == cfg.NodeID })
		if i < 0 {
			return nil, fmt.Errorf("--peers has no entry for this gateway's --node-id %d", cfg.NodeID)
		}
		self := peers[i]
		own := net.JoinHostPort(self.Host, strconv.Itoa(int(self.Port)))
		switch *advertised {
		case "":
			*advertised = own
		case own:
		default:
			return nil, fmt.Errorf("--peers gives node %d the address %s, but its %s listener advertises %s", self.ID, own, protocol, *advertised)
		}
		ccfg.Self, ccfg.Peers = self, peers
	} else {
		addr := *advertised
		if addr == "" {
			addr = *listen
		}
		host, port, err := cluster.ParseAddr(addr)
		if err != nil {
			return nil, fmt.Errorf("--peers-dns: the %s listener's advertised address: %w", protocol, err)
		}
		ccfg.Self, ccfg.DNS = cluster.Peer{Host: host, Port: port}, o.peersDNS
	}
	c, err := cluster.New(ccfg)
	if err != nil {
		return nil, err
	}
	cfg.NodeID, cfg.Membership = c.Self().ID, c
	// Set before the cluster starts probing: only then is Self's id known
	// with --peers-dns.
	prober.From, peers.From = cfg.NodeID, cfg.NodeID
	cfg.Peers = peers
	cfg.GroupHandoverWait = o.peerDeadAfter + o.peerProbeInterval
	log.Info().Int32("node_id", cfg.NodeID).Int("peers", len(ccfg.Peers)).Str("peers_dns", o.peersDNS).
		Dur("probe_interval", o.peerProbeInterval).Dur("dead_after", o.peerDeadAfter).Msg("cluster of gateways")
	return c, nil
}
