package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/groups"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/groupcoord"
)

// lockProbeDIS checks, as each DIS call a test makes begins, that none of
// the gateway's locks documented as never held across a DIS call
// (docs/design.md §11) is held. The gateway was never started, so only
// the calls under test take its locks; some of them run DIS calls side by
// side (namesForIDs), and one of those may hold a lock for a moment, so a
// lock counts as held across the call only when it stays taken for the
// whole of lockHeldFor.
type lockProbeDIS struct {
	disclient.API
	t     *testing.T
	locks func() map[string]*sync.Mutex
	// groups is the group driver, whose lock is its package's own.
	groups func() *groups.Driver[*tenant]
	calls  atomic.Int64
}

// lockHeldFor is how long a lock must stay taken to count as held across a
// DIS call: far longer than any lock of the gateway's is held otherwise.
const lockHeldFor = 200 * time.Millisecond

func (d *lockProbeDIS) check(op string) {
	d.t.Helper()
	d.calls.Add(1)
	for name, mu := range d.locks() {
		if !tryLockWithin(mu, lockHeldFor) {
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

// tryLockWithin takes mu if it comes free within d.
func tryLockWithin(mu *sync.Mutex, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !mu.TryLock() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
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
// not the tenants lock or the group driver's (the catalog's own lock is
// checked in gateway/topics).
func TestNoLockAcrossDISCalls(t *testing.T) {
	backend := localDIS(t)
	createStreams(t, backend, 1, "t1", "t2")
	var gw *Gateway
	var tenants []*tenant
	locks := func() map[string]*sync.Mutex {
		return map[string]*sync.Mutex{"Gateway.tenantsMu": &gw.tenantsMu}
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
	if passthrough.calls.Load() != 2 {
		t.Fatalf("%d DIS calls for two sign-ins, want 2", passthrough.calls.Load())
	}

	for _, tn := range []*tenant{gw.tenant, tenants[0]} {
		c := tn.catalog
		if _, err := c.Get(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(ctx, "missing"); err != topics.ErrUnknownTopic {
			t.Fatalf("an unknown topic: %v", err)
		}
		c.Invalidate("t1")
		c.GetMany(ctx, []string{"t1", "t2", "gone"}, topics.NewCallBudget(1))
		c.NamesForIDs(ctx, [][16]byte{{1}}, topics.NewCallBudget(2))
		if _, err := c.Collision(ctx, "a.b"); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, "t3-"+tn.accessKey, 1, nil, FormatKafka); err != nil {
			t.Fatal(err)
		}
	}
	if own.calls.Load() == 0 || passthrough.calls.Load() <= 2 {
		t.Fatalf("the catalog made %d and %d DIS calls", own.calls.Load(), passthrough.calls.Load())
	}
}
