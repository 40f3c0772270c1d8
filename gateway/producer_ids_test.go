package gateway

import (
	"testing"
	"time"
)

// Producer ids grow within one gateway even when its clock stands still,
// and two gateways allocating in the same millisecond draw different ids
// (the random low bits: they collide once in about two million).
func TestProducerIDs(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { return at }
	a, b := newProducerIDs(clock), newProducerIDs(clock)
	seen := map[int64]bool{}
	last := int64(0)
	for range 10 {
		id := a.next()
		if id <= last || id <= 0 {
			t.Fatalf("id %d after %d: ids must be positive and grow", id, last)
		}
		last = id
		seen[id] = true
	}
	if id := b.next(); seen[id] || id>>producerIDRandomBits != at.UnixMilli() {
		t.Fatalf("a second gateway in the same millisecond drew %d, which the first handed out or does not hold the time", id)
	}
}
