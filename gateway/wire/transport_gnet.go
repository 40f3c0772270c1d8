package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// gnetTransport runs the plaintext Kafka listener on gnet's event loops.
// Frames are cut and decoded on the loop; everything that can block happens in
// the session's goroutines.
//
// gnet cannot stop reading a socket, so backpressure works one level up: when
// a session is over its in-flight bounds, the loop leaves the client's bytes
// unconsumed in gnet's inbound buffer and resumes (via Wake) when responses
// drain. Kafka clients bound their own in-flight requests, so that buffer
// stays small; a client that keeps sending past maxBufferedBytes anyway, or
// past partialFrameGrace while the gateway is over its in-flight budget, is
// disconnected with a log line instead of growing memory without bound.
type gnetTransport[T any] struct {
	gnet.BuiltinEventEngine
	srv     *Server[T]
	lis     *Bound
	booted  chan error
	engine  gnet.Engine
	mu      sync.Mutex
	boundTo net.Addr
}

// gnetSink adapts a gnet connection to responseSink. gnet's AsyncWrite
// callback runs on the event loop once the frame went to the socket or into
// gnet's outbound buffer; what is in that buffer is still unwritten, so the
// sink reports bytes written as the frames handed over, less the growth of
// the outbound buffer, each time it looks (callbacks and OnTraffic, both on
// the loop).
type gnetSink[T any] struct {
	c  gnet.Conn
	s  *session[T]
	ip string
	// outbound is gnet's outbound buffer as last seen, on the loop only.
	outbound int
	// iov is the slice writeParts gathers a writev's pieces in, on the
	// loop only.
	iov [][]byte
}

func (k *gnetSink[T]) write(o outFrame) {
	n := o.size()
	done := func(c gnet.Conn, err error) error {
		if err == nil {
			k.observe(n)
		}
		// gnet has written the frame or copied what the socket did not
		// take into its outbound buffer, or failed: frame is free.
		o.release()
		return nil
	}
	if o.parts != nil {
		_ = k.c.AsyncWrite(nil, func(c gnet.Conn, err error) error {
			if err == nil {
				err = k.writeParts(c, o.parts)
			}
			return done(c, err)
		})
		return
	}
	_ = k.c.AsyncWrite(o.frame, done)
}

// writevParts is the most pieces one writev takes (IOV_MAX on Linux); gnet
// hands a write of more to the kernel as it is, which refuses it.
const writevParts = 1024

