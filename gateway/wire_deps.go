package gateway

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/wire"
)

// Listener is one Kafka listener (wire.Listener).
type Listener = wire.Listener

// SecurityProtocol is a Kafka listener's security protocol.
type SecurityProtocol = wire.SecurityProtocol

// The four Kafka security protocols.
const (
	Plaintext     = wire.Plaintext
	SSL           = wire.SSL
	SASLPlaintext = wire.SASLPlaintext
	SASLSSL       = wire.SASLSSL
)

// wireDeps is what gw's connections get of it: its settings, its handlers,
// its tenants and sign-in checks, and its metrics, panics and shutdown.
func (gw *Gateway) wireDeps() wire.Deps[*tenant] {
	cfg := &gw.cfg
	m := gw.metrics
	return wire.Deps[*tenant]{
		Config: wire.Config{
			Listeners:               cfg.listenerSpecs(),
			MaxFrameBytes:           cfg.MaxFrameBytes,
			MaxInflightBytesPerConn: cfg.MaxInflightBytesPerConn,
			MaxInflightBytes:        cfg.MaxInflightBytes,
			MaxConnections:          cfg.MaxConnections,
			MaxConnectionsPerIP:     cfg.MaxConnectionsPerIP,
			IdleTimeout:             cfg.IdleTimeout,
			WriteTimeout:            cfg.WriteTimeout,
			TLSHandshakeTimeout:     cfg.TLSHandshakeTimeout,
			RequestTimeout:          cfg.RequestTimeout,
			SASLPassthrough:         cfg.SASLPassthrough,
			AuthFailuresPerMinute:   cfg.AuthFailuresPerMinute,
			AuthFailureBurst:        cfg.AuthFailureBurst,
			SignInChecksPerSecond:   cfg.SignInChecksPerSecond,
			PeerSecret:              cfg.PeerSecret,
		},
		Ctx:      gw.ctx,
		Log:      gw.log,
		Handlers: handlers.Bind(gw),
		Metrics: wire.Metrics{
			Connections:  m.Connections,
			Requests:     m.Requests,
			BadRequests:  m.BadRequests,
			Backpressure: m.Backpressure,
			BytesIn:      m.BytesIn,
			BytesOut:     m.BytesOut,
			AuthFailures: m.AuthFailures,
			FileSent:     m.FileSent,
			FileRead:     m.FileRead,
			ConnsRefused: m.ConnsRefused,
			ConnsClosed:  m.ConnsClosed,
		},
		Panics:      gw.panics,
		Inflight:    &gw.inflight,
		Tenant:      gw.tenant,
		Release:     gw.releaseTenant,
		Passthrough: gw.passthroughTenant,
		CheckPlain:  cfg.SASL.checkPlain,
		SCRAM:       cfg.SASL.scramServer,
		KafkaCode:   kafkaCodeForDIS,
		Answered: func(api string, tn *tenant, req kmsg.Request, began time.Time) {
			m.Answered(api, tn.accessKey, req, began)
		},
		Draining: gw.isDraining,
	}
}
