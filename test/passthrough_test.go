package test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
)

// Passthrough credentials: the gateway's own, two clients in the harness
// project, and one whose key is bound to another project.
const (
	gatewayAK, gatewaySK = "AKGATEWAY", "gateway-secret-key-000"
	tenant1AK, tenant1SK = "AKTENANT1", "tenant1-secret-key-111"
	tenant2AK, tenant2SK = "AKTENANT2", "tenant2-secret-key-222"
	otherAK, otherSK     = "AKOTHER", "other-secret-key-333"
	otherProject         = "other"
)

// recordCalls counts the record calls made with one access key, to show
// whose credentials carried them.
type recordCalls struct {
	putRecords atomic.Int64
	getRecords atomic.Int64
}

// countingDIS is a passthrough client that counts its record calls.
type countingDIS struct {
	disclient.API
	close func()
	*recordCalls
}

func (d *countingDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	d.putRecords.Add(1)
	return d.API.PutRecords(ctx, req)
}

func (d *countingDIS) GetRecords(ctx context.Context, cursor string, maxFetchBytes int) (*disclient.GetRecordsResponse, error) {
	d.getRecords.Add(1)
	return d.API.GetRecords(ctx, cursor, maxFetchBytes)
}

func (d *countingDIS) Close() { d.close() }

// startPassthroughCluster runs a SASL_PLAINTEXT listener in passthrough mode
// in front of an embedded DIS that checks every signature; more adjusts the
// gateway's configuration after that.
func startPassthroughCluster(t *testing.T, more ...func(*gateway.Config)) (*Cluster, map[string]*recordCalls, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	clients := map[string]*recordCalls{}
	for _, ak := range []string{gatewayAK, tenant1AK, tenant2AK, otherAK} {
		clients[ak] = &recordCalls{}
	}
	c, err := Start(Options{
		Dir: t.TempDir(),
		// Debug, so every line the gateway writes is checked for secrets.
		Logger: zerolog.New(logs).Level(zerolog.DebugLevel),
		Credentials: map[string]dislocal.Credential{
			gatewayAK: {SecretKey: gatewaySK},
			tenant1AK: {SecretKey: tenant1SK, ProjectID: ProjectID},
			tenant2AK: {SecretKey: tenant2SK, ProjectID: ProjectID},
			otherAK:   {SecretKey: otherSK, ProjectID: otherProject},
		},
		Signer: disclient.AKSKSigner{AccessKey: gatewayAK, SecretKey: gatewaySK},
		TenantDIS: func(accessKey string, cfg disclient.Config) (disclient.API, error) {
			if accessKey == otherAK {
				cfg.ProjectID = otherProject
			}
			cl, err := disclient.New(cfg)
			if err != nil {
				return nil, err
			}
			calls := clients[accessKey]
			if calls == nil {
				calls = &recordCalls{}
			}
			return &countingDIS{API: cl, close: cl.Close, recordCalls: calls}, nil
		},
		Gateway: func(cfg *gateway.Config) {
			cfg.AutoCreateTopics = false
			cfg.SASLPassthrough = true
			cfg.Listeners = []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext}}
			for _, fn := range more {
				fn(cfg)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, clients, logs
}

func passthroughClient(t *testing.T, c *Cluster, ak, sk string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return secureClient(t, c, nil, gateway.SASLPlaintext, plain.Auth{User: ak, Pass: sk}.AsMechanism(), opts...)
}

func consumeAll(t *testing.T, ctx context.Context, cl *kgo.Client, want int) []string {
	t.Helper()
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %q, want %d records; errors %v", got, want, fs.Errors())
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	return got
}

// TestSASLPassthrough: a client's AK/SK signs its own DIS calls; wrong keys
// read and write nothing; a client whose keys see another project does not
// see this one's topic even while the gateway has it cached; two clients of
// one project each write and read with their own keys rather than through
// each other's writers and caches; no secret key reaches the logs.
func TestSASLPassthrough(t *testing.T) {
	t.Parallel()
	c, clients, logs := startPassthroughCluster(t)
	ctx := testContext(t, 45*time.Second)
	atStart := kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"iso": {0: kgo.NewOffset().AtStart()}})

	t1 := passthroughClient(t, c, tenant1AK, tenant1SK, kgo.DefaultProduceTopic("iso"))
	if _, err := kadm.NewClient(t1).CreateTopic(ctx, 1, -1, nil, "iso"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"t1-a", "t1-b"} {
		if err := t1.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("tenant 1 produce: %v", err)
		}
	}
	if got := consumeAll(t, ctx, passthroughClient(t, c, tenant1AK, tenant1SK, atStart), 2); !slices.Equal(got, []string{"t1-a", "t1-b"}) {
		t.Fatalf("tenant 1 consumed %q", got)
	}
	if clients[tenant1AK].putRecords.Load() == 0 {
		t.Fatal("tenant 1's records were not written with tenant 1's keys")
	}

	bad := passthroughClient(t, c, tenant1AK, "wrong-secret-key-999", kgo.DefaultProduceTopic("iso"))
	if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong secret key: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := bad.ProduceSync(pctx, &kgo.Record{Value: []byte("must not land")}).FirstErr(); err == nil {
		t.Fatal("a produce with a wrong secret key succeeded")
	}
	badRead := passthroughClient(t, c, tenant1AK, "wrong-secret-key-999", atStart)
	fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
	defer fcancel()
	if recs := badRead.PollFetches(fctx).Records(); len(recs) != 0 {
		t.Fatalf("a wrong secret key read %d records", len(recs))
	}

	// The gateway has "iso" cached for tenant 1; another project's keys
	// must still not see it.
	other := passthroughClient(t, c, otherAK, otherSK, kgo.DefaultProduceTopic("iso"))
	topics, err := kadm.NewClient(other).ListTopics(ctx, "iso")
	if err != nil {
		t.Fatal(err)
	}
	if td := topics["iso"]; !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("another project's client sees tenant 1's topic: %+v", td)
	}
	oc, cancelOther := context.WithTimeout(ctx, 3*time.Second)
	defer cancelOther()
	if err := other.ProduceSync(oc, &kgo.Record{Value: []byte("must not land")}).FirstErr(); err == nil {
		t.Fatal("another project's client produced to tenant 1's topic")
	}

	// Tenant 2 shares the project: it writes through its own client, and
	// reads what tenant 1 wrote from DIS with its own keys, not from the
	// records tenant 1's writes left in the gateway's cache.
	t2 := passthroughClient(t, c, tenant2AK, tenant2SK, kgo.DefaultProduceTopic("iso"))
	putsBefore := clients[tenant1AK].putRecords.Load()
	if err := t2.ProduceSync(ctx, &kgo.Record{Value: []byte("t2-c")}).FirstErr(); err != nil {
		t.Fatalf("tenant 2 produce: %v", err)
	}
	if clients[tenant2AK].putRecords.Load() == 0 || clients[tenant1AK].putRecords.Load() != putsBefore {
		t.Fatal("tenant 2's records were written with someone else's keys")
	}
	if got := consumeAll(t, ctx, passthroughClient(t, c, tenant2AK, tenant2SK, atStart), 3); !slices.Equal(got, []string{"t1-a", "t1-b", "t2-c"}) {
		t.Fatalf("tenant 2 consumed %q", got)
	}
	if clients[tenant2AK].getRecords.Load() == 0 {
		t.Fatal("tenant 2 was served tenant 1's cached records without reading DIS")
	}

	all := logs.String()
	for _, sk := range []string{gatewaySK, tenant1SK, tenant2SK, otherSK, "wrong-secret-key-999"} {
		if strings.Contains(all, sk) {
			t.Fatal("a secret key appears in the logs")
		}
	}
	if !strings.Contains(all, "SASL passthrough authentication failed") {
		t.Error("the failed authentication was not logged")
	}
	// The lines that carry what clients and DIS sent are there to check.
	for _, line := range []string{`"message":"connection opened"`, `"message":"connection closed"`, `"message":"DIS call failed"`} {
		if !strings.Contains(all, line) {
			t.Errorf("no %s line in the logs", line)
		}
	}
}

