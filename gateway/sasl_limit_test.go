package gateway

import (
	"crypto/rand"
	"fmt"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/wire"
)

// startPassthroughOnFake starts a passthrough gateway with a SASL_PLAINTEXT
// listener whose tenants call an HTTP server refusing every signature, and
// returns the listener's address and the count of DIS calls since it
// started.
func startPassthroughOnFake(t *testing.T, tune func(*Config)) (net.Addr, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := newFakeDISServer(t, 441, `{"errorCode":"DIS.4106","message":"signature mismatch"}`, &calls)
	cfg := Config{
		SASLPassthrough: true,
		Listeners:       []Listener{{Addr: "127.0.0.1:0", Protocol: SASLPlaintext}},
		NewTenantDIS: func(ak, sk string) (disclient.API, error) {
			return disclient.New(disclient.Config{
				Endpoint: srv, ProjectID: "p",
				Signer: disclient.AKSKSigner{AccessKey: ak, SecretKey: sk},
				Retry:  disclient.RetryPolicy{MaxAttempts: 1},
			})
		},
	}
	tune(&cfg)
	gw := startGateway(t, cfg, localDIS(t))
	if calls.Load() != 1 {
		t.Fatalf("%d DIS calls at start, want 1: the check that DIS refuses made-up keys", calls.Load())
	}
	calls.Store(0)
	return gw.ListenerAddr(SASLPlaintext), &calls
}

// signIn makes one PLAIN sign-in on a new connection and returns the
// SaslAuthenticate answer.
func signIn(t *testing.T, addr net.Addr, ak, sk string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := &testConn{t: t, conn: c, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("sasl-limit-test"))}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = wire.MechPlain
	if code := tc.roundTrip(hs).(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		t.Fatalf("SaslHandshake: error %d", code)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte("\x00" + ak + "\x00" + sk)
	return tc.roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
}

func randomKey(t *testing.T) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// A flood of sign-ins with random keys, from one address and as many users
// as sign-ins, costs DIS at most SignInChecksPerSecond calls a second (plus
// the first second's burst); the others are refused without a DIS call,
// telling the client to wait.
func TestSignInFloodBoundsDISCalls(t *testing.T) {
	const perSecond = 3
	addr, calls := startPassthroughOnFake(t, func(c *Config) {
		c.SignInChecksPerSecond = perSecond
		c.AuthFailureBurst = 1000
		c.AuthFailuresPerMinute = 60000
	})
	start := time.Now()
	refused := 0
	const flood = 40
	for range flood {
		resp := signIn(t, addr, randomKey(t), randomKey(t))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("a random key got error %d, want SASL_AUTHENTICATION_FAILED", resp.ErrorCode)
		}
		if resp.ErrorMessage != nil && strings.Contains(*resp.ErrorMessage, "wait") {
			refused++
		}
	}
	bound := perSecond + int64(math.Ceil(time.Since(start).Seconds()*perSecond))
	if got := calls.Load(); got > bound || got+int64(refused) != flood || refused == 0 {
		t.Fatalf("%d sign-ins: %d DIS calls (at most %d), %d refused telling to wait", flood, got, bound, refused)
	}
}

// After AuthFailureBurst failed sign-ins from one address, the next is
// refused without a DIS call, whatever user it names, and says to wait.
func TestFailedSignInsThrottledPerAddress(t *testing.T) {
	addr, calls := startPassthroughOnFake(t, func(c *Config) {
		c.AuthFailureBurst = 3
		c.AuthFailuresPerMinute = 1
	})
	for i := range 3 {
		if resp := signIn(t, addr, "AKGUESS", randomKey(t)); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("failed sign-in %d: error %d", i, resp.ErrorCode)
		}
	}
	resp := signIn(t, addr, "AKOTHER", randomKey(t))
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "wait") {
		t.Fatalf("sign-in after the burst: error %d %v, want SASL_AUTHENTICATION_FAILED saying to wait", resp.ErrorCode, resp.ErrorMessage)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d DIS calls, want 3: a throttled sign-in reached DIS", calls.Load())
	}
}
