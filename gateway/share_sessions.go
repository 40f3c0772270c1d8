package gateway

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share sessions (KIP-932): a share consumer keeps one session with each
// gateway it fetches from, naming in each request only the partitions it
// adds or forgets. A session belongs to a member of a group in a tenant;
// its epoch makes every request follow the one before it, so a request
// replayed or sent out of turn is refused instead of acting twice.

// shareSessionKey names a share session.
type shareSessionKey struct {
	tenant, group, member string
}

// sharePart is one partition in a share session.
type sharePart struct {
	topic     [16]byte
	partition int32
}

// shareSession is one member's session: the epoch its next request must
// carry and the partitions its fetches cover, in the order they joined.
type shareSession struct {
	epoch int32
	parts []sharePart
	used  time.Time
	// busy is set while a request of the session is served: a member
	// sends one at a time, and a second one meanwhile is out of turn.
	busy bool
}

// has reports whether p is in the session.
func (s *shareSession) has(p sharePart) bool {
	for _, q := range s.parts {
		if q == p {
			return true
		}
	}
	return false
}

// add puts p in the session.
func (s *shareSession) add(p sharePart) {
	if !s.has(p) {
		s.parts = append(s.parts, p)
	}
}

// forget takes p out of the session.
func (s *shareSession) forget(p sharePart) {
	for i, q := range s.parts {
		if q == p {
			s.parts = append(s.parts[:i], s.parts[i+1:]...)
			return
		}
	}
}

// shareSessions are every share session on this gateway, at most max of
// them (group.share.max.share.sessions), so that members cannot grow the
// gateway's memory without bound. A session unused for idle is dropped
// when room is needed: its member has left or moved to another gateway.
type shareSessions struct {
	max  int
	idle time.Duration

	mu sync.Mutex
	m  map[shareSessionKey]*shareSession
}

// newShareSessions makes the session cache.
func newShareSessions(max int, idle time.Duration) *shareSessions {
	return &shareSessions{max: max, idle: idle, m: make(map[shareSessionKey]*shareSession)}
}

// The share session epochs with a meaning of their own.
const (
	shareEpochOpen  = 0  // opens a new session, replacing the member's
	shareEpochClose = -1 // ends the session after its acknowledgements
)

// begin starts serving a request of epoch for k: a new session at epoch 0
// (the member's former one is dropped, and returned so that its records
// can be released), the session itself otherwise. The session is busy
// until end. It fails with SHARE_SESSION_NOT_FOUND,
// INVALID_SHARE_SESSION_EPOCH or SHARE_SESSION_LIMIT_REACHED as Kafka
// does.
func (c *shareSessions) begin(k shareSessionKey, epoch int32, now time.Time) (s, replaced *shareSession, code int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.m[k]
	if epoch == shareEpochOpen {
		if cur == nil && len(c.m) >= c.max && !c.evictIdleLocked(now) {
			return nil, nil, kerr.ShareSessionLimitReached.Code
		}
		s = &shareSession{epoch: shareEpochOpen, used: now, busy: true}
		c.m[k] = s
		return s, cur, 0
	}
	switch {
	case cur == nil:
		return nil, nil, kerr.ShareSessionNotFound.Code
	case cur.busy || (epoch != shareEpochClose && epoch != cur.epoch):
		return nil, nil, kerr.InvalidShareSessionEpoch.Code
	}
	cur.busy, cur.used = true, now
	return cur, nil, 0
}

// end finishes the request begin started: a closing request removes the
// session, any other moves its epoch on (wrapping to 1, as Kafka's does).
func (c *shareSessions) end(k shareSessionKey, s *shareSession, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.busy = false
	if epoch == shareEpochClose {
		if c.m[k] == s {
			delete(c.m, k)
		}
		return
	}
	if s.epoch == 1<<31-1 {
		s.epoch = 1
	} else {
		s.epoch++
	}
}

// drop removes k's session, for a member that left its group.
func (c *shareSessions) drop(k shareSessionKey) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// evictIdleLocked removes the session unused the longest, if it was
// unused for at least idle, and reports whether it did.
func (c *shareSessions) evictIdleLocked(now time.Time) bool {
	var oldest shareSessionKey
	var at time.Time
	found := false
	for k, s := range c.m {
		if !s.busy && now.Sub(s.used) >= c.idle && (!found || s.used.Before(at)) {
			oldest, at, found = k, s.used, true
		}
	}
	if found {
		delete(c.m, oldest)
	}
	return found
}
