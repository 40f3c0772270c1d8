// Package test runs disgw end to end: it starts the gateway with its embedded
// DIS server on loopback ports, the way `disgw` with no DIS account does, for
// the end-to-end tests beside this file and the bench command in test/bench.
package test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/gateway/cluster"
)

// ProjectID is the DIS project id the harness uses.
const ProjectID = "e2e"

// Options configure a Cluster.
type Options struct {
	// Dir is the embedded DIS data directory.
	Dir string
	// Sync is the embedded DIS durability mode (default always).
	Sync dislocal.SyncMode
	// Quotas makes the embedded DIS enforce DIS's per-partition traffic
	// limits (default none).
	Quotas dislocal.QuotaMode
	// Logger receives every component's logs; the zero value discards them.
	Logger zerolog.Logger
	// Gateway adjusts the gateway configuration before it starts.
	Gateway func(*gateway.Config)
	// Encoding is how the client sends PutRecords and GetRecords bodies to
	// the embedded DIS server (default JSON).
	Encoding disclient.BodyEncoding
	// Credentials makes the embedded DIS server require signatures made
	// with one of these keys (access key → credential).
	Credentials map[string]dislocal.Credential
	// Signer signs the gateway's own DIS calls; nil sends them unsigned.
	Signer disclient.Signer
	// TenantDIS, for a gateway in SASL passthrough mode without its own
	// NewTenantDIS, builds a client's DIS client from the configuration the
	// harness made for it (embedded endpoint, ProjectID, the client's
	// AK/SK), so tests can change the project or watch the calls; nil
	// uses disclient.New.
	TenantDIS func(accessKey string, cfg disclient.Config) (disclient.API, error)
	// WrapDIS, when set, wraps the gateway's own DIS client, so tests can
	// slow DIS down or watch its calls.
	WrapDIS func(disclient.API) disclient.API
	// DISHandler, when set, wraps the embedded DIS server's HTTP handler:
	// a fault injector in front of it (test/faultproxy).
	DISHandler func(http.Handler) http.Handler
	// DISConfig adjusts the embedded DIS server's configuration (its
	// clock, for retention tests).
	DISConfig func(*dislocal.Config)
	// Clock, when set, is the one clock of the embedded DIS server (what
	// it expires records by, swept every 20 ms so that moving the clock
	// expires them at once) and of the gateways (what kept topics'
	// rewrites decide by, gateway.Config.Now). DISConfig and Gateway may
	// still change either.
	Clock func() time.Time
	// Gateways is how many gateways share the embedded DIS server
	// (default 1). With more, gateway i has node id i and a Membership of
	// its own that the test controls (Cluster.Members), every gateway live.
	Gateways int
	// LocalDIS makes the gateway's own DIS client the embedded server's
	// LocalClient, as cmd/disgw's default --embedded-dis-transport local
	// does: records in process, everything else over Client. DISHandler
	// then sees only the other calls.
	LocalDIS bool
}

// testACLKey is the ACL key of the gateways a test runs with the ACL
// authorizer and no key of its own: every gateway of a Cluster shares it,
// as every gateway of a DIS project must.
var testACLKey = []byte("the ACL key of the gateways under test")

// Cluster is one gateway, or several, in front of one embedded DIS server.
type Cluster struct {
	DIS     *dislocal.Server
	DISURL  string
	Client  *disclient.Client
	Gateway *gateway.Gateway
	// Addr is the Kafka bootstrap address.
	Addr string
	// Gateways are every gateway, Gateway first, and Addrs their
	// bootstrap addresses; Members their Memberships, with several.
	Gateways []*gateway.Gateway
	Addrs    []string
	Members  []*Membership

	peers []*cluster.PeerClients
	// firstCfg is the first gateway's configuration, with its node id,
	// Membership and peer clients when there are several.
	firstCfg  gateway.Config
	dis       *dislocaltest.Server
	cfg       gateway.Config
	api       disclient.API
	closeOnce sync.Once
	closeErr  error
}

