package gateway

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/wire"
)

// Each API key lives in its own file (named after the key, as
// 18_api_versions.go), which registers its handler with regKey in the
// registry the wire package keeps; ApiVersions answers from it, so the
// advertised ranges cannot drift from the code.

// request is a handler's call context: its request, what it may know of
// the connection it came on, and the tenant it runs as (wire.Call).
type request = wire.Call[*tenant]

// api is how the dispatcher serves one API key (wire.API).
type api[Req kmsg.Request] = wire.API[*Gateway, *tenant, Req]

// handlers holds every API key's handler; New binds them to its gateway.
var handlers wire.Registry[*Gateway, *tenant]

// regKey registers a for key over versions [min, max].
func regKey[Req kmsg.Request](key, min, max int16, a api[Req]) {
	wire.Register(&handlers, key, min, max, a)
}
