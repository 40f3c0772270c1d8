package gateway

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// handler serves one Kafka API key over the version range it really
// implements. Each API key lives in its own file (named after the key, as
// 18_api_versions.go), which registers its handler with regKey; ApiVersions
// answers from this table, so the advertised ranges cannot drift from the code.
type handler struct {
	name     string
	key      int16
	min, max int16
	// start runs on the session's dispatcher, in request order. It returns
	// the response, or the rest of the work as a continuation the
	// dispatcher runs concurrently (docs/design.md §3).
	start func(ctx context.Context, gw *Gateway, r *request) (kmsg.Response, continuation, error)
	// deadline bounds the whole handler; zero for handlers that never
	// call DIS, which run on the dispatcher without one.
	deadline func(gw *Gateway, r *request) time.Duration
	// errorResponse answers r with code in every part of the response
	// that mirrors the request, as a Kafka broker's error response does.
	errorResponse func(r *request, code int16) kmsg.Response
}

// continuation is the concurrent part of a handler: it runs on a goroutine
// of its own under the handler's deadline and returns the response (nil
// sends nothing, for acks=0 produce).
type continuation func(ctx context.Context) (kmsg.Response, error)

var handlers [kmsg.MaxKey + 1]*handler

// advertised reports whether gw serves h at all: the SASL APIs only exist
// on a gateway with a SASL listener.
func (h *handler) advertised(gw *Gateway) bool {
	if h.key == apiKeySaslHandshake || h.key == apiKeySaslAuthenticate {
		return gw.saslEnabled()
	}
	return true
}

// api is how the dispatcher serves one API key. Exactly one of ordered,
// concurrent and staged is set; errors is required, so that no key can
// lack an error response.
type api[Req kmsg.Request] struct {
	// ordered handlers run on the dispatcher before the next request of
	// the connection starts: cheap ones that never call DIS, and those
	// whose outcome later requests depend on (SASL).
	ordered func(gw *Gateway, r *request, req Req) (kmsg.Response, error)
	// concurrent handlers run on a goroutine of their own under a
	// deadline; anything that calls DIS is one.
	concurrent func(ctx context.Context, gw *Gateway, r *request, req Req) (kmsg.Response, error)
	// staged handlers do their ordered part on the dispatcher (produce
	// queues its batches in request order there) and return either the
	// response or a continuation that waits concurrently. The ordered
	// part gets the deadline's context and must return promptly.
	staged func(ctx context.Context, gw *Gateway, r *request, req Req) (kmsg.Response, continuation, error)
	// deadline bounds concurrent and staged handlers; nil means the
	// gateway's RequestTimeout.
	deadline func(gw *Gateway, req Req) time.Duration
	// errors builds the error response to req carrying code.
	errors func(req Req, code int16) kmsg.Response
}

// regKey registers a for key over versions [min, max].
func regKey[Req kmsg.Request](key, min, max int16, a api[Req]) {
	if handlers[key] != nil {
		panic(fmt.Sprintf("gateway: API key %d registered twice", key))
	}
	if kmax := kmsg.RequestForKey(key).MaxVersion(); max > kmax {
		panic(fmt.Sprintf("gateway: API key %d: version %d is beyond what kmsg knows (%d)", key, max, kmax))
	}
	set := 0
	for _, isSet := range []bool{a.ordered != nil, a.concurrent != nil, a.staged != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 || a.errors == nil {
		panic(fmt.Sprintf("gateway: API key %d needs exactly one way to run and an error response", key))
	}
	h := &handler{
		name: kmsg.NameForKey(key),
		key:  key,
		min:  min,
		max:  max,
		errorResponse: func(r *request, code int16) kmsg.Response {
			return a.errors(r.body.(Req), code)
		},
	}
	switch {
	case a.ordered != nil:
		h.deadline = func(*Gateway, *request) time.Duration { return 0 }
		h.start = func(_ context.Context, gw *Gateway, r *request) (kmsg.Response, continuation, error) {
			resp, err := a.ordered(gw, r, r.body.(Req))
			return resp, nil, err
		}
	case a.concurrent != nil:
		h.start = func(_ context.Context, gw *Gateway, r *request) (kmsg.Response, continuation, error) {
			req := r.body.(Req)
			return nil, func(ctx context.Context) (kmsg.Response, error) { return a.concurrent(ctx, gw, r, req) }, nil
		}
	default:
		h.start = func(ctx context.Context, gw *Gateway, r *request) (kmsg.Response, continuation, error) {
			return a.staged(ctx, gw, r, r.body.(Req))
		}
	}
	if h.deadline == nil {
		h.deadline = func(gw *Gateway, r *request) time.Duration {
			if a.deadline != nil {
				return a.deadline(gw, r.body.(Req))
			}
			return gw.cfg.RequestTimeout
		}
	}
	handlers[key] = h
}

// A handler's call context: what it may know of the connection its request
// came on, through these methods of the request (and r.tenant), never the
// session itself, which belongs to the dispatcher and the transport. The
// SASL handlers change the connection's authentication through methods of
// the request in sasl.go.

// log is the connection's logger, which names the client's address.
func (r *request) log() *zerolog.Logger { return &r.s.log }

// listener is the listener the connection came in on, whose advertised
// address Metadata and FindCoordinator answer with.
func (r *request) listener() *listener { return r.s.lis }

// connContext is done when the connection closes: the bound of work that
// outlives the request's deadline, such as an acks=0 produce, which is never
// answered.
func (r *request) connContext() context.Context { return r.s.ctx }

// principal is who the request runs as: User:<name> for a SASL client
// (with passthrough, the DIS access key), User:ANONYMOUS for PLAINTEXT and
// SSL clients, as Kafka names them. The dispatcher alone writes the SASL
// state, before it starts the requests that read it.
func (r *request) principal() string {
	if r.s.auth.authenticated && r.s.auth.principal != "" {
		return "User:" + r.s.auth.principal
	}
	return authz.Anonymous
}

// clientHost is the client's IP address as ACL hosts name it.
func (r *request) clientHost() string {
	if host, _, err := net.SplitHostPort(r.s.remote); err == nil {
		return host
	}
	return r.s.remote
}
