package gateway

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// connTable admits client connections against the connection limits and
// keeps the open sessions for the reaper, which closes idle connections and
// connections whose client stopped reading its responses.
type connTable struct {
	mu       sync.Mutex
	open     int
	perIP    map[string]int
	sessions map[*session]struct{}

	// lastRefusalLog rate-limits the log line about refused connections:
	// a client hammering the limit must not flood the log.
	lastRefusalLog atomic.Int64
	refusedQuiet   atomic.Int64
}

func newConnTable() *connTable {
	return &connTable{perIP: make(map[string]int), sessions: make(map[*session]struct{})}
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
func (gw *Gateway) admitConn(remote net.Addr) (ip string, ok bool) {
	ip = clientIP(remote)
	t := gw.conns
	t.mu.Lock()
	reason := ""
	switch {
	case gw.isDraining():
		reason = "draining"
	case t.open >= gw.cfg.MaxConnections:
		reason = "max_connections"
	case t.perIP[ip] >= gw.cfg.MaxConnectionsPerIP:
		reason = "max_connections_per_ip"
	default:
		t.open++
		t.perIP[ip]++
	}
	t.mu.Unlock()
	if reason == "" {
		return ip, true
	}
	gw.metrics.ConnsRefused.WithLabelValues(reason).Inc()
	now := time.Now().UnixNano()
	last := t.lastRefusalLog.Load()
	if now-last < int64(refusalLogEvery) || !t.lastRefusalLog.CompareAndSwap(last, now) {
		t.refusedQuiet.Add(1)
		return ip, false
	}
	gw.log.Warn().Str("remote", remote.String()).Str("reason", reason).
		Int("max_connections", gw.cfg.MaxConnections).Int("max_connections_per_ip", gw.cfg.MaxConnectionsPerIP).
		Int64("refused_since_last_line", t.refusedQuiet.Swap(0)).Msg("connection refused: connection limit reached or draining")
	return ip, false
}

// releaseConn undoes a successful admitConn.
func (gw *Gateway) releaseConn(ip string) {
	t := gw.conns
	t.mu.Lock()
	t.open--
	if t.perIP[ip]--; t.perIP[ip] <= 0 {
		delete(t.perIP, ip)
	}
	t.mu.Unlock()
}

func (t *connTable) add(s *session) {
	t.mu.Lock()
	t.sessions[s] = struct{}{}
	t.mu.Unlock()
}

func (t *connTable) remove(s *session) {
	t.mu.Lock()
	delete(t.sessions, s)
	t.mu.Unlock()
}

// reap runs until the gateway stops, closing connections that the idle and
// write timeouts condemn and nudging paused ones to look at their output.
func (gw *Gateway) reap() {
	tick := time.NewTicker(reaperInterval)
	defer tick.Stop()
	var batch []*session
	for {
		select {
		case <-gw.ctx.Done():
			return
		case <-tick.C:
		}
		batch = batch[:0]
		gw.conns.mu.Lock()
		for s := range gw.conns.sessions {
			batch = append(batch, s)
		}
		gw.conns.mu.Unlock()
		now := time.Now()
		for _, s := range batch {
			s.reapCheck(now)
		}
		clear(batch)
	}
}
