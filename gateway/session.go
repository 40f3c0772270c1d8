package gateway

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/protocol"
)

// responseSink is where a session writes finished response frames: the gnet
// connection, or a goroutine-driven net.Conn for TLS listeners. Keeping it this
// small is what lets every transport feed the same pipeline.
type responseSink interface {
	// write queues one whole frame; frames arrive in request order.
	write(frame []byte)
	// close closes the connection after the frames already queued.
	close()
	// resume asks the transport to offer buffered input again after the
	// session stopped taking frames because of backpressure.
	resume()
}

// session is the per-connection request pipeline (docs/design.md §3). Frames are
// decoded on the transport's goroutine and handed to one dispatcher goroutine
// that starts handlers in request order, so a handler's ordered part (for
// produce: the queueing of batches) sees requests in the order the client sent
// them. Handlers finish in any order; responses leave strictly in correlation
// order through a small reorder buffer.
type session struct {
	gw     *Gateway
	lis    *listener
	sink   responseSink
	remote string
	log    zerolog.Logger
	// tenant is whose DIS credentials this connection uses: the gateway's
	// own until a passthrough authentication replaces them.
	tenant *tenant

	ctx    context.Context
	cancel context.CancelFunc

	queue chan *request

	mu         sync.Mutex
	nextSeq    uint64
	writeSeq   uint64
	done       map[uint64]finished // finished responses waiting for earlier ones
	inflight   int                 // requests accepted and not yet written
	inflightB  int64               // their request bytes
	paused     bool                // transport stopped handing us frames
	closed     bool
	closeAfter uint64 // close once this sequence number is written (when closing is set)
	closing    bool

	// auth is the SASL state, used by the dispatcher alone; rawSASL is
	// also read on the transport's goroutine: after a v0 handshake the
	// next frames are bare SASL tokens, not requests.
	auth    saslState
	rawSASL atomic.Bool
	// authed mirrors auth.authenticated for the transport's goroutine,
	// which limits frame sizes until a SASL client has authenticated.
	authed atomic.Bool
}

// saslMaxReceiveSize bounds requests on a SASL listener before
// authentication, as Kafka's sasl.server.max.receive.size does: a client
// that has not proven who it is cannot make the gateway decode 100 MiB.
const saslMaxReceiveSize = 512 << 10

// frameLimit is the largest frame the session takes now.
func (s *session) frameLimit() int32 {
	if s.lis != nil && s.lis.Protocol.usesSASL() && !s.authed.Load() {
		return min(s.gw.cfg.MaxFrameBytes, saslMaxReceiveSize)
	}
	return s.gw.cfg.MaxFrameBytes
}

// finished is a response waiting for its turn; a nil frame sends nothing.
type finished struct {
	frame []byte
	size  int64
}

// request is one decoded request travelling through the pipeline.
type request struct {
	s     *session
	seq   uint64
	size  int64
	hdr   protocol.RequestHeader
	body  kmsg.Request
	h     *handler
	ctx   context.Context
	once  atomic.Bool
	early []byte // a response frame prepared on the loop (ApiVersions v0 errors)
	raw   []byte // a bare SASL token (after SaslHandshake v0)
}

const sessionQueueLen = 256

func newSession(gw *Gateway, lis *listener, sink responseSink, remote string) *session {
	ctx, cancel := context.WithCancel(gw.ctx)
	s := &session{
		gw:     gw,
		lis:    lis,
		sink:   sink,
		remote: remote,
		log:    gw.log.With().Str("remote", remote).Logger(),
		tenant: gw.tenant,
		ctx:    ctx,
		cancel: cancel,
		queue:  make(chan *request, sessionQueueLen),
		done:   make(map[uint64]finished),
	}
	gw.metrics.connections.Inc()
	go s.dispatch()
	return s
}

// canAccept reports whether the session takes another frame of size n now.
// When it returns false the session is paused and calls sink.resume once
// enough in-flight work has finished.
func (s *session) canAccept(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.closing {
		return false
	}
	over := s.inflight >= sessionQueueLen ||
		(s.inflight > 0 && s.inflightB+int64(n) > s.gw.cfg.MaxInflightBytesPerConn) ||
		(s.inflight > 0 && s.gw.inflight.Load() > s.gw.cfg.MaxInflightBytes)
	if over {
		s.paused = true
		s.gw.metrics.backpressure.Inc()
	}
	return !over
}

