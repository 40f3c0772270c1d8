package gateway

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// producerIDs hands out idempotent producer ids that are unique across
// gateway instances and restarts without coordination
// (docs/operations.md#producer-ids). An id is the allocation time in
// milliseconds in the upper 42 bits (enough until 2109) and 21 random bits
// below, bumped to stay strictly increasing within one gateway: a restart
// gets later times, and two gateways allocating in the same millisecond
// collide only when they draw the same 21 bits, one chance in two million.
// Ids stay positive int64s, as Kafka's are.
type producerIDs struct {
	now  func() time.Time
	mu   sync.Mutex
	last int64
}

// producerIDRandomBits is how many low bits of a producer id are random.
const producerIDRandomBits = 21

func newProducerIDs(now func() time.Time) *producerIDs { return &producerIDs{now: now} }

// next returns a fresh producer id.
func (p *producerIDs) next() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	random := int64(binary.BigEndian.Uint64(b[:]) & (1<<producerIDRandomBits - 1))
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.now().UnixMilli()<<producerIDRandomBits | random
	if id <= p.last {
		id = p.last + 1
	}
	p.last = id
	return id
}
