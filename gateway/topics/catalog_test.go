package topics

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

// lockProbeDIS checks, as each DIS call begins, that the catalog's lock is
// not held (docs/design.md §11). The test calls from one goroutine, so a
// lock found taken is held by the caller.
type lockProbeDIS struct {
	disclient.API
	t     *testing.T
	c     *Catalog
	calls int
}

func (d *lockProbeDIS) check(op string) {
	d.t.Helper()
	d.calls++
	if !d.c.mu.TryLock() {
		d.t.Errorf("%s called with Catalog.mu held", op)
		return
	}
	d.c.mu.Unlock()
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

// testCatalog is a catalog with the gateway's default settings over dis,
// running its parallel calls one after another.
func testCatalog(dis disclient.API) *Catalog {
	return NewCatalog(Deps{
		Config: *testConfigDefaults(),
		DIS:    dis,
		Log:    zerolog.Nop(),
		Parallel: func(n int, fn func(i int)) {
			for i := range n {
				fn(i)
			}
		},
		KafkaCode: func(error) int16 { return -1 },
	})
}

// The catalog calls DIS with its lock released.
func TestNoLockAcrossDISCalls(t *testing.T) {
	backend := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	ctx := context.Background()
	for _, n := range []string{"t1", "t2"} {
		if err := backend.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: n, PartitionCount: 1}); err != nil {
			t.Fatal(err)
		}
	}
	d := &lockProbeDIS{API: backend, t: t}
	c := testCatalog(d)
	d.c = c
	if _, err := c.Get(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "missing"); err != ErrUnknownTopic {
		t.Fatalf("an unknown topic: %v", err)
	}
	c.Invalidate("t1")
	c.GetMany(ctx, []string{"t1", "t2", "gone"}, NewCallBudget(1))
	c.NamesForIDs(ctx, [][16]byte{{1}}, NewCallBudget(2))
	if _, err := c.Collision(ctx, "a.b"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, "t3", 1, nil, FormatKafka); err != nil {
		t.Fatal(err)
	}
	if d.calls == 0 {
		t.Fatal("the catalog made no DIS calls")
	}
}
