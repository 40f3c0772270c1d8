package test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
)

// TestIdlePassthroughTenantEvicted: passthrough credentials whose last
// connection closed are dropped after StateIdleTimeout, closing their DIS client;
// signing in with them again builds a new one that reads what the first
// wrote. With MaxTenants held and all connected, new credentials are
// refused with a clear message.
func TestIdlePassthroughTenantEvicted(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	built := map[string]int{}
	closed := map[string]int{}
	c, err := Start(Options{
		Dir:    t.TempDir(),
		Logger: zerolog.Nop(),
		Credentials: map[string]dislocal.Credential{
			gatewayAK: {SecretKey: gatewaySK},
			tenant1AK: {SecretKey: tenant1SK, ProjectID: ProjectID},
			tenant2AK: {SecretKey: tenant2SK, ProjectID: ProjectID},
		},
		Signer: disclient.AKSKSigner{AccessKey: gatewayAK, SecretKey: gatewaySK},
		TenantDIS: func(accessKey string, cfg disclient.Config) (disclient.API, error) {
			cl, err := disclient.New(cfg)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			built[accessKey]++
			mu.Unlock()
			return &countingDIS{API: cl, recordCalls: &recordCalls{}, close: func() {
				mu.Lock()
				closed[accessKey]++
				mu.Unlock()
				cl.Close()
			}}, nil
		},
		Gateway: func(cfg *gateway.Config) {
			cfg.AutoCreateTopics = false
			cfg.SASLPassthrough = true
			cfg.StateIdleTimeout = 300 * time.Millisecond
			cfg.MaxTenants = 1
			cfg.Listeners = []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := testContext(t, 45*time.Second)
	counts := func(ak string) (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return built[ak], closed[ak]
	}

	t1 := passthroughClient(t, c, tenant1AK, tenant1SK, kgo.DefaultProduceTopic("idle"))
	if _, err := kadm.NewClient(t1).CreateTopic(ctx, 1, -1, nil, "idle"); err != nil {
		t.Fatal(err)
	}
	if err := t1.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// One tenant is held and connected: other credentials are refused.
	t2 := passthroughClient(t, c, tenant2AK, tenant2SK)
	if err := t2.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "--max-tenants") {
		t.Fatalf("new credentials beyond --max-tenants: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	t2.Close()

	// Idle for longer than StateIdleTimeout with no connection: dropped.
	t1.Close()
	for {
		if _, n := counts(tenant1AK); n == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("an idle passthrough tenant's DIS client was never closed")
		case <-time.After(50 * time.Millisecond):
		}
	}

	// Signing in again checks the keys anew and builds a new DIS client,
	// which reads what the first one wrote.
	atStart := kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"idle": {0: kgo.NewOffset().AtStart()}})
	again := passthroughClient(t, c, tenant1AK, tenant1SK, atStart)
	if got := consumeAll(t, ctx, again, 1); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("consumed %q after the tenant came back", got)
	}
	if b, cl := counts(tenant1AK); b != 2 || cl != 1 {
		t.Fatalf("DIS clients of the credentials: %d built, %d closed; want 2 and 1", b, cl)
	}
	again.Close()
}
