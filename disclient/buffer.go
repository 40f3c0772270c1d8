package disclient

import (
	"bytes"
	"errors"
	json "github.com/goccy/go-json"
	"io"
	"sync"
	"sync/atomic"
)

// maxPooledBuffer keeps the odd huge GetRecords answer from pinning its
// memory in the pool for the life of the process.
const maxPooledBuffer = 8 << 20

// bufferPool holds the buffers request bodies are encoded into and response
// bodies are read into; PutRecords and GetRecords would otherwise allocate
// and grow one per call.
var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	bufferPool.Put(b)
}

// errBodyClosed is what a transport that reads a request body after closing
// it gets, instead of bytes that may already belong to another request.
var errBodyClosed = errors.New("disclient: read from a closed request body")

// requestBody is an encoded request body shared by every attempt of a call.
// The transport may read or close a body from another goroutine, even after
// Do has returned, so the pooled buffer goes back to the pool only when the
// call and every reader handed out are done with it.
type requestBody struct {
	buf  *bytes.Buffer
	refs atomic.Int32
}

// encodeBody encodes v as JSON into a pooled buffer held by the caller; the
// caller must call release once.
func encodeBody(v any) (*requestBody, error) {
	buf := getBuffer()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		putBuffer(buf)
		return nil, err
	}
	buf.Truncate(buf.Len() - 1) // Encode ends the value with a newline.
	return newRequestBody(buf), nil
}

// newRequestBody wraps an encoded pooled buffer, with the caller's reference.
func newRequestBody(buf *bytes.Buffer) *requestBody {
	b := &requestBody{buf: buf}
	b.refs.Store(1)
	return b
}

func (b *requestBody) bytes() []byte { return b.buf.Bytes() }

// reader returns a new reader over the body; closing it drops its reference.
func (b *requestBody) reader() io.ReadCloser {
	b.refs.Add(1)
	r := &bodyReader{owner: b}
	r.r.Reset(b.buf.Bytes())
	return r
}

// release drops one reference and recycles the buffer after the last one.
func (b *requestBody) release() {
	if b.refs.Add(-1) == 0 {
		putBuffer(b.buf)
	}
}

// bodyReader reads a requestBody. Read and Close exclude each other, so a
// Close from another goroutine cannot recycle the buffer under a Read.
type bodyReader struct {
	mu    sync.Mutex
	r     bytes.Reader
	owner *requestBody // nil once closed
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owner == nil {
		return 0, errBodyClosed
	}
	return r.r.Read(p)
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	owner := r.owner
	r.owner = nil
	r.mu.Unlock()
	if owner != nil {
		owner.release()
	}
	return nil
}