// accept takes one frame (owned by the session from now on), decodes it and
// queues it for dispatch. It returns false when the connection must close.
func (s *session) accept(frame []byte) bool {
	size := int64(len(frame))
	if s.rawSASL.Load() {
		s.enqueue(&request{s: s, size: size, raw: frame})
		return true
	}
	req, err := protocol.ParseRequest(frame)
	if err != nil {
		return s.acceptBad(frame, err)
	}
	s.gw.metrics.bytesIn.Add(float64(size + 4))
	h := handlers[req.Header.Key]
	if h != nil && !h.advertised(s.gw) {
		h = nil
	}
	if h == nil || req.Header.Version < h.min || req.Header.Version > h.max {
		var uv protocol.UnsupportedVersionError
		uv.Header = req.Header
		return s.acceptBad(frame, &uv)
	}
	r := &request{s: s, size: size, hdr: req.Header, body: req.Body, h: h}
	s.enqueue(r)
	return true
}

// acceptBad handles a frame that did not decode into a request we serve.
// Like Kafka, an ApiVersions request at a version we do not have is answered
// with a v0 UNSUPPORTED_VERSION response listing our ranges so the client can
// pick one; anything else malformed closes the connection with a log line.
func (s *session) acceptBad(frame []byte, err error) bool {
	var uv *protocol.UnsupportedVersionError
	if errors.As(err, &uv) && uv.Header.Key == apiKeyApiVersions {
		r := &request{s: s, size: int64(len(frame)), hdr: uv.Header}
		r.early = apiVersionsUnsupported(s.gw, uv.Header)
		s.enqueue(r)
		return true
	}
	s.gw.metrics.badRequests.Inc()
	s.log.Warn().Err(err).Msg("closing connection: request cannot be served")
	s.closeAfterQueued()
	return false
}

func (s *session) enqueue(r *request) {
	s.mu.Lock()
	r.seq = s.nextSeq
	s.nextSeq++
	s.inflight++
	s.inflightB += r.size
	s.mu.Unlock()
	s.gw.inflight.Add(r.size)
	s.queue <- r
}

// dispatch starts handlers in request order.
func (s *session) dispatch() {
	for r := range s.queue {
		switch {
		case r.early != nil:
			r.finishFrame(r.early)
			continue
		case r.raw != nil:
			s.serveRawSASL(r)
			continue
		case s.lis.Protocol.usesSASL() && !s.auth.authenticated && !allowedBeforeAuth(r.hdr.Key):
			s.gw.metrics.badRequests.Inc()
			s.log.Warn().Str("api", r.h.name).Msg("closing connection: request before SASL authentication")
			r.finishFrame(nil)
			s.closeAfterQueued()
			continue
		}
		r.ctx = s.ctx
		s.gw.metrics.requests.WithLabelValues(r.h.name).Inc()
		s.gw.handlersRun.Add(1)
		r.h.serve(s.gw, r)
	}
}

// respond finishes r with resp; a nil resp sends nothing (acks=0 produce).
// It may be called from any goroutine, exactly once per request.
func (r *request) respond(resp kmsg.Response) {
	if !r.once.CompareAndSwap(false, true) {
		return
	}
	defer r.s.gw.handlersRun.Done()
	if resp == nil {
		r.s.complete(r, nil)
		return
	}
	frame := protocol.AppendResponse(nil, r.hdr, resp)
	r.s.complete(r, frame)
}

func (r *request) finishFrame(frame []byte) { r.s.complete(r, frame) }

// complete records a finished response and writes every response that is
// now next in order.
func (s *session) complete(r *request, frame []byte) {
	s.gw.inflight.Add(-r.size)
	s.mu.Lock()
	s.done[r.seq] = finished{frame: frame, size: r.size}
	var resume bool
	for {
		f, ok := s.done[s.writeSeq]
		if !ok {
			break
		}
		delete(s.done, s.writeSeq)
		s.writeSeq++
		s.inflight--
		s.inflightB -= f.size
		if f.frame != nil && !s.closed {
			s.gw.metrics.bytesOut.Add(float64(len(f.frame)))
			s.sink.write(f.frame)
		}
	}
	if s.paused && s.inflight < sessionQueueLen/2 {
		s.paused = false
		resume = true
	}
	closeNow := s.closing && !s.closed && s.writeSeq >= s.closeAfter
	s.mu.Unlock()
	if closeNow {
		s.sink.close()
	}
	if resume {
		s.sink.resume()
	}
}

// closeAfterQueued closes the connection once every response to requests
// already accepted has been written.
func (s *session) closeAfterQueued() {
	s.mu.Lock()
	s.closing = true
	s.closeAfter = s.nextSeq
	closeNow := !s.closed && s.writeSeq >= s.closeAfter
	s.mu.Unlock()
	if closeNow {
		s.sink.close()
	}
}

// remoteHost is the client's address without the port, as DescribeGroups
// reports it.
func (s *session) remoteHost() string {
	if host, _, err := net.SplitHostPort(s.remote); err == nil {
		return "/" + host
	}
	return s.remote
}

// closed is called by the transport when the connection is gone.
func (s *session) onClosed() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	close(s.queue)
	s.gw.metrics.connections.Dec()
}
