package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

// localDIS is an embedded DIS for one test, without fsync, closed when the
// test ends.
func localDIS(t testing.TB) *disclient.Client {
	t.Helper()
	return dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
}

// startGateway starts a gateway over dis on a free loopback port (unless
// cfg names a listener) and closes it when the test ends.
func startGateway(t testing.TB, cfg Config, dis disclient.API) *Gateway {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	gw, err := New(cfg, dis)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Close(ctx)
	})
	return gw
}
