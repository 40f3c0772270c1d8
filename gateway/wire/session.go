package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/protocol"
)

// responseSink is where a session writes finished response frames: the gnet
// connection, or a goroutine-driven net.Conn for TLS listeners. Keeping it this
// small is what lets every transport feed the same pipeline.
type responseSink interface {
	// write queues one whole frame; frames arrive in request order. It is
	// called with the session's lock held, so it must never block: the
	// sink reports the bytes as they reach the socket with session.wrote,
	// and calls o.release once nothing reads the frame any more.
	write(o outFrame)
	// close closes the connection after the frames already queued.
	close()
	// abort closes the connection now, dropping what is still queued: the
	// client stopped reading, so waiting for the queue would never end.
	abort()
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
type session[T any] struct {
	srv    *Server[T]
	lis    *Bound
	sink   responseSink
	remote string
	log    zerolog.Logger
	// tenant is whose DIS credentials this connection uses: the gateway's
	// own until a passthrough authentication replaces them.
	tenant T

	ctx    context.Context
	cancel context.CancelFunc

	queue chan *Call[T]

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

	// Transport accounting. unsent is response bytes handed to the sink
	// and not yet written to the socket, pending the bytes received of
	// frames not yet accepted (a partial frame and, on gnet, input waiting
	// out backpressure); both count against the in-flight budgets like
	// request bytes, so a client that never reads, or sends a frame
	// slowly, holds memory the budgets see.
	unsent int64 // under mu
	// stalledSince is when the session last paused with responses unsent
	// (under mu; zero when not stalled): past WriteTimeout the client is
	// taken to have stopped reading and is disconnected.
	stalledSince time.Time
	reaped       bool         // under mu: the reaper has closed the connection
	pending      int64        // the transport's goroutine only
	lastRecv     atomic.Int64 // unix nanoseconds of the last bytes received

	// notices are the warnings given once per connection (Call.Notices).
	notices Notices

	conn connLog // for the open and close log lines
}

// partialFrameGrace is how much of frames not yet accepted a connection may
// hold while the gateway is over its in-flight budget: past it the TLS
// transport stops reading the connection and gnet (which cannot stop
// reading) closes it, so partial frames cannot take the gateway past its
// budget by more than this per connection.
const partialFrameGrace = 1 << 20

// saslMaxReceiveSize bounds requests on a SASL listener before
// authentication, as Kafka's sasl.server.max.receive.size does: a client
// that has not proven who it is cannot make the gateway decode 100 MiB.
const saslMaxReceiveSize = 512 << 10

// frameLimit is the largest frame the session takes now.
func (s *session[T]) frameLimit() int32 {
	if s.lis != nil && s.lis.Protocol.UsesSASL() && !s.authed.Load() {
		return min(s.srv.d.MaxFrameBytes, saslMaxReceiveSize)
	}
	return s.srv.d.MaxFrameBytes
}

// finished is a response waiting for its turn; a nil frame sends nothing.
type finished struct {
	out  outFrame
	size int64
}

// Call is one decoded request travelling through the pipeline, and its
// handler's call context (handlers.go).
type Call[T any] struct {
	s    *session[T]
	seq  uint64
	size int64
	hdr  protocol.RequestHeader
	body kmsg.Request
	h    *handler[T]
	once atomic.Bool // answered
	// served is set once a handler starts, at began: it is counted in
	// Server.handlersRun until answered.
	served bool
	began  time.Time
	// tenant is the connection's tenant when the handler started
	// (Call.Tenant).
	tenant T
	early  []byte // a response frame prepared on the loop (ApiVersions v0 errors)
	raw    []byte // a bare SASL token (after SaslHandshake v0)
}

const sessionQueueLen = 256

func newSession[T any](srv *Server[T], lis *Bound, sink responseSink, remote string) *session[T] {
	ctx, cancel := context.WithCancel(srv.d.Ctx)
	s := &session[T]{
		srv:    srv,
		lis:    lis,
		sink:   sink,
		remote: remote,
		log:    srv.d.Log.With().Str("remote", remote).Logger(),
		tenant: srv.d.Tenant,
		ctx:    ctx,
		cancel: cancel,
		queue:  make(chan *Call[T], sessionQueueLen),
		done:   make(map[uint64]finished),
	}
	s.lastRecv.Store(time.Now().UnixNano())
	s.logOpen()
	srv.d.Metrics.Connections.WithLabelValues(lis.name()).Inc()
	srv.conns.add(s)
	go func() {
		// Past a panic here nothing would answer this connection again.
		defer srv.d.Panics.Recover("session dispatcher", sink.close)
		s.dispatch()
	}()
	return s
}

// canAccept reports whether the session takes another frame of size n now.
// When it returns false the session is paused and calls sink.resume once
// enough in-flight work has finished and enough responses were written.
func (s *session[T]) canAccept(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.closing {
		return false
	}
	busy := s.inflight > 0 || s.unsent > 0
	over := s.inflight >= sessionQueueLen ||
		(busy && s.inflightB+s.unsent+int64(n) > s.srv.d.MaxInflightBytesPerConn) ||
		(busy && s.srv.overBudget())
	if over {
		if !s.paused {
			s.srv.d.Metrics.Backpressure.Inc()
		}
		s.paused = true
		if s.unsent > 0 && s.stalledSince.IsZero() {
			s.stalledSince = time.Now()
		}
	}
	return !over
}

// resumeLocked reports whether a paused session has drained enough to be
// offered frames again, and unpauses it then.
func (s *session[T]) resumeLocked() bool {
	if !s.paused || s.inflight >= sessionQueueLen/2 || s.inflightB+s.unsent >= s.srv.d.MaxInflightBytesPerConn {
		return false
	}
	s.paused = false
	s.stalledSince = time.Time{}
	return true
}

// wrote is the sink reporting n more response bytes written to the socket.
func (s *session[T]) wrote(n int) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.unsent -= int64(n)
	s.srv.d.Inflight.Add(-int64(n))
	if s.unsent == 0 {
		s.stalledSince = time.Time{}
	}
	resume := s.resumeLocked()
	s.mu.Unlock()
	if resume {
		s.sink.resume()
	}
}

