package wire

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/protocol"
)

// handler serves one Kafka API key over the version range it really
// implements. Each API key lives in a file of the gateway's own (named
// after the key, as 18_api_versions.go), which registers its handler with
// Register; ApiVersions answers from this table, so the advertised ranges
// cannot drift from the code.
type handler[T any] struct {
	name     string
	key      int16
	min, max int16
	// start runs on the session's dispatcher, in request order. It returns
	// the response, or the rest of the work as a continuation the
	// dispatcher runs concurrently (docs/design.md §3).
	start func(ctx context.Context, r *Call[T]) (kmsg.Response, Continuation, error)
	// deadline bounds the whole handler; zero for handlers that never
	// call DIS, which run on the dispatcher without one.
	deadline func(r *Call[T]) time.Duration
	// errorResponse answers r with code in every part of the response
	// that mirrors the request, as a Kafka broker's error response does.
	errorResponse func(r *Call[T], code int16) kmsg.Response
}

// Continuation is the concurrent part of a handler: it runs on a goroutine
// of its own under the handler's deadline and returns the response (nil
// sends nothing, for acks=0 produce).
type Continuation func(ctx context.Context) (kmsg.Response, error)

// advertised reports whether a server with SASL listeners or without
// (sasl) serves h at all: the SASL APIs only exist on a gateway with a
// SASL listener.
func (h *handler[T]) advertised(sasl bool) bool {
	if h.key == kmsg.SASLHandshake.Int16() || h.key == kmsg.SASLAuthenticate.Int16() {
		return sasl
	}
	return true
}

// API is how the dispatcher serves one API key. Exactly one of Ordered,
// Concurrent and Staged is set; Errors is required, so that no key can
// lack an error response. G is what the handlers are bound to (the
// gateway), T its tenant.
type API[G, T any, Req kmsg.Request] struct {
	// Ordered handlers run on the dispatcher before the next request of
	// the connection starts: cheap ones that never call DIS, and those
	// whose outcome later requests depend on (SASL).
	Ordered func(g G, r *Call[T], req Req) (kmsg.Response, error)
	// Concurrent handlers run on a goroutine of their own under a
	// deadline; anything that calls DIS is one.
	Concurrent func(ctx context.Context, g G, r *Call[T], req Req) (kmsg.Response, error)
	// Staged handlers do their ordered part on the dispatcher (produce
	// queues its batches in request order there) and return either the
	// response or a continuation that waits concurrently. The ordered
	// part gets the deadline's context and must return promptly.
	Staged func(ctx context.Context, g G, r *Call[T], req Req) (kmsg.Response, Continuation, error)
	// Deadline bounds concurrent and staged handlers; nil means the
	// RequestTimeout.
	Deadline func(g G, req Req) time.Duration
	// Errors builds the error response to req carrying code.
	Errors func(req Req, code int16) kmsg.Response
}

// Registry is the handlers of every API key, each registered once, before
// any is bound to the G that serves them (Bind): the handler files register
// from their init functions.
type Registry[G, T any] struct {
	keys [kmsg.MaxKey + 1]*registered[G, T]
}

// registered is a handler not yet bound to its G.
type registered[G, T any] struct {
	name     string
	key      int16
	min, max int16
	bind     func(g G, h *handler[T])
}

