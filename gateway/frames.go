package gateway

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/protocol"
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

// fetchResponse is a Fetch answer as the fetch handler builds it: the kmsg
// response, and what its frame is built with besides (a framedResponse).
// Its frame goes in a responseBuffers buffer when it is large or carries
// splices.
type fetchResponse struct {
	*kmsg.FetchResponse
	// splices are the record batches its frame carries without a copy
	// (fetch_splice.go); scratch holds responseBuffers buffers its
	// RecordBatches refer to, given back by release. Only the handler's
	// goroutine touches them.
	splices []fetchSplice
	scratch [][]byte
}

// frame encodes the response for r with its splices put in; when they are
// not where they were put, it answers from copies of the batches instead.
func (f *fetchResponse) frame(r *request) (outFrame, bool) {
	n := fetchFrameSize(f.FetchResponse)
	if !pooledSize(n) && len(f.splices) == 0 {
		return outFrame{frame: protocol.AppendResponse(nil, r.hdr, f.FetchResponse)}, true
	}
	buf := responseBuffers.get(n)
	out := outFrame{frame: protocol.AppendResponse(buf, r.hdr, f.FetchResponse)}
	if out.recycled = cap(out.frame) == cap(buf) && &out.frame[:1][0] == &buf[:1][0]; !out.recycled {
		responseBuffers.put(buf)
	}
	if len(f.splices) > 0 && !out.splice(f.splices, r.hdr.Version >= 12) {
		out.release()
		if err := unsplice(f.splices); err != nil {
			r.logEvent(r.log().Error().Err(err)).Msg("reading record batches from the record log failed")
			return outFrame{}, false
		}
		f.splices = nil
		return f.frame(r)
	}
	return out, true
}

// release gives the scratch buffers back.
func (f *fetchResponse) release() {
	for _, b := range f.scratch {
		responseBuffers.put(b)
	}
	f.scratch, f.splices = nil, nil
}

// fetchFrameSize is at least the encoded size of a Fetch response: its
// record batches and a generous allowance for everything else.
func fetchFrameSize(resp *kmsg.FetchResponse) int {
	n := 1 << 10
	for i := range resp.Topics {
		t := &resp.Topics[i]
		n += len(t.Topic) + 64
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += len(p.RecordBatches) + 128 + 16*len(p.AbortedTransactions)
		}
	}
	return n
}