// setPending records how many bytes of frames not yet accepted the
// transport holds for this connection. Only the transport's goroutine
// calls it.
func (s *session[T]) setPending(n int) {
	s.srv.d.Inflight.Add(int64(n) - s.pending)
	s.pending = int64(n)
}

// received notes that the client sent bytes, for the idle timeout.
func (s *session[T]) received() { s.lastRecv.Store(time.Now().UnixNano()) }

// reapCheck closes the connection when the client has stopped reading its
// responses for WriteTimeout, or has been idle (nothing in flight, nothing
// received, a partly sent frame included) for IdleTimeout. A session with
// responses unsent is nudged: gnet says nothing when its outbound buffer
// drains, so the transport looks again.
func (s *session[T]) reapCheck(now time.Time) {
	s.mu.Lock()
	if s.closed || s.reaped {
		s.mu.Unlock()
		return
	}
	silent := now.Sub(time.Unix(0, s.lastRecv.Load()))
	idle := s.inflight == 0 && s.unsent == 0 && silent > s.srv.d.IdleTimeout
	stalled := !s.stalledSince.IsZero() && now.Sub(s.stalledSince) > s.srv.d.WriteTimeout
	nudge := s.unsent > 0
	unsent := s.unsent
	s.reaped = idle || stalled
	s.mu.Unlock()
	switch {
	case stalled:
		s.closeReason(closeWriteTimeout)
		s.srv.d.Metrics.ConnsClosed.WithLabelValues(closeWriteTimeout).Inc()
		s.log.Warn().Int64("unsent_bytes", unsent).Dur("write_timeout", s.srv.d.WriteTimeout).
			Msg("closing connection: client does not read its responses")
		s.sink.abort()
	case idle:
		s.closeReason(closeIdle)
		s.srv.d.Metrics.ConnsClosed.WithLabelValues(closeIdle).Inc()
		s.log.Debug().Dur("idle", silent).Msg("closing idle connection")
		s.sink.close()
	case nudge:
		s.sink.resume()
	}
}

