package wire

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/disgw/disgw/protocol"
)

// connLog is what a connection's open and close log lines say
// (docs/operations.md, "Logs"): one info line each, so that a normal load
// of long-lived client connections keeps the info level quiet, and the
// close line alone tells who it was, how long it stayed, how much it moved
// and why it ended.
type connLog struct {
	opened   time.Time
	clientID atomic.Pointer[string] // the first request's client_id
	in, out  atomic.Int64           // frame bytes received and sent
	reason   atomic.Pointer[string] // why the gateway closed it; nil: the client did, or the network
}

// maxLoggedClientID bounds the client id a log line carries: the client
// chooses it, up to 32 KiB.
const maxLoggedClientID = 256

// Reasons the gateway closes a connection, in the close line and, for the
// timeouts and budgets, disgw_connections_closed_total.
const (
	closeIdle            = "idle"
	closeWriteTimeout    = "write_timeout"
	closeInflightBudget  = "inflight_budget"
	closeBadRequest      = "bad_request"
	closeUnauthenticated = "unauthenticated"
	closeShutdown        = "shutdown"
	closeClient          = "client"
)

// logOpen starts s's connection log with the open line.
func (s *session[T]) logOpen() {
	s.conn.opened = time.Now()
	s.log.Info().Str("listener", s.lis.name()).Msg("connection opened")
}

// noteRequest counts a request frame of size bytes (its size prefix
// included) and remembers the client id of the first request.
func (s *session[T]) noteRequest(size int64, hdr *protocol.RequestHeader) {
	s.conn.in.Add(size)
	if s.conn.clientID.Load() == nil && hdr.ClientID != nil {
		id := *hdr.ClientID
		if len(id) > maxLoggedClientID {
			id = id[:maxLoggedClientID]
		}
		s.conn.clientID.CompareAndSwap(nil, &id)
	}
}

// closeReason records why the gateway closes s; the first reason stays.
func (s *session[T]) closeReason(reason string) {
	s.conn.reason.CompareAndSwap(nil, &reason)
}

// logClose writes the close line once the connection is gone.
func (s *session[T]) logClose() {
	reason := closeClient
	if r := s.conn.reason.Load(); r != nil {
		reason = *r
	} else if s.srv.d.Draining() {
		reason = closeShutdown
	}
	e := s.log.Info().Str("listener", s.lis.name())
	if id := s.conn.clientID.Load(); id != nil {
		e = e.Str("client_id", *id)
	}
	e.Dur("duration", time.Since(s.conn.opened)).Int64("bytes_in", s.conn.in.Load()).
		Int64("bytes_out", s.conn.out.Load()).Str("reason", reason).Msg("connection closed")
}

// maxNotices bounds a Notices set, so that producers minting ids, or
// writing many partitions, cannot grow it without limit; past it the set
// starts again, and the notices it forgot are given once more.
const maxNotices = 4096

// Notices is a set of warnings already given, so that one is logged once
// (per producer and partition, say) rather than once per record; its zero
// value is empty and ready.
type Notices struct {
	mu   sync.Mutex
	seen map[any]struct{}
}

// First reports whether n, a comparable value, is new, and remembers it.
func (s *Notices) First(n any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[n]; ok {
		return false
	}
	if s.seen == nil || len(s.seen) >= maxNotices {
		s.seen = make(map[any]struct{})
	}
	s.seen[n] = struct{}{}
	return true
}
