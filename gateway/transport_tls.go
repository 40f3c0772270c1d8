package gateway

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/disgw/disgw/protocol"
)

// TLS listeners (SSL, SASL_SSL) run on crypto/tls, since gnet has no TLS:
// one goroutine reads each connection and one writes it. They feed the same
// session pipeline as the gnet transport, and backpressure is real here:
// the reader stops reading the socket until responses drain.

// startTLS binds a TLS listener and accepts in the background.
func (gw *Gateway) startTLS(l *listener) error {
	ln, err := tls.Listen("tcp", l.Addr, l.TLS)
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
	gw.goSafe("TLS accept loop", func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			conns.Add(1)
			gw.goSafe("TLS connection", func() {
				defer conns.Done()
				gw.serveTLSConn(l, c)
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

// tlsSink writes frames from a goroutine of its own, in order.
type tlsSink struct {
	conn   net.Conn
	frames chan []byte
	wake   chan struct{}
	once   sync.Once
	quit   chan struct{}
}

func (k *tlsSink) write(frame []byte) {
	select {
	case k.frames <- frame:
	case <-k.quit:
	}
}

func (k *tlsSink) close() { k.once.Do(func() { close(k.quit) }) }

func (k *tlsSink) resume() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// writeLoop sends frames until the session closes the connection.
func (k *tlsSink) writeLoop() {
	defer func() { _ = k.conn.Close() }()
	for {
		select {
		case f := <-k.frames:
			if _, err := k.conn.Write(f); err != nil {
				return
			}
		case <-k.quit:
			// Flush what was queued before the close.
			for {
				select {
				case f := <-k.frames:
					if _, err := k.conn.Write(f); err != nil {
						return
					}
				default:
					return
				}
			}
		}
	}
}

// serveTLSConn reads frames from one TLS connection into a session.
func (gw *Gateway) serveTLSConn(l *listener, c net.Conn) {
	sink := &tlsSink{conn: c, frames: make(chan []byte, sessionQueueLen), wake: make(chan struct{}, 1), quit: make(chan struct{})}
	writerDone := make(chan struct{})
	gw.goSafe("TLS writer", func() {
		defer close(writerDone)
		sink.writeLoop()
	})
	s := newSession(gw, l, sink, c.RemoteAddr().String())
	defer func() {
		s.onClosed()
		sink.close()
		<-writerDone
	}()
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			s.log.Warn().Err(err).Msg("TLS handshake failed")
			return
		}
	}
	r := bufio.NewReaderSize(c, 64<<10)
	var head [4]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug().Err(err).Msg("connection read ended")
			}
			return
		}
		n, err := protocol.FrameLen(head[:], s.frameLimit())
		if err != nil {
			gw.metrics.badRequests.Inc()
			s.log.Warn().Err(err).Msg("closing connection: frame size refused")
			return
		}
		for !s.canAccept(n) {
			select {
			case <-sink.wake:
			case <-sink.quit:
				return
			}
		}
		frame := make([]byte, n-4)
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		if !s.accept(frame) {
			// Wait for the pending responses and the close.
			<-sink.quit
			return
		}
	}
}