// writeParts writes a spliced frame on the loop, in order: runs of bytes
// with writev, at most writevParts pieces a call, and file ranges with
// sendfile (sendFile). gnet writes straight to the socket while its
// outbound buffer is empty and copies what the socket does not take into
// it, so every part lands in order whichever way it goes.
func (k *gnetSink[T]) writeParts(c gnet.Conn, parts []FramePart) error {
	for len(parts) > 0 {
		if parts[0].file.Len > 0 {
			if err := k.sendFile(c, parts[0].file); err != nil {
				return err
			}
			parts = parts[1:]
			continue
		}
		run := k.iov[:0]
		for len(parts) > 0 && parts[0].file.Len == 0 && len(run) < writevParts {
			run = append(run, parts[0].b)
			parts = parts[1:]
		}
		_, err := c.Writev(run)
		clear(run)
		k.iov = run[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// sendFile writes a range of a record log file with sendfile, the kernel
// copying it from the page cache into the socket, while nothing waits in
// gnet's outbound buffer and the socket takes it. What it does not take
// is read into memory and goes into that buffer, gnet writing it when the
// socket drains. A failed read closes the connection: the frame cannot be
// completed.
func (k *gnetSink[T]) sendFile(c gnet.Conn, span disclient.FileSpan) error {
	off, left := span.Off, span.Len
	if c.OutboundBuffered() == 0 {
		rc, err := span.File.SyscallConn()
		if err != nil {
			return k.failFile(c, err)
		}
		var serr error
		cerr := rc.Control(func(fd uintptr) {
			for left > 0 {
				n, err := unix.Sendfile(c.Fd(), int(fd), &off, left)
				left -= max(n, 0)
				switch {
				case err == unix.EINTR:
				case err == unix.EAGAIN:
					return
				case err != nil:
					serr = err
					return
				case n == 0:
					serr = io.ErrUnexpectedEOF
					return
				}
			}
		})
		if cerr != nil {
			return k.failFile(c, cerr)
		}
		if errors.Is(serr, unix.EPIPE) || errors.Is(serr, unix.ECONNRESET) {
			// The client went away: as for any failed write.
			_ = c.Close()
			return serr
		}
		if serr != nil {
			return k.failFile(c, fmt.Errorf("sendfile: %w", serr))
		}
		k.s.srv.d.Metrics.FileSent.Add(float64(span.Len - left))
		if left == 0 {
			return nil
		}
	}
	k.s.srv.d.Metrics.FileRead.Add(float64(left))
	b, err := disclient.FileSpan{File: span.File, Off: off, Len: left}.AppendTo(responseBuffers.get(left))
	if err != nil {
		return k.failFile(c, err)
	}
	_, err = c.Write(b)
	responseBuffers.put(b)
	return err
}

// failFile closes the connection whose frame could not be completed.
func (k *gnetSink[T]) failFile(c gnet.Conn, err error) error {
	k.s.log.Warn().Err(err).Msg("closing connection: sending record data from the record log failed")
	_ = c.Close()
	return err
}

// observe tells the session what left gnet since it last looked, handed
// being the bytes of frames whose write has just run. On the loop only.
func (k *gnetSink[T]) observe(handed int) {
	cur := k.c.OutboundBuffered()
	k.s.wrote(handed + k.outbound - cur)
	k.outbound = cur
}

// close and abort are one: gnet's close writes what the socket takes
// without blocking, then closes.
func (k *gnetSink[T]) close()  { _ = k.c.CloseWithCallback(nil) }
func (k *gnetSink[T]) abort()  { _ = k.c.CloseWithCallback(nil) }
func (k *gnetSink[T]) resume() { _ = k.c.Wake(nil) }

func newGnetTransport[T any](srv *Server[T], l *Bound) *gnetTransport[T] {
	return &gnetTransport[T]{srv: srv, lis: l, booted: make(chan error, 1)}
}

// run blocks serving until the engine stops.
func (t *gnetTransport[T]) run() error {
	err := gnet.Run(t, "tcp://"+t.lis.Addr,
		gnet.WithMulticore(true),
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{t.srv.d.Log}),
	)
	select {
	case t.booted <- err:
	default:
	}
	return err
}

func (t *gnetTransport[T]) OnBoot(eng gnet.Engine) gnet.Action {
	t.mu.Lock()
	t.engine = eng
	fd, err := eng.Dup()
	if err == nil {
		if sa, serr := unix.Getsockname(fd); serr == nil {
			t.boundTo = sockaddrToTCP(sa)
		}
		_ = unix.Close(fd)
	}
	t.mu.Unlock()
	// OnBoot runs before gnet starts its event loops, so every connection
	// sees the advertised address already resolved.
	if t.boundTo == nil {
		t.booted <- errNotBooted
		return gnet.Shutdown
	}
	t.lis.bound = t.boundTo
	if err := t.lis.advertise(); err != nil {
		t.booted <- err
		return gnet.Shutdown
	}
	t.booted <- nil
	return gnet.None
}

func sockaddrToTCP(sa unix.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return nil
}

func (t *gnetTransport[T]) stop(ctx context.Context) error {
	t.mu.Lock()
	eng := t.engine
	t.mu.Unlock()
	if err := eng.Validate(); err != nil {
		return nil
	}
	return eng.Stop(ctx)
}

func (t *gnetTransport[T]) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	ip, ok := t.srv.admitConn(c.RemoteAddr())
	if !ok {
		return nil, gnet.Close
	}
	k := &gnetSink[T]{c: c, ip: ip}
	k.s = newSession(t.srv, t.lis, k, c.RemoteAddr().String())
	c.SetContext(k)
	return nil, gnet.None
}

func (t *gnetTransport[T]) OnClose(c gnet.Conn, err error) gnet.Action {
	if k, ok := c.Context().(*gnetSink[T]); ok {
		// Its slot goes first, as for TLS (serveTLSConn).
		t.srv.releaseConn(k.ip)
		k.s.onClosed()
	}
	return gnet.None
}

// OnTraffic runs when bytes arrive and when a paused session is woken. The
// bytes left in gnet's inbound buffer (a partial frame, frames waiting out
// backpressure) are the session's pending bytes.
func (t *gnetTransport[T]) OnTraffic(c gnet.Conn) gnet.Action {
	k, ok := c.Context().(*gnetSink[T])
	if !ok {
		return gnet.Close
	}
	s := k.s
	k.observe(0)
	grew := c.InboundBuffered() > int(s.pending)
	if grew {
		s.received()
	}
	action := t.consume(c, s)
	if action != gnet.None {
		return action
	}
	buffered := c.InboundBuffered()
	s.setPending(buffered)
	if grew && buffered > partialFrameGrace && t.srv.overBudget() {
		s.closeReason(closeInflightBudget)
		t.srv.d.Metrics.ConnsClosed.WithLabelValues(closeInflightBudget).Inc()
		s.log.Warn().Int("buffered", buffered).Int64("max_inflight_bytes", t.srv.d.MaxInflightBytes).
			Msg("closing connection: gateway in-flight budget exhausted while the client keeps sending")
		return gnet.Close
	}
	return gnet.None
}

// consume hands every whole frame in the inbound buffer to the session, as
// far as it takes them.
func (t *gnetTransport[T]) consume(c gnet.Conn, s *session[T]) gnet.Action {
	for {
		// Look at the size prefix only: peeking a large, partly received
		// frame on every read would copy it over and over.
		head, _ := c.Peek(4)
		n, err := protocol.FrameLen(head, s.frameLimit())
		if err != nil {
			t.srv.d.Metrics.BadRequests.Inc()
			s.log.Warn().Err(err).Msg("closing connection: frame size refused")
			return gnet.Close
		}
		buffered := c.InboundBuffered()
		if n == 0 || buffered < n {
			return gnet.None
		}
		if !s.canAccept(n) {
			if buffered > t.srv.d.maxBufferedBytes() {
				s.log.Warn().Int("buffered", buffered).Msg("closing connection: client keeps sending past backpressure")
				return gnet.Close
			}
			return gnet.None
		}
		frame, err := nextFrame(c, n)
		if err != nil {
			return gnet.Close
		}
		if !s.accept(frame) {
			return gnet.None
		}
	}
}

// nextFrame takes the next frame, of n bytes with its size prefix, out of
// c's inbound buffers, as a copy of its own without the prefix: gnet
// reuses its buffers. The bytes are copied once. Next would, for a frame
// that gnet's ring buffer holds part of (any frame larger than one read),
// first copy it into a buffer of gnet's pool, allocated and zeroed for
// every large frame, and then be copied again.
func nextFrame(c gnet.Conn, n int) ([]byte, error) {
	if _, err := c.Discard(4); err != nil {
		return nil, err
	}
	frame := make([]byte, n-4)
	if m, err := c.Read(frame); err != nil || m != len(frame) {
		return nil, fmt.Errorf("gateway: read %d of a %d-byte frame buffered: %w", m, len(frame), err)
	}
	return frame, nil
}

// gnetLogger routes gnet's own log lines into the gateway's zerolog logger.
type gnetLogger struct{ log zerolog.Logger }

func (l gnetLogger) Debugf(format string, args ...any) {
	l.log.Debug().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Infof(format string, args ...any) {
	l.log.Debug().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Warnf(format string, args ...any) {
	l.log.Warn().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Errorf(format string, args ...any) {
	l.log.Error().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Fatalf(format string, args ...any) {
	l.log.Error().Msg(fmt.Sprintf(format, args...))
}

var errNotBooted = errors.New("gateway: listener did not start")