// Register registers a for key over versions [min, max] in reg.
func Register[G, T any, Req kmsg.Request](reg *Registry[G, T], key, min, max int16, a API[G, T, Req]) {
	if reg.keys[key] != nil {
		panic(fmt.Sprintf("gateway: API key %d registered twice", key))
	}
	if kmax := kmsg.RequestForKey(key).MaxVersion(); max > kmax {
		panic(fmt.Sprintf("gateway: API key %d: version %d is beyond what kmsg knows (%d)", key, max, kmax))
	}
	set := 0
	for _, isSet := range []bool{a.Ordered != nil, a.Concurrent != nil, a.Staged != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 || a.Errors == nil {
		panic(fmt.Sprintf("gateway: API key %d needs exactly one way to run and an error response", key))
	}
	reg.keys[key] = &registered[G, T]{name: kmsg.NameForKey(key), key: key, min: min, max: max, bind: func(g G, h *handler[T]) {
		h.errorResponse = func(r *Call[T], code int16) kmsg.Response {
			return a.Errors(r.body.(Req), code)
		}
		switch {
		case a.Ordered != nil:
			h.deadline = func(*Call[T]) time.Duration { return 0 }
			h.start = func(_ context.Context, r *Call[T]) (kmsg.Response, Continuation, error) {
				resp, err := a.Ordered(g, r, r.body.(Req))
				return resp, nil, err
			}
		case a.Concurrent != nil:
			h.start = func(_ context.Context, r *Call[T]) (kmsg.Response, Continuation, error) {
				req := r.body.(Req)
				return nil, func(ctx context.Context) (kmsg.Response, error) { return a.Concurrent(ctx, g, r, req) }, nil
			}
		default:
			h.start = func(ctx context.Context, r *Call[T]) (kmsg.Response, Continuation, error) {
				return a.Staged(ctx, g, r, r.body.(Req))
			}
		}
		if h.deadline == nil {
			h.deadline = func(r *Call[T]) time.Duration {
				if a.Deadline != nil {
					return a.Deadline(g, r.body.(Req))
				}
				return r.s.srv.d.RequestTimeout
			}
		}
	}}
}

// Handlers are the registered handlers bound to the G that serves them:
// the dispatch table of a Server (Deps.Handlers).
type Handlers[T any] struct {
	keys [kmsg.MaxKey + 1]*handler[T]
}

// Bind binds every handler registered in reg to g.
func (reg *Registry[G, T]) Bind(g G) *Handlers[T] {
	hs := &Handlers[T]{}
	for key, e := range reg.keys {
		if e == nil {
			continue
		}
		h := &handler[T]{name: e.name, key: e.key, min: e.min, max: e.max}
		e.bind(g, h)
		hs.keys[key] = h
	}
	return hs
}

// Versions is what ApiVersions lists: every key served with its range, the
// SASL keys only with sasl (a SASL listener configured).
func (hs *Handlers[T]) Versions(sasl bool) []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, h := range hs.keys {
		if h == nil || !h.advertised(sasl) {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = h.key, h.min, h.max
		keys = append(keys, k)
	}
	return keys
}

// Versions is what this server's ApiVersions lists.
func (s *Server[T]) Versions() []kmsg.ApiVersionsResponseApiKey {
	return s.d.Handlers.Versions(s.sasl)
}

// apiVersionsUnsupported builds the v0 answer to an ApiVersions request at a
// version beyond ours.
func (s *Server[T]) apiVersionsUnsupported(hdr protocol.RequestHeader) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = s.Versions()
	hdr.Version = 0
	return protocol.AppendResponse(nil, hdr, resp)
}

// A handler's call context: what it may know of the connection its request
// came on, through these methods of the Call, never the session itself,
// which belongs to the dispatcher and the transport. The SASL handlers
// change the connection's authentication through methods of the Call in
// sasl.go.

// Tenant is the connection's tenant when the handler started: whose DIS
// credentials the handler uses, and what the request's latency series are
// labelled with, whatever a later re-authentication does.
func (r *Call[T]) Tenant() T { return r.tenant }

// Log is the connection's logger, which names the client's address.
func (r *Call[T]) Log() *zerolog.Logger { return &r.s.log }

// Listener is the listener the connection came in on, whose advertised
// address Metadata and FindCoordinator answer with.
func (r *Call[T]) Listener() *Bound { return r.s.lis }

// ConnContext is done when the connection closes: the bound of work that
// outlives the request's deadline, such as an acks=0 produce, which is never
// answered.
func (r *Call[T]) ConnContext() context.Context { return r.s.ctx }

// Principal is who the request runs as: User:<name> for a SASL client
// (with passthrough, the DIS access key), User:ANONYMOUS for PLAINTEXT and
// SSL clients, as Kafka names them. The dispatcher alone writes the SASL
// state, before it starts the requests that read it.
func (r *Call[T]) Principal() string {
	if r.s.auth.authenticated && r.s.auth.principal != "" {
		return "User:" + r.s.auth.principal
	}
	return authz.Anonymous
}

// Peer reports whether the client is another gateway, signed in with
// cluster.MechPeer: it may do what only brokers do, whatever the ACLs say.
func (r *Call[T]) Peer() bool { return r.s.auth.authenticated && r.s.auth.peer }

// ClientHost is the client's IP address as ACL hosts name it.
func (r *Call[T]) ClientHost() string {
	if host, _, err := net.SplitHostPort(r.s.remote); err == nil {
		return host
	}
	return r.s.remote
}

// RemoteHost is the client's address as DescribeGroups reports a member's.
func (r *Call[T]) RemoteHost() string { return r.s.remoteHost() }

// ClientID is the request's client id, "" when it has none.
func (r *Call[T]) ClientID() string {
	if r.hdr.ClientID != nil {
		return *r.hdr.ClientID
	}
	return ""
}

// API is the name of the request's API, as log lines name it.
func (r *Call[T]) API() string { return r.h.name }

// ErrorResponse is the request's API's error response carrying code, for a
// handler that refuses the whole request.
func (r *Call[T]) ErrorResponse(code int16) kmsg.Response { return r.h.errorResponse(r, code) }

// Notices are the warnings given once per connection, such as those for a
// producer without a producer id (conn_log.go).
func (r *Call[T]) Notices() *Notices { return &r.s.notices }
