// Package wire is the gateway's connections (docs/design.md §3): the
// listeners and their transports (gnet for plain TCP, crypto/tls for SSL
// and SASL_SSL), the per-connection pipeline that decodes requests, starts
// their handlers in request order and writes the responses back in it, the
// handler registry whose ranges ApiVersions answers with, the frames and
// buffer pools responses go out in (Fetch's zero-copy frames among them),
// connection limits, timeouts and logs, panic recovery, and the SASL state
// of a connection. The handlers, one per API key, are the gateway's; they
// register with a Registry and get a Call, never the connection. What the
// connections need of the gateway comes in Deps, so that wire never imports
// it; docs/design.md §11 has its locks.
package wire

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// Config holds the gateway settings the connections read; the gateway's
// Config documents each.
type Config struct {
	// Listeners are every listener Listen binds, in order.
	Listeners []Listener

	MaxFrameBytes           int32
	MaxInflightBytesPerConn int64
	MaxInflightBytes        int64
	MaxConnections          int
	MaxConnectionsPerIP     int
	IdleTimeout             time.Duration
	WriteTimeout            time.Duration
	TLSHandshakeTimeout     time.Duration
	RequestTimeout          time.Duration

	SASLPassthrough       bool
	AuthFailuresPerMinute int
	AuthFailureBurst      int
	SignInChecksPerSecond int
	// PeerSecret is the secret of the gateway's peers, nil without
	// peers: another gateway signs in with it (cluster.MechPeer).
	PeerSecret []byte
}

// maxBufferedBytes is how much unconsumed input a paused connection may hold.
func (c *Config) maxBufferedBytes() int {
	return int(c.MaxFrameBytes) + int(c.MaxInflightBytesPerConn)
}

// Metrics are the series the connections count in; the gateway's metrics
// package documents each.
type Metrics struct {
	Connections  *prometheus.GaugeVec
	Requests     *prometheus.CounterVec
	BadRequests  prometheus.Counter
	Backpressure prometheus.Counter
	BytesIn      prometheus.Counter
	BytesOut     prometheus.Counter
	AuthFailures *prometheus.CounterVec
	FileSent     prometheus.Counter
	FileRead     prometheus.Counter
	ConnsRefused *prometheus.CounterVec
	ConnsClosed  *prometheus.CounterVec
}

// Deps is what the connections need from the gateway: their settings, the
// handlers, the shared in-flight budget, the tenants connections run as,
// the checks of credentials, and hooks for metrics, panics and shutdown.
// T is the gateway's tenant: whose DIS credentials a connection uses,
// handed to its handlers and back to the gateway, never looked into. Every
// field must be set, except the credential checks a configuration never
// calls.
type Deps[T any] struct {
	Config

	// Ctx ends when the gateway stops: the reaper, TLS handshakes and
	// every connection's context derive from it.
	Ctx context.Context
	Log zerolog.Logger
	// Handlers serve the requests (Registry.Bind).
	Handlers *Handlers[T]
	Metrics  Metrics
	Panics   *Panics
	// Inflight is the bytes held against MaxInflightBytes, which the
	// gateway's decompressed produce data counts against too.
	Inflight *atomic.Int64

	// Tenant is the gateway's own; every connection starts as it.
	Tenant T
	// Release ends one connection's hold on a tenant: at close, and when a
	// passthrough sign-in replaces it.
	Release func(tn T)
	// Passthrough returns the tenant of a DIS access key and secret key
	// after DIS accepted them, held for one connection (Release ends it).
	// An error wrapping ErrRefused means DIS refused the keys; one from
	// Busy refuses for want of room.
	Passthrough func(ctx context.Context, accessKey, secretKey string) (T, error)
	// CheckPlain verifies a SASL/PLAIN message against the gateway's
	// users and returns the user it names; SCRAM returns a SCRAM server
	// for mechanism over them. Neither is called with SASLPassthrough.
	CheckPlain func(msg []byte) (user string, err error)
	SCRAM      func(mechanism string) (*scram.Server, error)

	// KafkaCode is the Kafka error code for an error a handler returned
	// that is not a kerr.Error (docs/errors.md).
	KafkaCode func(err error) int16
	// Answered counts an answered request of API api, run as tn, that
	// began at began.
	Answered func(api string, tn T, req kmsg.Request, began time.Time)
	// Draining reports whether the gateway is shutting down: new
	// connections are refused, and a closed one's reason is "shutdown".
	Draining func() bool
}
