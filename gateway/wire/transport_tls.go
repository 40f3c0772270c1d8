package wire

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/disgw/disgw/protocol"
)

// TLS listeners (SSL, SASL_SSL) run on crypto/tls, since gnet has no TLS:
// one goroutine reads each connection and one writes it. They feed the same
// session pipeline as the gnet transport, and backpressure is real here:
// the reader stops reading the socket until responses drain. A connection is
// admitted against the connection limits before its handshake, which must
// finish within TLSHandshakeTimeout.

// acceptRetryDelay is the pause after a failed Accept that is not the
// listener closing (out of file descriptors, say), so the loop does not spin
// and the listener outlives the shortage.
const acceptRetryDelay = 50 * time.Millisecond

// startTLS binds a TLS listener and accepts in the background.
func (srv *Server[T]) startTLS(l *Bound) error {
	ln, err := net.Listen("tcp", l.Addr)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", l.Addr, err)
	}
	l.bound = ln.Addr()
	if err := l.advertise(); err != nil {
		_ = ln.Close()
		return err
	}
	var conns sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	done := make(chan struct{})
	srv.d.Panics.Go("TLS accept loop", func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				srv.d.Log.Warn().Err(err).Str("listen", l.bound.String()).Msg("TLS listener accept failed")
				time.Sleep(acceptRetryDelay)
				continue
			}
			ip, ok := srv.admitConn(c.RemoteAddr())
			if !ok {
				_ = c.Close()
				continue
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			conns.Add(1)
			srv.d.Panics.Go("TLS connection", func() {
				defer conns.Done()
				srv.serveTLSConn(l, c, ip)
				mu.Lock()
				delete(open, c)
				mu.Unlock()
			})
		}
	})
	l.stop = func() error {
		err := ln.Close()
		<-done
		mu.Lock()
		for c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
		return err
	}
	return nil
}

// tlsWriteChunk is how much of a frame one socket write carries: each write
// gets its own WriteTimeout deadline, so a client reading a large response
// slowly but steadily is not mistaken for one that stopped reading.
const tlsWriteChunk = 256 << 10

// budgetPoll is how often a reader holding partialFrameGrace of a frame
// looks whether the gateway went back under its in-flight budget.
const budgetPoll = 10 * time.Millisecond

// tlsSink queues frames for the connection's writer goroutine. Queueing
// never blocks (the session calls write under its lock); the queue is
// bounded by the session's budget, which counts every queued byte.
type tlsSink[T any] struct {
	conn    net.Conn
	s       *session[T]
	timeout time.Duration

	mu      sync.Mutex
	queue   []outFrame
	closing bool // write nothing more; the writer exits once the queue is empty

	ready chan struct{} // queue or closing changed
	wake  chan struct{} // the session resumed
	stop  chan struct{} // the reader is gone: the writer exits at once
	done  chan struct{} // the writer exited and closed the connection
}