// accept takes one frame (owned by the session from now on), decodes it and
// queues it for dispatch. It returns false when the connection must close.
func (s *session[T]) accept(frame []byte) bool {
	size := int64(len(frame))
	if s.rawSASL.Load() {
		s.conn.in.Add(size + 4)
		s.enqueue(&Call[T]{s: s, size: size, raw: frame})
		return true
	}
	req, err := s.parse(frame)
	if err != nil {
		return s.acceptBad(frame, err)
	}
	s.srv.d.Metrics.BytesIn.Add(float64(size + 4))
	s.noteRequest(size+4, &req.Header)
	h := s.srv.d.Handlers.keys[req.Header.Key]
	if h != nil && !h.advertised(s.srv.sasl) {
		h = nil
	}
	if h == nil || req.Header.Version < h.min || req.Header.Version > h.max {
		var uv protocol.UnsupportedVersionError
		uv.Header = req.Header
		return s.acceptBad(frame, &uv)
	}
	r := &Call[T]{s: s, size: size, hdr: req.Header, body: req.Body, h: h}
	s.enqueue(r)
	return true
}

// parse decodes frame on the transport's goroutine (a gnet event loop
// serves many connections), so a panic in decoding becomes an error that
// closes this connection, logged and counted, not the loop's end.
func (s *session[T]) parse(frame []byte) (req *protocol.Request, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.srv.d.Panics.note(s.log, v).Msg("decoding a request panicked")
			err = fmt.Errorf("gateway: decoding the request panicked: %v", v)
		}
	}()
	return protocol.ParseRequest(frame)
}

// acceptBad handles a frame that did not decode into a request we serve.
// Like Kafka, an ApiVersions request at a version we do not have is answered
// with a v0 UNSUPPORTED_VERSION response listing our ranges so the client can
// pick one; anything else malformed closes the connection with a log line.
func (s *session[T]) acceptBad(frame []byte, err error) bool {
	var uv *protocol.UnsupportedVersionError
	if errors.As(err, &uv) && uv.Header.Key == kmsg.ApiVersions.Int16() {
		r := &Call[T]{s: s, size: int64(len(frame)), hdr: uv.Header}
		r.early = s.srv.apiVersionsUnsupported(uv.Header)
		s.enqueue(r)
		return true
	}
	s.srv.d.Metrics.BadRequests.Inc()
	s.closeReason(closeBadRequest)
	s.log.Warn().Err(err).Msg("closing connection: request cannot be served")
	s.closeAfterQueued()
	return false
}

func (s *session[T]) enqueue(r *Call[T]) {
	s.mu.Lock()
	r.seq = s.nextSeq
	s.nextSeq++
	s.inflight++
	s.inflightB += r.size
	s.mu.Unlock()
	s.srv.d.Inflight.Add(r.size)
	s.queue <- r
}

// dispatch starts handlers in request order.
func (s *session[T]) dispatch() {
	for r := range s.queue {
		switch {
		case r.early != nil:
			r.finishFrame(r.early)
			continue
		case r.raw != nil:
			s.serveRawSASL(r)
			continue
		case s.lis.Protocol.UsesSASL() && !s.auth.authenticated && !allowedBeforeAuth(r.hdr.Key):
			s.srv.d.Metrics.BadRequests.Inc()
			s.closeReason(closeUnauthenticated)
			s.log.Warn().Str("api", r.h.name).Msg("closing connection: request before SASL authentication")
			r.finishFrame(nil)
			s.closeAfterQueued()
			continue
		}
		s.srv.d.Metrics.Requests.WithLabelValues(r.h.name).Inc()
		s.srv.handlersRun.Add(1)
		r.served, r.began, r.tenant = true, time.Now(), s.tenant
		s.serve(r)
	}
}

