package wire

import (
	"fmt"
	"testing"
	"time"
)

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