func newTLSSink[T any](c net.Conn, timeout time.Duration) *tlsSink[T] {
	return &tlsSink[T]{conn: c, timeout: timeout, ready: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// wakeChan sends on a one-slot channel unless a wake-up is already pending.
func wakeChan(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (k *tlsSink[T]) write(o outFrame) {
	k.mu.Lock()
	if !k.closing {
		k.queue = append(k.queue, o)
	}
	k.mu.Unlock()
	wakeChan(k.ready)
}

func (k *tlsSink[T]) close() {
	k.mu.Lock()
	k.closing = true
	k.mu.Unlock()
	wakeChan(k.ready)
}

func (k *tlsSink[T]) abort() {
	k.mu.Lock()
	k.closing = true
	k.queue = nil
	k.mu.Unlock()
	// tls.Conn.Close during a blocked Write closes the socket without
	// waiting for the write, which then fails: the writer exits.
	_ = k.conn.Close()
	wakeChan(k.ready)
}

func (k *tlsSink[T]) resume() { wakeChan(k.wake) }

// writeLoop writes queued frames in order until the session closes the
// connection, a write fails or times out, or the reader is gone.
func (k *tlsSink[T]) writeLoop() {
	defer close(k.done)
	defer func() { _ = k.conn.Close() }()
	for {
		k.mu.Lock()
		frames, closing := k.queue, k.closing
		k.queue = nil
		k.mu.Unlock()
		for _, f := range frames {
			// One TLS record per write: spliced pieces go together.
			b := f.frame
			var err error
			if f.parts != nil {
				k.s.srv.d.Metrics.FileRead.Add(float64(f.fileBytes()))
				if b, err = f.appendTo(responseBuffers.get(f.size())); err != nil {
					responseBuffers.put(b)
					f.release()
					k.s.log.Warn().Err(err).Msg("closing connection: reading record data from the record log failed")
					return
				}
			}
			err = k.writeFrame(b)
			if f.parts != nil {
				responseBuffers.put(b)
			}
			f.release()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					k.s.closeReason(closeWriteTimeout)
					k.s.srv.d.Metrics.ConnsClosed.WithLabelValues(closeWriteTimeout).Inc()
					k.s.log.Warn().Dur("write_timeout", k.timeout).Msg("closing connection: client does not read its responses")
				} else if !errors.Is(err, net.ErrClosed) {
					k.s.log.Debug().Err(err).Msg("connection write failed")
				}
				return
			}
		}
		if len(frames) > 0 {
			continue
		}
		if closing {
			return
		}
		select {
		case <-k.ready:
		case <-k.stop:
			return
		}
	}
}

// writeFrame writes f in chunks, each with a fresh deadline, and reports
// every chunk written to the session.
func (k *tlsSink[T]) writeFrame(f []byte) error {
	for len(f) > 0 {
		n := min(len(f), tlsWriteChunk)
		_ = k.conn.SetWriteDeadline(time.Now().Add(k.timeout))
		if _, err := k.conn.Write(f[:n]); err != nil {
			return err
		}
		k.s.wrote(n)
		f = f[n:]
	}
	return nil
}

// serveTLSConn handshakes one TLS connection and reads its frames into a
// session. When it returns, the session, the writer and the connection are
// gone, and the connection's admission (ip, admitConn) is released.
func (srv *Server[T]) serveTLSConn(l *Bound, raw net.Conn, ip string) {
	c := tls.Server(raw, l.TLS)
	_ = c.SetDeadline(time.Now().Add(srv.d.TLSHandshakeTimeout))
	if err := c.HandshakeContext(srv.d.Ctx); err != nil {
		srv.d.Metrics.ConnsClosed.WithLabelValues("tls_handshake").Inc()
		srv.d.Log.Warn().Err(err).Str("remote", raw.RemoteAddr().String()).Msg("TLS handshake failed")
		_ = c.Close()
		srv.releaseConn(ip)
		return
	}
	_ = c.SetDeadline(time.Time{})
	sink := newTLSSink[T](c, srv.d.WriteTimeout)
	s := newSession(srv, l, sink, raw.RemoteAddr().String())
	sink.s = s
	srv.d.Panics.Go("TLS writer", sink.writeLoop)
	defer func() {
		// The connection's slot goes before the connection count drops,
		// so that one seen closed in disgw_connections is never still
		// held against MaxConnections and MaxConnectionsPerIP.
		srv.releaseConn(ip)
		s.onClosed()
		close(sink.stop)
		<-sink.done
	}()
	srv.readTLS(s, sink, c)
}

// errConnGone ends a frame read when the connection's writer has closed it.
var errConnGone = errors.New("gateway: connection closed")

// readTLS reads frames until the connection ends or the session closes it.
func (srv *Server[T]) readTLS(s *session[T], sink *tlsSink[T], c net.Conn) {
	var head [4]byte
	for {
		if _, err := io.ReadFull(c, head[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug().Err(err).Msg("connection read ended")
			}
			return
		}
		s.received()
		n, err := protocol.FrameLen(head[:], s.frameLimit())
		if err != nil {
			srv.d.Metrics.BadRequests.Inc()
			s.log.Warn().Err(err).Msg("closing connection: frame size refused")
			return
		}
		for !s.canAccept(n) {
			select {
			case <-sink.wake:
			case <-sink.done:
				return
			}
		}
		frame, err := protocol.ReadBody(c, n-4, func(got int) error {
			s.received()
			s.setPending(got)
			for got >= partialFrameGrace && srv.overBudget() {
				select {
				case <-sink.done:
					return errConnGone
				case <-time.After(budgetPoll):
				}
			}
			return nil
		})
		s.setPending(0)
		if err != nil {
			if !errors.Is(err, errConnGone) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug().Err(err).Msg("connection read ended in a frame")
			}
			return
		}
		if !s.accept(frame) {
			// Wait for the pending responses and the close.
			<-sink.done
			return
		}
	}
}
