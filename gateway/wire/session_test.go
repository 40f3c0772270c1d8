package wire

import (
	"slices"
	"sync"
	"testing"
)

// recordingSink is a responseSink that remembers what happened.
type recordingSink struct {
	mu      sync.Mutex
	frames  []string
	closed  bool
	resumed int
}

func (k *recordingSink) write(o outFrame) {
	f, err := o.appendTo(nil)
	if err != nil {
		panic(err)
	}
	k.mu.Lock()
	k.frames = append(k.frames, string(f))
	k.mu.Unlock()
}
func (k *recordingSink) close()  { k.mu.Lock(); k.closed = true; k.mu.Unlock() }
func (k *recordingSink) abort()  { k.close() }
func (k *recordingSink) resume() { k.mu.Lock(); k.resumed++; k.mu.Unlock() }

func testSession(t *testing.T, cfg Config) (*session[string], *recordingSink) {
	t.Helper()
	srv := New(testDeps(t, cfg, &Registry[*testGateway, string]{}))
	sink := &recordingSink{}
	s := &session[string]{srv: srv, sink: sink, done: make(map[uint64]finished), queue: make(chan *Call[string], sessionQueueLen)}
	return s, sink
}

// queued accepts a request of size n without dispatching it.
func queued(s *session[string], n int64) *Call[string] {
	r := &Call[string]{s: s, size: n}
	s.mu.Lock()
	r.seq = s.nextSeq
	s.nextSeq++
	s.inflight++
	s.inflightB += n
	s.mu.Unlock()
	s.srv.d.Inflight.Add(n)
	return r
}

// Responses finishing out of order are written in request order; a request
// without a response (acks=0) does not hold up the ones after it.
func TestSessionWritesInRequestOrder(t *testing.T) {
	s, sink := testSession(t, Config{})
	r0, r1, r2, r3 := queued(s, 10), queued(s, 10), queued(s, 10), queued(s, 10)
	s.complete(r2, outFrame{frame: []byte("2")})
	s.complete(r1, outFrame{frame: nil})
	if len(sink.frames) != 0 {
		t.Fatalf("wrote %v before the first response was ready", sink.frames)
	}
	s.complete(r0, outFrame{frame: []byte("0")})
	s.complete(r3, outFrame{frame: []byte("3")})
	if want := []string{"0", "2", "3"}; !slices.Equal(sink.frames, want) {
		t.Fatalf("wrote %v, want %v", sink.frames, want)
	}
	if s.inflight != 0 || s.inflightB != 0 || s.srv.d.Inflight.Load() != 3 {
		t.Fatalf("in flight after all completed: %d requests, %d bytes, %d gateway bytes (want the 3 unwritten)", s.inflight, s.inflightB, s.srv.d.Inflight.Load())
	}
	s.wrote(3)
	if s.unsent != 0 || s.srv.d.Inflight.Load() != 0 {
		t.Fatalf("after the sink wrote everything: %d unsent, %d gateway bytes", s.unsent, s.srv.d.Inflight.Load())
	}
}

// Responses handed to the sink but not written count against the
// connection's budget: a client that does not read stops being read, and is
// taken up again once the sink reports the bytes written.
func TestSessionUnwrittenResponsesPause(t *testing.T) {
	s, sink := testSession(t, Config{MaxInflightBytesPerConn: 100})
	r0 := queued(s, 10)
	s.complete(r0, outFrame{frame: make([]byte, 150)})
	if s.canAccept(10) {
		t.Fatal("accepted a frame with 150 response bytes unwritten and a 100-byte budget")
	}
	if s.stalledSince.IsZero() {
		t.Fatal("a session paused on unwritten responses is not marked stalled")
	}
	s.wrote(100)
	if sink.resumed != 1 {
		t.Fatalf("resumed %d times after the responses drained, want 1", sink.resumed)
	}
	if !s.canAccept(10) || !s.stalledSince.IsZero() {
		t.Fatalf("still refusing (stalled since %v) after the responses drained", s.stalledSince)
	}
}

// Past the per-connection byte bound the session refuses frames, then asks
// the transport to resume once responses drain. One request is always
// allowed, so a single large request cannot stall a connection.
func TestSessionBackpressure(t *testing.T) {
	s, sink := testSession(t, Config{MaxInflightBytesPerConn: 100})
	if !s.canAccept(500) {
		t.Fatal("the first request must always be accepted")
	}
	r0 := queued(s, 500)
	if s.canAccept(10) {
		t.Fatal("accepted past the in-flight byte bound")
	}
	s.complete(r0, outFrame{frame: []byte("x")})
	if sink.resumed != 1 {
		t.Fatalf("resumed %d times, want 1", sink.resumed)
	}
	if !s.canAccept(10) {
		t.Fatal("still refusing after the bound drained")
	}
}

// closeAfterQueued waits for every accepted request's response.
func TestSessionCloseAfterQueued(t *testing.T) {
	s, sink := testSession(t, Config{})
	r0 := queued(s, 1)
	s.closeAfterQueued()
	if sink.closed {
		t.Fatal("closed before the pending response was written")
	}
	if s.canAccept(1) {
		t.Fatal("a closing session accepted a frame")
	}
	s.complete(r0, outFrame{frame: []byte("last")})
	if !sink.closed || !slices.Equal(sink.frames, []string{"last"}) {
		t.Fatalf("closed %v after writing %v", sink.closed, sink.frames)
	}
}