// deadlineGrace is how long past its deadline the dispatcher waits for a
// handler before answering for it: a handler that honours its context has
// answered by then, with errors more precise than a blanket timeout.
const deadlineGrace = 500 * time.Millisecond

// serve runs r's handler as it registered (docs/design.md §3): its ordered
// part here, its continuation, if any, on a goroutine under the deadline,
// with a watchdog that answers REQUEST_TIMED_OUT when the handler is late.
// Whatever happens, r is answered exactly once.
func (s *session[T]) serve(r *Call[T]) {
	ctx, cancel := s.ctx, context.CancelFunc(func() {})
	d := r.h.deadline(r)
	if d > 0 {
		ctx, cancel = context.WithTimeout(s.ctx, d)
	}
	resp, then, err, ok := r.call(func() (kmsg.Response, Continuation, error) { return r.h.start(ctx, r) })
	if !ok || then == nil {
		cancel()
		if ok {
			r.reply(resp, err)
		}
		return
	}
	watchdog := time.AfterFunc(d+deadlineGrace, func() {
		defer s.srv.d.Panics.Recover("request watchdog", nil)
		if r.replyCode(kerr.RequestTimedOut.Code) {
			r.logEvent(s.log.Warn()).Dur("deadline", d).Msg("handler missed its deadline; answered REQUEST_TIMED_OUT")
		}
		cancel()
	})
	s.srv.d.Panics.Go("request handler", func() {
		defer cancel()
		defer watchdog.Stop()
		resp, _, err, ok := r.call(func() (kmsg.Response, Continuation, error) {
			resp, err := then(ctx)
			return resp, nil, err
		})
		if ok {
			r.reply(resp, err)
		}
	})
}

// call runs one part of r's handler. A panic is recovered into r's error
// response with UNKNOWN_SERVER_ERROR, an error log line with the stack and
// a count in disgw_panics_recovered_total; ok is false then.
func (r *Call[T]) call(fn func() (kmsg.Response, Continuation, error)) (resp kmsg.Response, then Continuation, err error, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			r.logEvent(r.s.srv.d.Panics.note(r.s.log, v)).Msg("handler panicked; answered UNKNOWN_SERVER_ERROR")
			r.replyCode(kerr.UnknownServerError.Code)
			ok = false
		}
	}()
	resp, then, err = fn()
	return resp, then, err, true
}

// logEvent adds what identifies r to a log line.
func (r *Call[T]) logEvent(e *zerolog.Event) *zerolog.Event {
	e = e.Str("api", r.h.name).Int16("version", r.hdr.Version).Int32("correlation_id", r.hdr.CorrelationID)
	if id := r.s.conn.clientID.Load(); id != nil {
		e = e.Str("client_id", *id)
	}
	return e
}

// reply answers r with what its handler returned: resp, or for an error
// the API's error response with the Kafka code for it.
func (r *Call[T]) reply(resp kmsg.Response, err error) {
	if fr, ok := resp.(framedResponse); ok {
		defer fr.release()
	}
	if err != nil {
		code := r.s.srv.errorCodeFor(err)
		r.logEvent(r.s.log.Warn()).Err(err).Int16("error_code", code).Msg("handler failed")
		r.replyCode(code)
		return
	}
	if !r.respond(resp) {
		r.replyCode(kerr.UnknownServerError.Code)
	}
}

// replyCode answers r with its API's error response carrying code. It
// reports whether this was r's answer (not already answered).
func (r *Call[T]) replyCode(code int16) bool {
	if r.once.Load() {
		return false
	}
	var resp kmsg.Response
	func() {
		defer func() {
			if v := recover(); v != nil {
				r.logEvent(r.s.srv.d.Panics.note(r.s.log, v)).Msg("building an error response panicked")
			}
		}()
		resp = r.h.errorResponse(r, code)
	}()
	if resp == nil || !r.respond(resp) {
		// Nothing can be said on the wire: close rather than leave the
		// client waiting.
		if r.finish(nil) {
			r.s.closeAfterQueued()
			return true
		}
		return false
	}
	return true
}

