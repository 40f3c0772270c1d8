package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Prober checks that a peer's Kafka listener answers; nil error means
// alive. Cluster calls it with a deadline of min(ProbeInterval, 1s), and
// never twice at once for one peer; live says whether this gateway counts
// p alive, which the probe tells p (PeerFromTag).
type Prober interface {
	Probe(ctx context.Context, p Peer, live bool) error
}

// Resolver is the part of net.Resolver that DNS peers need, so tests can
// answer for it.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// Config is how a Cluster finds and watches its peers.
type Config struct {
	// Self is this gateway: its node id and the advertised address of
	// its first listener. With DNS its id is derived from its address,
	// which must then be an IP address.
	Self Peer
	// Peers is the static peer list (--peers), self included or not.
	Peers []Peer
	// DNS, "NAME:PORT", takes the peers from DNS instead: every address
	// NAME resolves to is a peer at PORT, with its id derived from the
	// address (IDFromIP). NAME is resolved again every five
	// ProbeIntervals.
	DNS string
	// Resolver resolves DNS; nil is net.DefaultResolver.
	Resolver Resolver
	// ProbeInterval is how often each peer is probed; DeadAfter how long
	// a peer may go without a successful probe before it is dead. Zero
	// takes DefaultProbeInterval and DefaultDeadAfter.
	ProbeInterval, DeadAfter time.Duration
	// Prober probes peers; nil is a plaintext KafkaProber.
	Prober Prober
	// Logger gets a line each time a peer goes dead or comes alive.
	Logger zerolog.Logger
}

// Cluster is a gateway's membership, live: it probes its peers from one
// goroutine, feeds the results to a State and publishes the live set.
// Its Live, Owner and Changed are what the gateway asks (the gateway's
// Membership interface) and are safe from any goroutine.
type Cluster struct {
	cfg      Config
	dnsName  string
	dnsPort  int32
	timeout  time.Duration
	state    *State // owned by the run goroutine once started
	view     atomic.Pointer[view]
	results  chan probeResult
	resolved chan resolution
	cancel   context.CancelFunc
	done     chan struct{}
	workers  sync.WaitGroup // probes and DNS lookups in flight
}

// view is one published live set; changed is closed when it is replaced.
type view struct {
	live    []Peer
	version uint64
	changed chan struct{}
}

// resolution is a DNS lookup's peers; ok is false when it failed.
type resolution struct {
	peers []Peer
	ok    bool
}

type probeResult struct {
	id int32
	ok bool
	at time.Time
}

// New makes the membership of cfg.Self. It probes nothing until Start.
func New(cfg Config) (*Cluster, error) {
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = DefaultProbeInterval
	}
	if cfg.DeadAfter <= 0 {
		cfg.DeadAfter = DefaultDeadAfter
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Prober == nil {
		cfg.Prober = &KafkaProber{}
	}
	c := &Cluster{
		cfg:      cfg,
		timeout:  min(cfg.ProbeInterval, time.Second),
		results:  make(chan probeResult),
		resolved: make(chan resolution),
	}
	switch {
	case cfg.DNS != "" && len(cfg.Peers) > 0:
		return nil, errors.New("cluster: peers come from a list or from DNS, not both")
	case cfg.DNS != "":
		var err error
		if c.dnsName, c.dnsPort, err = ParseAddr(cfg.DNS); err != nil {
			return nil, fmt.Errorf("cluster: DNS peers: %w", err)
		}
		ip, err := netip.ParseAddr(cfg.Self.Host)
		if err != nil {
			return nil, fmt.Errorf("cluster: with DNS peers the gateway's advertised host must be an IP address, not %q", cfg.Self.Host)
		}
		if cfg.Self.Port != c.dnsPort {
			return nil, fmt.Errorf("cluster: the gateway's advertised port %d is not the DNS peers' port %d", cfg.Self.Port, c.dnsPort)
		}
		c.cfg.Self.ID = IDFromIP(ip)
	case len(cfg.Peers) == 0:
		return nil, errors.New("cluster: no peers")
	}
	c.state = NewState(c.cfg.Self, cfg.Peers, cfg.ProbeInterval, cfg.DeadAfter, time.Now())
	c.view.Store(&view{live: c.state.Live(), version: c.state.Version(), changed: make(chan struct{})})
	return c, nil
}

// Self is this gateway as the cluster knows it; with DNS peers its id is
// the one derived from its address.
func (c *Cluster) Self() Peer { return c.cfg.Self }