// In passthrough mode SaslHandshake offers PLAIN alone and refuses SCRAM:
// the gateway holds no SCRAM credentials for DIS keys.
func TestSASLPassthroughOffersPlainOnly(t *testing.T) {
	t.Parallel()
	c, _, _ := startPassthroughCluster(t)
	rc := dialRaw(t, c.Gateway.ListenerAddr(gateway.SASLPlaintext).String())
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = 1
	req.Mechanism = "SCRAM-SHA-512"
	resp := rc.roundTrip(req).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(resp.SupportedMechanisms, []string{"PLAIN"}) {
		t.Fatalf("handshake for SCRAM: error %d, mechanisms %q; want UNSUPPORTED_SASL_MECHANISM and [PLAIN]", resp.ErrorCode, resp.SupportedMechanisms)
	}
}

// TestSASLPassthroughNeedsSignatureChecks: passthrough in front of an
// embedded DIS without keys does not start (any password would sign in as
// any access key, a super user's included); in front of one that checks
// signatures, a real client signing in as the super user's access key
// with a made-up secret is refused, and cannot grant itself ACLs.
func TestSASLPassthroughNeedsSignatureChecks(t *testing.T) {
	t.Parallel()
	_, err := Start(Options{Dir: t.TempDir(), Gateway: func(cfg *gateway.Config) {
		cfg.SASLPassthrough = true
		cfg.Listeners = []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext}}
	}})
	if err == nil || !errors.Is(err, disclient.ErrSignaturesNotChecked) {
		t.Fatalf("passthrough over a DIS without keys: %v, want a refusal to start", err)
	}

	c, _, _ := startPassthroughCluster(t, func(cfg *gateway.Config) {
		cfg.Authorizer = gateway.AuthorizerACL
		cfg.SuperUsers = []string{"User:" + gatewayAK}
	})
	ctx := testContext(t, 30*time.Second)
	forger := passthroughClient(t, c, gatewayAK, "anything")
	if err := forger.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("the super user's access key with a made-up secret: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if _, err := kadm.NewClient(forger).CreateACLs(ctx, kadm.NewACLs().Allow("User:ATTACKER").AnyResource().Operations(kadm.OpAll)); err == nil {
		t.Fatal("a client with a made-up secret created ACLs")
	}
	admin := kadm.NewClient(passthroughClient(t, c, gatewayAK, gatewaySK))
	if _, err := admin.CreateTopic(ctx, 1, -1, nil, "signed-in"); err != nil {
		t.Fatalf("the real keys: %v", err)
	}
}
