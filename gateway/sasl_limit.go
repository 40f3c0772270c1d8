package gateway

import (
	"errors"
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
	errSignInsBusy   = errors.New("authentication failed: the gateway is checking as many sign-ins with DIS as it may; wait before trying again")
)

// authLimiter throttles sign-ins; it is safe for concurrent use.
type authLimiter struct {
	every rate.Limit
	burst int
	// checks bounds the DIS calls of passthrough sign-ins.
	checks *rate.Limiter

	mu    sync.Mutex
	addrs map[string]*rate.Limiter
	users map[string]*rate.Limiter
}

func newAuthLimiter(cfg *Config) *authLimiter {
	return &authLimiter{
		every:  rate.Limit(float64(cfg.AuthFailuresPerMinute) / 60),
		burst:  cfg.AuthFailureBurst,
		checks: rate.NewLimiter(rate.Limit(cfg.SignInChecksPerSecond), cfg.SignInChecksPerSecond),
		addrs:  make(map[string]*rate.Limiter),
		users:  make(map[string]*rate.Limiter),
	}
}

// throttled reports whether addr or user (either may be "") has used up its
// failed sign-ins.
func (l *authLimiter) throttled(addr, user string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.empty(l.addrs, addr, now) || l.empty(l.users, user, now)
}

func (l *authLimiter) empty(m map[string]*rate.Limiter, key string, now time.Time) bool {
	lim := m[key]
	return key != "" && lim != nil && lim.TokensAt(now) < 1
}

// failed spends one failed sign-in of addr's and of user's.
func (l *authLimiter) failed(addr, user string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spend(l.addrs, addr, now)
	l.spend(l.users, user, now)
}

func (l *authLimiter) spend(m map[string]*rate.Limiter, key string, now time.Time) {
	if key == "" {
		return
	}
	lim := m[key]
	if lim == nil {
		l.makeRoom(m, now)
		lim = rate.NewLimiter(l.every, l.burst)
		m[key] = lim
	}
	lim.AllowN(now, 1)
}

// makeRoom keeps m under maxAuthLimitEntries: buckets that have refilled
// say nothing a new one would not, so they go first; when none has, random
// ones go (map order), down to nine tenths, so the sweep is rare.
func (l *authLimiter) makeRoom(m map[string]*rate.Limiter, now time.Time) {
	if len(m) < maxAuthLimitEntries {
		return
	}
	for k, lim := range m {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < maxAuthLimitEntries*9/10 {
			break
		}
		delete(m, k)
	}
}

// allowCheck reports whether a passthrough sign-in may call DIS now.
func (l *authLimiter) allowCheck(now time.Time) bool {
	return l.checks.AllowN(now, 1)
}