// Start opens the embedded DIS server in o.Dir and a gateway in front of it,
// both on free loopback ports.
func Start(o Options) (*Cluster, error) {
	dis, err := dislocaltest.New(
		dislocaltest.WithDIS(func(c *dislocal.Config) {
			c.Dir, c.Sync, c.Logger, c.Credentials, c.Quotas = o.Dir, o.Sync, o.Logger, o.Credentials, o.Quotas
			if o.Clock != nil {
				c.Now, c.RetentionCheckInterval = o.Clock, 20*time.Millisecond
			}
			if o.DISConfig != nil {
				o.DISConfig(c)
			}
		}),
		dislocaltest.WithClient(func(c *disclient.Config) {
			c.ProjectID, c.Signer, c.Encoding, c.Logger = ProjectID, o.Signer, o.Encoding, o.Logger
		}),
		dislocaltest.WithHandler(o.DISHandler))
	if err != nil {
		return nil, err
	}
	c := &Cluster{DIS: dis.DIS, DISURL: dis.URL, Client: dis.Client, dis: dis}
	cfg := gateway.Config{
		Listen:               "127.0.0.1:0",
		AutoCreateTopics:     true,
		Logger:               o.Logger,
		PutRecordsMaxRecords: 5000,
		PutRecordsMaxBytes:   8 << 20,
		PutRecordsKeepsOrder: true,
		// Tests start group members one after another; Kafka's 3 s wait
		// for more members would only slow them down.
		InitialRebalanceDelay: 100 * time.Millisecond,
		Now:                   o.Clock,
	}
	if o.Gateway != nil {
		o.Gateway(&cfg)
	}
	if cfg.Authorizer == gateway.AuthorizerACL && cfg.ACLKey == nil {
		cfg.ACLKey = testACLKey
	}
	if cfg.SASLPassthrough && cfg.NewTenantDIS == nil {
		cfg.NewTenantDIS = func(accessKey, secretKey string) (disclient.API, error) {
			dc := disclient.Config{Endpoint: c.DISURL, ProjectID: ProjectID, Encoding: o.Encoding, Logger: o.Logger,
				Signer: disclient.AKSKSigner{AccessKey: accessKey, SecretKey: secretKey}}
			if o.TenantDIS != nil {
				return o.TenantDIS(accessKey, dc)
			}
			return disclient.New(dc)
		}
	}
	var api disclient.API = c.Client
	if o.LocalDIS {
		api = dis.DIS.LocalClient(ProjectID, c.Client)
	}
	if o.WrapDIS != nil {
		api = o.WrapDIS(api)
	}
	c.cfg, c.api = cfg, api
	if err := c.startGateways(max(o.Gateways, 1)); err != nil {
		_ = c.close()
		return nil, err
	}
	c.Gateway, c.Addr = c.Gateways[0], c.Addrs[0]
	return c, nil
}

// testPeerSecret is the secret the gateways of a test cluster share.
var testPeerSecret = []byte("disgw-test-peer-secret")

// startGateways starts n gateways with the cluster's configuration; with
// more than one, each gets its node id, Membership and peer clients, and
// once all are bound every Membership learns their addresses.
func (c *Cluster) startGateways(n int) error {
	peers := make([]cluster.Peer, n)
	for i := range peers {
		peers[i].ID = int32(i)
	}
	for i := range n {
		cfg := c.cfg
		if n > 1 {
			m := newMembership(slices.Clone(peers))
			c.Members = append(c.Members, m)
			pc := &cluster.PeerClients{Secret: testPeerSecret, From: int32(i)}
			c.peers = append(c.peers, pc)
			cfg.NodeID, cfg.Membership, cfg.PeerSecret, cfg.Peers = int32(i), m, testPeerSecret, pc
		}
		if i == 0 {
			c.firstCfg = cfg
		}
		gw, err := gateway.New(cfg, c.api)
		if err == nil {
			err = gw.Start()
		}
		if err != nil {
			return fmt.Errorf("start gateway %d: %w", i, err)
		}
		c.Gateways = append(c.Gateways, gw)
		c.Addrs = append(c.Addrs, gw.Addr().String())
		addr := gw.Addr().(*net.TCPAddr)
		peers[i].Host, peers[i].Port = addr.IP.String(), int32(addr.Port)
	}
	for _, m := range c.Members {
		m.setAddrs(peers)
	}
	return nil
}

// RestartGateway stops the (first) gateway and starts a new one with the
// same configuration in front of the same embedded DIS server, on the same
// address, so clients reconnect to it: what a gateway restart leaves, the
// DIS data, is all the new one has. A start whose listener finds the
// address taken is tried again for a while: between the stop and the
// bind, an outbound connection of this process (tests run in parallel)
// may hold the port as its source port for a moment.
func (c *Cluster) RestartGateway() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Gateway.Close(ctx); err != nil {
		return err
	}
	cfg := c.firstCfg
	cfg.Listen = c.Addr
	var gw *gateway.Gateway
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		gw, err = gateway.New(cfg, c.api)
		if err == nil {
			err = gw.Start()
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("restart gateway: %w", err)
	}
	c.Gateway, c.Addr = gw, gw.Addr().String()
	c.Gateways[0], c.Addrs[0] = c.Gateway, c.Addr
	return nil
}

// CloseGateway stops gateway i of several, as a gateway that died or was
// taken away; Close skips it.
func (c *Cluster) CloseGateway(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Gateways[i].Close(ctx)
}

// Close stops the gateway, then the embedded DIS server. Calls after the
// first return its result.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	for _, gw := range c.Gateways {
		// Close returns its first result again for a gateway CloseGateway stopped.
		err = errors.Join(err, gw.Close(ctx))
	}
	for _, pc := range c.peers {
		pc.Close()
	}
	_ = c.dis.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("gateway did not stop in time: %w", err)
	}
	return err
}
