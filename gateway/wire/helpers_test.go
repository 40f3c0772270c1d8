package wire

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testGateway is what the handlers of a test server are bound to.
type testGateway struct{}

// testDeps are Deps for a server of tenant names whose handlers are reg's,
// with the gateway's defaults where cfg leaves budgets unset, metrics
// registered nowhere and no credential checks.
func testDeps(t *testing.T, cfg Config, reg *Registry[*testGateway, string]) Deps[string] {
	t.Helper()
	if cfg.MaxFrameBytes == 0 {
		cfg.MaxFrameBytes = 100 << 20
	}
	if cfg.MaxInflightBytesPerConn == 0 {
		cfg.MaxInflightBytesPerConn = 64 << 20
	}
	if cfg.MaxInflightBytes == 0 {
		cfg.MaxInflightBytes = 512 << 20
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections, cfg.MaxConnectionsPerIP = 100, 100
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout, cfg.WriteTimeout, cfg.TLSHandshakeTimeout = time.Minute, time.Minute, time.Minute
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 20 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	counter := func(name string) prometheus.Counter { return prometheus.NewCounter(prometheus.CounterOpts{Name: name}) }
	vec := func(name, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name}, []string{label})
	}
	return Deps[string]{
		Config:   cfg,
		Ctx:      ctx,
		Log:      zerolog.Nop(),
		Handlers: reg.Bind(&testGateway{}),
		Metrics: Metrics{
			Connections:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "connections"}, []string{"listener"}),
			Requests:     vec("requests", "api"),
			BadRequests:  counter("bad_requests"),
			Backpressure: counter("backpressure"),
			BytesIn:      counter("bytes_in"),
			BytesOut:     counter("bytes_out"),
			AuthFailures: vec("auth_failures", "mechanism"),
			FileSent:     counter("file_sent"),
			FileRead:     counter("file_read"),
			ConnsRefused: vec("refused", "reason"),
			ConnsClosed:  vec("closed", "reason"),
		},
		Panics:   &Panics{Log: zerolog.Nop(), Count: counter("panics")},
		Inflight: new(atomic.Int64),
		Release:  func(string) {},
		Passthrough: func(context.Context, string, string) (string, error) {
			return "", errors.New("no passthrough in tests")
		},
		KafkaCode: func(error) int16 { return -1 },
		Answered:  func(string, string, kmsg.Request, time.Time) {},
		Draining:  func() bool { return false },
	}
}
