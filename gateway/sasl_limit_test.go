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
	hs.Mechanism = mechPlain
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

// failSignIn makes one failed sign-in as the limiter sees it.
func failSignIn(t *testing.T, l *authLimiter, addr, user string, now time.Time) {
	t.Helper()
	a, ok := l.begin(addr, user, now)
	if !ok {
		t.Fatalf("sign-in from %s as %q refused", addr, user)
	}
	l.end(a, true, now)
}

// throttled reports whether a sign-in from addr as user would be refused.
func throttled(l *authLimiter, addr, user string, now time.Time) bool {
	a, ok := l.begin(addr, user, now)
	if ok {
		l.end(a, false, now)
	}
	return !ok
}

// The per-user bucket throttles a user whatever address it signs in from,
// leaves other users alone, refills with time, and the maps stay bounded.
func TestAuthLimiterPerUserAndBounded(t *testing.T) {
	cfg := Config{AuthFailuresPerMinute: 60, AuthFailureBurst: 2, SignInChecksPerSecond: 1}
	l := newAuthLimiter(&cfg)
	now := time.Now()
	failSignIn(t, l, "/10.0.0.1", "alice", now)
	failSignIn(t, l, "/10.0.0.2", "alice", now)
	if !throttled(l, "/10.0.0.3", "alice", now) {
		t.Fatal("alice not throttled after two failures from two addresses")
	}
	if throttled(l, "/10.0.0.3", "bob", now) {
		t.Fatal("bob throttled for alice's failures")
	}
	if throttled(l, "/10.0.0.3", "alice", now.Add(2*time.Second)) {
		t.Fatal("alice still throttled after her bucket refilled")
	}
	for i := range 3 * maxAuthLimitEntries {
		failSignIn(t, l, fmt.Sprintf("/10.1.%d", i), fmt.Sprintf("user-%d", i), now)
	}
	if len(l.addrs) > maxAuthLimitEntries || len(l.users) > maxAuthLimitEntries {
		t.Fatalf("%d addresses and %d users held, want at most %d", len(l.addrs), len(l.users), maxAuthLimitEntries)
	}
}

// Sign-ins under way count: with a burst of three, a fourth sign-in
// started before any of the first three ended is refused, and one that
// succeeded gives its attempt back.
func TestAuthLimiterCountsSignInsUnderWay(t *testing.T) {
	cfg := Config{AuthFailuresPerMinute: 1, AuthFailureBurst: 3, SignInChecksPerSecond: 1}
	l := newAuthLimiter(&cfg)
	now := time.Now()
	var under []*signInAttempt
	for range 3 {
		a, ok := l.begin("/10.0.0.1", "AKGUESS", now)
		if !ok {
			t.Fatal("a sign-in within the burst refused")
		}
		under = append(under, a)
	}
	if _, ok := l.begin("/10.0.0.1", "AKOTHER", now); ok {
		t.Fatal("a fourth sign-in from the address started while three were under way")
	}
	if _, ok := l.begin("/10.0.0.9", "AKGUESS", now); ok {
		t.Fatal("a fourth sign-in as the user started while three were under way")
	}
	l.end(under[0], false, now)
	if _, ok := l.begin("/10.0.0.1", "AKOTHER", now); !ok {
		t.Fatal("a successful sign-in did not give its attempt back")
	}
}

// Failures from many addresses of one IPv6 /64 throttle the whole network;
// another /64, and IPv4 addresses, are left alone.
func TestAuthLimiterPerIPv6Network(t *testing.T) {
	cfg := Config{AuthFailuresPerMinute: 1, AuthFailureBurst: 2, SignInChecksPerSecond: 1}
	l := newAuthLimiter(&cfg)
	now := time.Now()
	failSignIn(t, l, "/2001:db8:1:2::1", "", now)
	failSignIn(t, l, "/2001:db8:1:2::2", "", now)
	if !throttled(l, "/2001:db8:1:2:ffff::3", "", now) {
		t.Fatal("a third address of the /64 not throttled after two failures in it")
	}
	if throttled(l, "/2001:db8:1:3::1", "", now) {
		t.Fatal("another /64 throttled")
	}
	failSignIn(t, l, "/192.0.2.1", "", now)
	if throttled(l, "/192.0.2.2", "", now) {
		t.Fatal("an IPv4 neighbour throttled")
	}
}
