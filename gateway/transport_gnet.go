package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

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
// stays small; a client that keeps sending past maxBufferedBytes anyway is
// disconnected with a log line instead of growing memory without bound.
type gnetTransport struct {
	gnet.BuiltinEventEngine
	gw      *Gateway
	lis     *listener
	booted  chan error
	engine  gnet.Engine
	mu      sync.Mutex
	boundTo net.Addr
}

// gnetSink adapts a gnet connection to responseSink.
type gnetSink struct{ c gnet.Conn }

func (k gnetSink) write(frame []byte) { _ = k.c.AsyncWrite(frame, nil) }
func (k gnetSink) close()             { _ = k.c.CloseWithCallback(nil) }
func (k gnetSink) resume()            { _ = k.c.Wake(nil) }

func newGnetTransport(gw *Gateway, l *listener) *gnetTransport {
	return &gnetTransport{gw: gw, lis: l, booted: make(chan error, 1)}
}

// run blocks serving until the engine stops.
func (t *gnetTransport) run() error {
	err := gnet.Run(t, "tcp://"+t.lis.Addr,
		gnet.WithMulticore(true),
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{t.gw}),
	)
	select {
	case t.booted <- err:
	default:
	}
	return err
}

func (t *gnetTransport) OnBoot(eng gnet.Engine) gnet.Action {
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

func (t *gnetTransport) stop(ctx context.Context) error {
	t.mu.Lock()
	eng := t.engine
	t.mu.Unlock()
	if err := eng.Validate(); err != nil {
		return nil
	}
	return eng.Stop(ctx)
}

func (t *gnetTransport) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(newSession(t.gw, t.lis, gnetSink{c}, c.RemoteAddr().String()))
	return nil, gnet.None
}

func (t *gnetTransport) OnClose(c gnet.Conn, err error) gnet.Action {
	if s, ok := c.Context().(*session); ok {
		s.onClosed()
	}
	return gnet.None
}

func (t *gnetTransport) OnTraffic(c gnet.Conn) gnet.Action {
	s, ok := c.Context().(*session)
	if !ok {
		return gnet.Close
	}
	for {
		// Look at the size prefix only: peeking a large, partly received
		// frame on every read would copy it over and over.
		head, _ := c.Peek(4)
		n, err := protocol.FrameLen(head, s.frameLimit())
		if err != nil {
			t.gw.metrics.badRequests.Inc()
			s.log.Warn().Err(err).Msg("closing connection: frame size refused")
			return gnet.Close
		}
		buffered := c.InboundBuffered()
		if n == 0 || buffered < n {
			return gnet.None
		}
		if !s.canAccept(n) {
			if buffered > t.gw.cfg.maxBufferedBytes() {
				s.log.Warn().Int("buffered", buffered).Msg("closing connection: client keeps sending past backpressure")
				return gnet.Close
			}
			return gnet.None
		}
		buf, err := c.Next(n)
		if err != nil {
			return gnet.Close
		}
		// gnet reuses buf: the session gets its own copy of the frame.
		if !s.accept(append([]byte(nil), buf[4:]...)) {
			return gnet.None
		}
	}
}

// gnetLogger routes gnet's own log lines into the gateway's zerolog logger.
type gnetLogger struct{ gw *Gateway }

func (l gnetLogger) Debugf(format string, args ...any) {
	l.gw.log.Debug().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Infof(format string, args ...any) {
	l.gw.log.Debug().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Warnf(format string, args ...any) {
	l.gw.log.Warn().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Errorf(format string, args ...any) {
	l.gw.log.Error().Msg(fmt.Sprintf(format, args...))
}
func (l gnetLogger) Fatalf(format string, args ...any) {
	l.gw.log.Error().Msg(fmt.Sprintf(format, args...))
}

var errNotBooted = errors.New("gateway: listener did not start")
