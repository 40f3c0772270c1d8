package wire

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Sign-in throttling (docs/security.md): failed sign-ins are token buckets
// per client address and per user name, and passthrough sign-ins share one
// bucket of DIS checks per second, so guessing keys is slow and a flood of
// random keys costs DIS a bounded number of calls. A refused attempt never
// reaches DIS or the stored users.

// maxAuthLimitEntries bounds each of the per-address and per-user maps.
const maxAuthLimitEntries = 10000

// errAuthThrottled and errSignInsBusy are what a refused client learns.
var (
	errAuthThrottled = errors.New("authentication failed: too many failed sign-ins from this address or for this user; wait before trying again")
	errSignInsBusy   = Busy("authentication failed: the gateway is checking as many sign-ins with DIS as it may; wait before trying again")
)

// authLimiter throttles sign-ins; it is safe for concurrent use. A
// sign-in counts against its buckets from the moment it starts: one whose
// check is still under way (a passthrough sign-in waits for DIS) holds an
// attempt, so guesses sent in parallel are refused as soon as the attempts
// under way and the failures already made use up a bucket.
type authLimiter struct {
	every rate.Limit
	burst int
	// checks bounds the DIS calls of passthrough sign-ins.
	checks *rate.Limiter

	mu    sync.Mutex
	addrs map[string]*authBucket
	users map[string]*authBucket
}

// authBucket is one address's, network's or user's failed sign-ins and the
// sign-ins under way; under authLimiter.mu.
type authBucket struct {
	failures *rate.Limiter
	pending  int
}

func newAuthLimiter(cfg *Config) *authLimiter {
	return &authLimiter{
		every:  rate.Limit(float64(cfg.AuthFailuresPerMinute) / 60),
		burst:  cfg.AuthFailureBurst,
		checks: rate.NewLimiter(rate.Limit(cfg.SignInChecksPerSecond), cfg.SignInChecksPerSecond),
		addrs:  make(map[string]*authBucket),
		users:  make(map[string]*authBucket),
	}
}

// signInAttempt is a sign-in under way: the buckets it holds an attempt
// of, to settle with end.
type signInAttempt struct {
	buckets []*authBucket
}

// begin starts a sign-in from addr (Kafka's "/host" form) as user (either
// may be ""): it holds one attempt of the address's bucket, of its IPv6
// /64's (one machine may own the whole network) and of the user's, and
// reports false, holding none, when any bucket has no attempt left.
func (l *authLimiter) begin(addr, user string, now time.Time) (*signInAttempt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var a signInAttempt
	for _, k := range []struct {
		m   map[string]*authBucket
		key string
	}{{l.addrs, addr}, {l.addrs, ipv6Network(addr)}, {l.users, user}} {
		if k.key == "" {
			continue
		}
		b := l.bucket(k.m, k.key, now)
		if b.failures.TokensAt(now)-float64(b.pending) < 1 {
			return nil, false
		}
		a.buckets = append(a.buckets, b)
	}
	for _, b := range a.buckets {
		b.pending++
	}
	return &a, true
}

// end settles a sign-in begin started; a failed one spends an attempt of
// every bucket it held.
func (l *authLimiter) end(a *signInAttempt, failed bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range a.buckets {
		b.pending--
		if failed {
			b.failures.AllowN(now, 1)
		}
	}
}

// ipv6Network is the /64 of an IPv6 address in Kafka's "/host" form, ""
// for anything else.
func ipv6Network(addr string) string {
	ip, err := netip.ParseAddr(strings.TrimPrefix(addr, "/"))
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return ""
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return ""
	}
	return p.String()
}

// bucket is key's bucket in m, made when there is none.
func (l *authLimiter) bucket(m map[string]*authBucket, key string, now time.Time) *authBucket {
	b := m[key]
	if b == nil {
		l.makeRoom(m, now)
		b = &authBucket{failures: rate.NewLimiter(l.every, l.burst)}
		m[key] = b
	}
	return b
}

// makeRoom keeps m under maxAuthLimitEntries: buckets that have refilled
// with no sign-in under way say nothing a new one would not, so they go
// first; when none has, random idle ones go (map order), down to nine
// tenths, so the sweep is rare. A bucket with a sign-in under way stays,
// for its end to settle.
func (l *authLimiter) makeRoom(m map[string]*authBucket, now time.Time) {
	if len(m) < maxAuthLimitEntries {
		return
	}
	for k, b := range m {
		if b.pending == 0 && b.failures.TokensAt(now) >= float64(l.burst) {
			delete(m, k)
		}
	}
	for k, b := range m {
		if len(m) < maxAuthLimitEntries*9/10 {
			break
		}
		if b.pending == 0 {
			delete(m, k)
		}
	}
}

// allowCheck reports whether a passthrough sign-in may call DIS now.
func (l *authLimiter) allowCheck(now time.Time) bool {
	return l.checks.AllowN(now, 1)
}
