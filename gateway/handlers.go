package gateway

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler serves one Kafka API key over the version range it really
// implements. Each API key lives in its own file (named after the key, as
// 18_api_versions.go), which registers its handler with regKey; ApiVersions
// answers from this table, so the advertised ranges cannot drift from the code.
type handler struct {
	name     string
	key      int16
	min, max int16
	serve    func(gw *Gateway, r *request)
}

var handlers [kmsg.MaxKey + 1]*handler

// advertised reports whether gw serves h at all: the SASL APIs only exist
// on a gateway with a SASL listener.
func (h *handler) advertised(gw *Gateway) bool {
	if h.key == apiKeySaslHandshake || h.key == apiKeySaslAuthenticate {
		return gw.saslEnabled()
	}
	return true
}

// regKey registers fn for key over versions [min, max]. fn must call
// r.respond exactly once, from any goroutine; it runs on the session's
// dispatcher, in request order, so work that blocks for long belongs in a
// goroutine of its own.
func regKey[Req kmsg.Request](key, min, max int16, fn func(gw *Gateway, r *request, req Req)) {
	if handlers[key] != nil {
		panic(fmt.Sprintf("gateway: API key %d registered twice", key))
	}
	if kmax := kmsg.RequestForKey(key).MaxVersion(); max > kmax {
		panic(fmt.Sprintf("gateway: API key %d: version %d is beyond what kmsg knows (%d)", key, max, kmax))
	}
	handlers[key] = &handler{
		name: kmsg.NameForKey(key),
		key:  key,
		min:  min,
		max:  max,
		serve: func(gw *Gateway, r *request) {
			fn(gw, r, r.body.(Req))
		},
	}
}
