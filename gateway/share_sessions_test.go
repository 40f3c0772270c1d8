package gateway

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share sessions follow Kafka's epochs: 0 opens (replacing the member's
// session), each request must carry the next epoch, one at a time, -1
// closes; at the limit a new session is refused unless one unused for the
// idle time gives way.
func TestShareSessions(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newShareSessions(2, time.Minute)
	a := shareSessionKey{tenant: "", group: "g", member: "a"}
	step := func(k shareSessionKey, epoch int32, want int16) *shareSession {
		t.Helper()
		s, _, code := c.begin(k, epoch, now)
		if code != want {
			t.Fatalf("%s epoch %d: %v, want %v", k.member, epoch, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
		if s != nil {
			c.end(k, s, epoch)
		}
		return s
	}
	step(a, 1, kerr.ShareSessionNotFound.Code)
	first := step(a, 0, 0)
	first.add(sharePart{partition: 0})
	step(a, 2, kerr.InvalidShareSessionEpoch.Code)
	step(a, 1, 0)
	step(a, 1, kerr.InvalidShareSessionEpoch.Code) // a replay
	// A request while one is served is out of turn.
	s, _, _ := c.begin(a, 2, now)
	step(a, 2, kerr.InvalidShareSessionEpoch.Code)
	c.end(a, s, 2)
	// Epoch 0 replaces the session, handing back the old one.
	if _, old, code := c.begin(a, 0, now); code != 0 || old != first {
		t.Fatalf("reopening: %v, replaced %p, want the first session %p", kerr.ErrorForCode(code), old, first)
	} else {
		c.end(a, c.m[a], 0)
	}
	step(a, -1, 0)
	step(a, 1, kerr.ShareSessionNotFound.Code) // closed

	// The limit: two sessions; a third waits until one is idle.
	b := shareSessionKey{group: "g", member: "b"}
	d := shareSessionKey{group: "g", member: "d"}
	step(a, 0, 0)
	step(b, 0, 0)
	step(d, 0, kerr.ShareSessionLimitReached.Code)
	now = now.Add(30 * time.Second)
	step(a, 1, 0)
	now = now.Add(40 * time.Second) // b idle 70 s, a 40 s
	step(d, 0, 0)
	step(b, 1, kerr.ShareSessionNotFound.Code) // b gave way
	step(a, 2, 0)
	// A departed member's session goes at once.
	c.drop(a)
	step(a, 3, kerr.ShareSessionNotFound.Code)
}
