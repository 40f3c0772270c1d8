package wire

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// connTable admits client connections against the connection limits and
// keeps the open sessions for the reaper, which closes idle connections and
// connections whose client stopped reading its responses.
type connTable[T any] struct {
	mu       sync.Mutex
	open     int
	perIP    map[string]int
	sessions map[*session[T]]struct{}

	// lastRefusalLog rate-limits the log line about refused connections:
	// a client hammering the limit must not flood the log.
	lastRefusalLog atomic.Int64
	refusedQuiet   atomic.Int64
}

func newConnTable[T any]() *connTable[T] {
	return &connTable[T]{perIP: make(map[string]int), sessions: make(map[*session[T]]struct{})}
}

// reaperInterval is how often the reaper looks at every session. It also
// bounds how late a paused gnet connection notices that its client read the
// responses queued in gnet's outbound buffer (gnet tells nothing when that
// buffer drains), so it stays short.
const reaperInterval = 100 * time.Millisecond

// refusalLogEvery is the least time between two log lines about refused
// connections; the ones in between are counted in the next line.
const refusalLogEvery = time.Second

// clientIP is the address part of a remote address, what the per-IP limit
// counts.
func clientIP(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// admitConn counts a new connection from remote against MaxConnections and
// MaxConnectionsPerIP. When it returns false the caller closes the
// connection at once; otherwise it calls releaseConn(ip) when the connection
// is gone.
func (srv *Server[T]) admitConn(remote net.Addr) (ip string, ok bool) {
	ip = clientIP(remote)
	t := srv.conns
	t.mu.Lock()
	reason := ""
	switch {
	case srv.d.Draining():
		reason = "draining"
	case t.open >= srv.d.MaxConnections:
		reason = "max_connections"
	case t.perIP[ip] >= srv.d.MaxConnectionsPerIP:
		reason = "max_connections_per_ip"
	default:
		t.open++
		t.perIP[ip]++
	}
	t.mu.Unlock()
	if reason == "" {
		return ip, true
	}
	srv.d.Metrics.ConnsRefused.WithLabelValues(reason).Inc()
	now := time.Now().UnixNano()
	last := t.lastRefusalLog.Load()
	if now-last < int64(refusalLogEvery) || !t.lastRefusalLog.CompareAndSwap(last, now) {
		t.refusedQuiet.Add(1)
		return ip, false
	}
	srv.d.Log.Warn().Str("remote", remote.String()).Str("reason", reason).
		Int("max_connections", srv.d.MaxConnections).Int("max_connections_per_ip", srv.d.MaxConnectionsPerIP).
		Int64("refused_since_last_line", t.refusedQuiet.Swap(0)).Msg("connection refused: connection limit reached or draining")
	return ip, false
}

// releaseConn undoes a successful admitConn.
func (srv *Server[T]) releaseConn(ip string) {
	t := srv.conns
	t.mu.Lock()
	t.open--
	if t.perIP[ip]--; t.perIP[ip] <= 0 {
		delete(t.perIP, ip)
	}
	t.mu.Unlock()
}

func (t *connTable[T]) add(s *session[T]) {
	t.mu.Lock()
	t.sessions[s] = struct{}{}
	t.mu.Unlock()
}

func (t *connTable[T]) remove(s *session[T]) {
	t.mu.Lock()
	delete(t.sessions, s)
	t.mu.Unlock()
}

// reap runs until the gateway stops, closing connections that the idle and
// write timeouts condemn and nudging paused ones to look at their output.
func (srv *Server[T]) reap() {
	tick := time.NewTicker(reaperInterval)
	defer tick.Stop()
	var batch []*session[T]
	for {
		select {
		case <-srv.d.Ctx.Done():
			return
		case <-tick.C:
		}
		batch = batch[:0]
		srv.conns.mu.Lock()
		for s := range srv.conns.sessions {
			batch = append(batch, s)
		}
		srv.conns.mu.Unlock()
		now := time.Now()
		for _, s := range batch {
			s.reapCheck(now)
		}
		clear(batch)
	}
}
