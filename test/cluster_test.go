package test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/gateway"
)

// startCluster starts a gateway and embedded DIS for one test; tweak adjusts
// the gateway configuration.
func startCluster(t *testing.T, tweak func(*gateway.Config)) *Cluster {
	t.Helper()
	return startClusterIn(t, t.TempDir(), tweak)
}

func startClusterIn(t *testing.T, dir string, tweak func(*gateway.Config)) *Cluster {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: dir, Logger: log, Gateway: tweak})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	return c
}

// newClient is a franz-go client for the cluster.
func newClient(t *testing.T, c *Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a topic through the gateway with kadm.
func createTopic(t *testing.T, c *Cluster, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if resp.Err != nil {
		t.Fatalf("create topic %s: %v (%s)", name, resp.Err, resp.ErrMessage)
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
