package wire

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

// FetchResponse is a Fetch answer as the fetch handler builds it: the kmsg
// response, and what its frame is built with besides (a framedResponse).
// Its frame goes in a responseBuffers buffer when it is large or carries
// splices. Only the handler's goroutine touches it until it is answered.
type FetchResponse struct {
	*kmsg.FetchResponse
	// splices are the record batches its frame carries without a copy
	// (fetch_splice.go), in pieces more parts of the frame; scratch holds
	// responseBuffers buffers its RecordBatches refer to, given back by
	// release.
	splices []fetchSplice
	pieces  int
	scratch [][]byte
}

// PutBatches puts a partition's record batches (parts, n bytes, made with
// AppendBatch) in field, the partition's RecordBatches. Cached batches are
// never changed: the frame carries them as they are, unless it would have
// too many pieces; then they are copied together, and an error is a failed
// read of a record log file.
func (f *FetchResponse) PutBatches(field *[]byte, parts []FramePart, n int) error {
	if 1+f.pieces+len(parts)+2 <= maxSpliceParts {
		f.pieces += len(parts) + 2
		f.splices = append(f.splices, newFetchSplice(field, parts, n))
		return nil
	}
	b := responseBuffers.get(n)
	var err error
	for i := range parts {
		if b, err = parts[i].appendTo(b); err != nil {
			break
		}
	}
	f.scratch = append(f.scratch, b)
	if err != nil {
		return err
	}
	*field = b
	return nil
}

// frame encodes the response for hdr with its splices put in; when they are
// not where they were put, it answers from copies of the batches instead.
func (f *FetchResponse) frame(hdr protocol.RequestHeader) (outFrame, error) {
	n := fetchFrameSize(f.FetchResponse)
	if !pooledSize(n) && len(f.splices) == 0 {
		return outFrame{frame: protocol.AppendResponse(nil, hdr, f.FetchResponse)}, nil
	}
	buf := responseBuffers.get(n)
	out := outFrame{frame: protocol.AppendResponse(buf, hdr, f.FetchResponse)}
	if out.recycled = cap(out.frame) == cap(buf) && &out.frame[:1][0] == &buf[:1][0]; !out.recycled {
		responseBuffers.put(buf)
	}
	if len(f.splices) > 0 && !out.splice(f.splices, hdr.Version >= 12) {
		out.release()
		if err := unsplice(f.splices); err != nil {
			return outFrame{}, err
		}
		f.splices = nil
		return f.frame(hdr)
	}
	return out, nil
}

// release gives the scratch buffers back.
func (f *FetchResponse) release() {
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