// errorCodeFor is the Kafka error code for an error a handler returned.
func (s *Server[T]) errorCodeFor(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return s.d.KafkaCode(err)
}

// respond encodes resp and finishes r with it; a nil resp sends nothing
// (acks=0 produce). It returns false, leaving r unanswered, when encoding
// failed; a request already answered counts as success.
func (r *Call[T]) respond(resp kmsg.Response) bool {
	if r.once.Load() {
		return true
	}
	out, ok := r.encode(resp)
	if ok && !r.finishOut(out) {
		out.release()
	}
	return ok
}

// framedResponse is a response that builds its own frame rather than
// being encoded as it is: one whose frame carries more than its encoding,
// or is built in a buffer to give back (FetchResponse, frames.go).
type framedResponse interface {
	kmsg.Response
	// frame is the response's frame for a request with header hdr; an
	// error is a failed read of the record batches it carries.
	frame(hdr protocol.RequestHeader) (outFrame, error)
	// release gives back what the response borrowed, once it is encoded
	// or will not be; nothing may read the response afterwards.
	release()
}

// encode is resp's frame; ok is false when encoding failed or panicked (a
// response whose fields do not fit its version).
func (r *Call[T]) encode(resp kmsg.Response) (out outFrame, ok bool) {
	if resp == nil {
		return outFrame{}, true
	}
	defer func() {
		if v := recover(); v != nil {
			r.logEvent(r.s.srv.d.Panics.note(r.s.log, v)).Msg("encoding a response panicked")
			ok = false
		}
	}()
	if fr, own := resp.(framedResponse); own {
		out, err := fr.frame(r.hdr)
		if err != nil {
			r.logEvent(r.Log().Error().Err(err)).Msg("reading record batches from the record log failed")
			return outFrame{}, false
		}
		return out, true
	}
	return outFrame{frame: protocol.AppendResponse(nil, r.hdr, resp)}, true
}

// finish writes r's one answer (nil: none) and reports whether this was
// it; later answers are dropped.
func (r *Call[T]) finish(frame []byte) bool { return r.finishOut(outFrame{frame: frame}) }

// finishOut is finish for any outFrame; the transport releases it.
func (r *Call[T]) finishOut(out outFrame) bool {
	if !r.once.CompareAndSwap(false, true) {
		return false
	}
	if r.served {
		r.s.srv.d.Answered(r.h.name, r.tenant, r.body, r.began)
		defer r.s.srv.handlersRun.Done()
	}
	r.s.complete(r, out)
	return true
}

func (r *Call[T]) finishFrame(frame []byte) { r.finish(frame) }

// complete records a finished response and writes every response that is
// now next in order.
func (s *session[T]) complete(r *Call[T], out outFrame) {
	s.srv.d.Inflight.Add(-r.size)
	s.mu.Lock()
	s.done[r.seq] = finished{out: out, size: r.size}
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
		if n := f.out.size(); n > 0 && !s.closed {
			s.srv.d.Metrics.BytesOut.Add(float64(n))
			s.conn.out.Add(int64(n))
			s.unsent += int64(n)
			s.srv.d.Inflight.Add(int64(n))
			s.sink.write(f.out)
		}
	}
	resume = s.resumeLocked()
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
func (s *session[T]) closeAfterQueued() {
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
func (s *session[T]) remoteHost() string {
	if host, _, err := net.SplitHostPort(s.remote); err == nil {
		return "/" + host
	}
	return s.remote
}

// onClosed is called by the transport when the connection is gone; it
// releases what the connection held against the in-flight budgets.
func (s *session[T]) onClosed() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	unsent := s.unsent
	s.unsent = 0
	tn := s.tenant
	s.mu.Unlock()
	s.srv.d.Inflight.Add(-unsent)
	s.setPending(0)
	s.srv.d.Release(tn)
	s.cancel()
	close(s.queue)
	s.srv.conns.remove(s)
	s.srv.d.Metrics.Connections.WithLabelValues(s.lis.name()).Dec()
	s.logClose()
}
