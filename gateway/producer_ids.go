package gateway

import (
	"sync"
	"time"
)

// producerIDs hands out idempotent producer ids. An id is the allocation time
// in milliseconds shifted left 16 bits, bumped to stay strictly increasing, so
// ids never repeat across gateway restarts (unless the clock goes back or a
// gateway hands out more than 65536 ids in one millisecond for longer than it
// was down). Kafka producer ids are int64; this uses 58 bits until 2106.
type producerIDs struct {
	now  func() time.Time
	mu   sync.Mutex
	last int64
}

func newProducerIDs(now func() time.Time) *producerIDs { return &producerIDs{now: now} }

// next returns a fresh producer id.
func (p *producerIDs) next() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.now().UnixMilli() << 16
	if id <= p.last {
		id = p.last + 1
	}
	p.last = id
	return id
}
