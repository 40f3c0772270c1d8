package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/groups"
	"github.com/disgw/disgw/groupcoord"
)

// lockProbeDIS checks, as each DIS call a test makes begins, that none of
// the gateway's locks documented as never held across a DIS call
// (docs/design.md §11) is held. The test calls from one goroutine on a
// gateway that was never started, so a lock found taken is held by the
// caller.
type lockProbeDIS struct {
	disclient.API
	t     *testing.T
	locks func() map[string]*sync.Mutex
	// groups is the group driver, whose lock is its package's own.
	groups func() *groups.Driver[*tenant]
	calls  int
}

func (d *lockProbeDIS) check(op string) {
	d.t.Helper()
	d.calls++
	for name, mu := range d.locks() {
		if !mu.TryLock() {
			d.t.Errorf("%s called with %s held", op, name)
			continue
		}
		mu.Unlock()
	}
	if !driverFree(d.groups()) {
		d.t.Errorf("%s called with groups.Driver.mu held", op)
	}
}

// driverFree reports whether the group driver's lock is free: whether
// WithEach gets it within a second.
func driverFree(d *groups.Driver[*tenant]) bool {
	done := make(chan struct{})
	go func() {
		d.WithEach(func(string, string, *groupcoord.Coordinator) {})
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(time.Second):
		return false
	}
}

func (d *lockProbeDIS) CreateStream(ctx context.Context, req *disclient.CreateStreamRequest) error {
	d.check("CreateStream")
	return d.API.CreateStream(ctx, req)
}

func (d *lockProbeDIS) ListStreams(ctx context.Context, limit int, start string) (*disclient.ListStreamsResponse, error) {
	d.check("ListStreams")
	return d.API.ListStreams(ctx, limit, start)
}

func (d *lockProbeDIS) DescribeStream(ctx context.Context, name, start string, limit int) (*disclient.DescribeStreamResponse, error) {
	d.check("DescribeStream")
	return d.API.DescribeStream(ctx, name, start, limit)
}

// Sign-ins and the catalog call DIS with no lock of the gateway's held:
// not the tenants lock, the group driver's, or a tenant's catalog.
func TestNoLockAcrossDISCalls(t *testing.T) {
	backend := localDIS(t)
	createStreams(t, backend, 1, "t1", "t2")
	var gw *Gateway
	var tenants []*tenant
	locks := func() map[string]*sync.Mutex {
		m := map[string]*sync.Mutex{"Gateway.tenantsMu": &gw.tenantsMu}
		for _, tn := range append([]*tenant{gw.tenant}, tenants...) {
			m["catalog.mu of "+tn.accessKey] = &tn.catalog.mu
		}
		return m
	}
	driver := func() *groups.Driver[*tenant] { return gw.groups }
	own := &lockProbeDIS{API: backend, t: t, locks: locks, groups: driver}
	passthrough := &lockProbeDIS{API: backend, t: t, locks: locks, groups: driver}
	gw = newIdleTestGateway(t, own, func(c *Config) {
		c.SASLPassthrough = true
		c.NewTenantDIS = func(ak, sk string) (disclient.API, error) { return passthrough, nil }
	})
	ctx := context.Background()

	for range 2 { // a new tenant, then one already held
		tn, err := gw.passthroughTenant(ctx, "AK", "SK")
		if err != nil {
			t.Fatal(err)
		}
		tenants = append(tenants[:0], tn)
	}
	if passthrough.calls != 2 {
		t.Fatalf("%d DIS calls for two sign-ins, want 2", passthrough.calls)
	}

	for _, tn := range []*tenant{gw.tenant, tenants[0]} {
		c := tn.catalog
		if _, err := c.get(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.get(ctx, "missing"); err != errUnknownTopic {
			t.Fatalf("an unknown topic: %v", err)
		}
		c.invalidate("t1")
		c.getMany(ctx, []string{"t1", "t2", "gone"}, newCallBudget(1))
		c.namesForIDs(ctx, [][16]byte{{1}}, newCallBudget(2))
		if _, err := c.collision(ctx, "a.b"); err != nil {
			t.Fatal(err)
		}
		if err := c.create(ctx, "t3", &disclient.CreateStreamRequest{StreamName: "t3-" + tn.accessKey, PartitionCount: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if own.calls == 0 || passthrough.calls <= 2 {
		t.Fatalf("the catalog made %d and %d DIS calls", own.calls, passthrough.calls)
	}
}
