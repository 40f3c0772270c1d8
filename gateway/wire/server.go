package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Server is the gateway's connections: its listeners and every connection
// they accepted. T is the gateway's tenant (Deps).
type Server[T any] struct {
	d     Deps[T]
	conns *connTable[T]
	// sasl is whether any listener uses SASL (saslEnabled).
	sasl bool
	// authLimit throttles sign-ins.
	authLimit   *authLimiter
	handlersRun handlerCount
	listeners   []*Bound
}

// New makes the connections of a gateway; Listen binds its listeners.
func New[T any](d Deps[T]) *Server[T] {
	return &Server[T]{d: d, conns: newConnTable[T](), sasl: saslEnabled(&d.Config), authLimit: newAuthLimiter(&d.Config)}
}

// Listen binds every listener of the Config and serves in the background.
// It returns once all are bound, or with the first error, having stopped
// those it bound.
func (s *Server[T]) Listen() error {
	for _, spec := range s.d.Listeners {
		l := &Bound{Listener: spec}
		var err error
		if spec.Protocol.UsesTLS() {
			err = s.startTLS(l)
		} else {
			err = s.startGnet(l)
		}
		if err != nil {
			_ = s.Stop()
			return err
		}
		s.listeners = append(s.listeners, l)
		s.d.Log.Info().Str("protocol", string(spec.Protocol)).Str("listen", l.bound.String()).
			Str("advertised", net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))).Msg("kafka listener started")
	}
	go s.reap()
	return nil
}

// overBudget reports whether the gateway holds more than MaxInflightBytes.
func (s *Server[T]) overBudget() bool { return s.d.Inflight.Load() > s.d.MaxInflightBytes }

// startGnet serves a plaintext listener on gnet's event loops.
func (s *Server[T]) startGnet(l *Bound) error {
	t := newGnetTransport(s, l)
	done := make(chan error, 1)
	go func() {
		defer s.d.Panics.Recover("gnet transport", func() { done <- errTransportPanicked })
		done <- t.run()
	}()
	select {
	case err := <-t.booted:
		if err != nil {
			return fmt.Errorf("gateway: listen %s: %w", l.Addr, err)
		}
	case <-time.After(10 * time.Second):
		return errNotBooted
	}
	l.stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped := make(chan error, 1)
		go func() { stopped <- t.stop(ctx) }()
		// gnet's Stop looks whether its shutdown ended every half second;
		// the transport's run returns as soon as it has, so a stop waits
		// for that, not for the next look (cancel ends the looking).
		select {
		case <-done:
			return nil
		case err := <-stopped:
			<-done
			return err
		}
	}
	return nil
}

// Stop stops every listener and closes its connections; it returns the
// first failure.
func (s *Server[T]) Stop() error {
	var first error
	for _, l := range s.listeners {
		if err := l.stop(); err != nil && first == nil && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	return first
}

// Listeners are the bound listeners, in the order of the Config.
func (s *Server[T]) Listeners() []*Bound { return s.listeners }

// Addr is the bound address of the first listener.
func (s *Server[T]) Addr() net.Addr { return s.listeners[0].bound }

// ListenerAddr is the bound address of the first listener with protocol p,
// or nil.
func (s *Server[T]) ListenerAddr(p SecurityProtocol) net.Addr {
	for _, l := range s.listeners {
		if l.Protocol == p {
			return l.bound
		}
	}
	return nil
}

// handlerCount counts the requests being handled, for Close to wait on.
// Unlike a sync.WaitGroup it may gain requests while Close waits: clients
// keep sending until their connections close.
type handlerCount struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil when nobody waits
}

func (c *handlerCount) Add(d int) {
	c.mu.Lock()
	c.n += d
	if c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

func (c *handlerCount) Done() { c.Add(-1) }

// wait returns once no request is being handled, or when ctx is done.
func (c *handlerCount) wait(ctx context.Context) {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	zero := c.zero
	c.mu.Unlock()
	select {
	case <-zero:
	case <-ctx.Done():
	}
}

// Wait returns once no request is being handled, or when ctx is done: a
// stopping gateway lets its handlers finish before it closes connections.
func (s *Server[T]) Wait(ctx context.Context) { s.handlersRun.wait(ctx) }
