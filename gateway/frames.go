package gateway

import (
	"math/bits"
	"sync"
)

// responseBuffers recycles the large buffers Fetch answers are built in:
// the frame a response is encoded into and the concatenated batches of a
// partition. Allocating them fresh would zero megabytes per fetch and hand
// the collector the same again, which a profile of consumers reading at
// full speed showed as a fifth of all CPU (docs/design.md §10). A buffer
// goes back only where its one user is known to be done with it: a
// transport once the frame is written or copied into its own buffer, the
// fetch handler once its response is encoded.
var responseBuffers bufferClasses

// Buffer classes are powers of two from minPooledBuffer to maxPooledBuffer;
// smaller buffers are cheap to allocate, larger ones are not kept.
const (
	minPooledBufferBits = 18 // 256 KiB
	maxPooledBufferBits = 26 // 64 MiB, above Config.FetchMaxBytes' default
)

type bufferClasses struct {
	classes [maxPooledBufferBits - minPooledBufferBits + 1]sync.Pool
}

// pooledSize reports whether a buffer of n bytes is kept in a class.
func pooledSize(n int) bool {
	return n >= 1<<minPooledBufferBits && n <= 1<<maxPooledBufferBits
}

// class is the index of the smallest class holding n bytes.
func class(n int) int {
	return bits.Len(uint(n-1)) - minPooledBufferBits
}

// get returns an empty buffer with room for at least n bytes.
func (p *bufferClasses) get(n int) []byte {
	if !pooledSize(n) {
		return make([]byte, 0, n)
	}
	c := max(class(n), 0)
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<(c+minPooledBufferBits))
}

// put gives back a buffer get returned; no one may use it afterwards.
// Buffers of other capacities are left to the collector.
func (p *bufferClasses) put(b []byte) {
	n := cap(b)
	if !pooledSize(n) || n&(n-1) != 0 {
		return
	}
	b = b[:0]
	p.classes[class(n)].Put(&b)
}