// Start probes the peers until ctx ends or Close. With DNS peers it
// resolves them once before returning, so that ownership is spread from
// the first request; if that fails the gateway starts alone and tries
// again.
func (c *Cluster) Start(ctx context.Context) {
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	if c.dnsName != "" {
		if peers, ok := c.resolve(ctx); ok {
			c.state.SetPeers(peers, time.Now())
			c.publish()
		}
	}
	go c.run(ctx)
}

// Close stops probing and waits for the probes and lookups in flight.
func (c *Cluster) Close() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	<-c.done
	c.workers.Wait()
	if cl, ok := c.cfg.Prober.(io.Closer); ok {
		_ = cl.Close()
	}
}

// Live lists the live gateways, this one included, sorted by node id.
func (c *Cluster) Live() []Peer { return slices.Clone(c.view.Load().live) }

// Owner is the live gateway owning key (PartitionKey, GroupKey).
func (c *Cluster) Owner(key string) Peer { return Owner(key, c.view.Load().live) }

// Changed is closed when the live set next changes.
func (c *Cluster) Changed() <-chan struct{} { return c.view.Load().changed }

func (c *Cluster) run(ctx context.Context) {
	defer close(c.done)
	// Ticks four times a probe interval: deaths are noticed within a
	// quarter interval of DeadAfter.
	tick := time.NewTicker(max(c.cfg.ProbeInterval/4, time.Millisecond))
	defer tick.Stop()
	var resolveTick <-chan time.Time
	if c.dnsName != "" {
		t := time.NewTicker(5 * c.cfg.ProbeInterval)
		defer t.Stop()
		resolveTick = t.C
	}
	resolving := false
	for {
		for _, p := range c.state.Tick(time.Now()) {
			live := slices.ContainsFunc(c.state.Live(), func(q Peer) bool { return q.ID == p.ID })
			c.probe(ctx, p, live)
		}
		c.publish()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case r := <-c.results:
			c.state.ProbeResult(r.id, r.ok, r.at)
		case <-resolveTick:
			if !resolving {
				resolving = true
				c.workers.Go(func() {
					peers, ok := c.resolve(ctx)
					select {
					case c.resolved <- resolution{peers: peers, ok: ok}:
					case <-ctx.Done():
					}
				})
			}
		case r := <-c.resolved:
			resolving = false
			if r.ok {
				c.state.SetPeers(r.peers, time.Now())
			}
		}
	}
}

// probe runs one probe of p in the background and reports it to run.
func (c *Cluster) probe(ctx context.Context, p Peer, live bool) {
	c.workers.Go(func() {
		pctx, cancel := context.WithTimeout(ctx, c.timeout)
		err := c.cfg.Prober.Probe(pctx, p, live)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Debug().Err(err).Int32("node_id", p.ID).Msg("peer probe failed")
		}
		select {
		case c.results <- probeResult{id: p.ID, ok: err == nil, at: time.Now()}:
		case <-ctx.Done():
		}
	})
}

// resolve looks the DNS peers up; false when DNS failed, and the peers
// stay as they were.
func (c *Cluster) resolve(ctx context.Context) ([]Peer, bool) {
	rctx, cancel := context.WithTimeout(ctx, 5*c.cfg.ProbeInterval)
	defer cancel()
	addrs, err := c.cfg.Resolver.LookupHost(rctx, c.dnsName)
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Warn().Err(err).Str("name", c.dnsName).Msg("peers: DNS lookup failed; keeping the peers known")
		}
		return nil, false
	}
	var peers []Peer
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		peers = append(peers, Peer{ID: IDFromIP(ip), Host: ip.String(), Port: c.dnsPort})
	}
	slices.SortFunc(peers, byID)
	return peers, true
}

// publish logs the peers that went dead or alive and, when the live set
// changed, publishes it and wakes those waiting on Changed.
func (c *Cluster) publish() {
	for _, ev := range c.state.Events() {
		addr := net.JoinHostPort(ev.Peer.Host, strconv.Itoa(int(ev.Peer.Port)))
		if ev.Alive {
			c.cfg.Logger.Info().Int32("node_id", ev.Peer.ID).Str("addr", addr).Msg("peer alive")
		} else {
			c.cfg.Logger.Warn().Int32("node_id", ev.Peer.ID).Str("addr", addr).Dur("dead_after", c.cfg.DeadAfter).Msg("peer dead: its partitions and groups move to the live peers")
		}
	}
	old := c.view.Load()
	if old.version == c.state.Version() {
		return
	}
	live := c.state.Live()
	c.view.Store(&view{live: live, version: c.state.Version(), changed: make(chan struct{})})
	close(old.changed)
	c.cfg.Logger.Debug().Int("live", len(live)).Msg("cluster membership changed")
}
