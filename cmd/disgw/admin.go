package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

// readiness is what /readyz asks: the gateway's own verdict (DIS answers
// its periodic probe, not draining), or, for the embedded DIS server alone,
// whether it answers its own API; and, with an embedded DIS, whether it
// still takes writes (checkWrites).
func (r *running) readiness(dis disclient.API) func(context.Context) (bool, string) {
	var ready func(context.Context) (bool, string)
	if r.gw != nil {
		ready = func(context.Context) (bool, string) { return r.gw.Ready() }
	} else {
		ready = func(ctx context.Context) (bool, string) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, err := dis.ListStreams(ctx, 1, ""); err != nil {
				return false, "DIS unreachable: " + err.Error()
			}
			return true, ""
		}
	}
	if r.local == nil {
		return ready
	}
	return checkWrites(ready, r.local.WritesStopped, func() []string {
		_, known := r.local.LogDamage()
		return known
	})
}

// checkWrites makes ready unready while stopped reports why the embedded
// DIS takes no more writes (a failed fsync of its record log, a failed
// segment roll): it answers every other call, so the DIS probe alone would
// not notice, and only a restart brings writes back. Damage in its record
// log (damaged) is a detail of a ready answer: every other record is
// served, and a restart would not mend it; an operator moves readers past
// it (docs/dis-embedded.md, Damaged records).
func checkWrites(ready func(context.Context) (bool, string), stopped func() error, damaged func() []string) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		if err := stopped(); err != nil {
			return false, "embedded DIS takes no writes until restarted: " + err.Error()
		}
		ok, reason := ready(ctx)
		if d := damaged(); ok && len(d) > 0 {
			reason = "embedded DIS record log damaged: " + strings.Join(d, "; ")
		}
		return ok, reason
	}
}

// adminHandler routes health, metrics and, with pprof, Go's profiling
// handlers; without it /debug/pprof/ is not served at all. The command
// line is never served: it shows whatever secret was passed as a flag to
// anyone who reaches the admin listener. /healthz is
// about the process alone; /readyz answers 503 with ready's reason.
func adminHandler(reg *prometheus.Registry, ready func(context.Context) (bool, string), pprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ok, reason := ready(r.Context())
		if !ok {
			http.Error(w, reason, http.StatusServiceUnavailable)
			return
		}
		if reason != "" {
			reason += "\n"
		}
		_, _ = w.Write([]byte("ok\n" + reason))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if pprof {
		mux.HandleFunc("/debug/pprof/", httppprof.Index)
		mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	}
	return mux
}

// startAdmin serves the admin handler on addr, and returns the address
// bound.
func startAdmin(addr string, h http.Handler, log zerolog.Logger) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("admin listener: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("admin server stopped")
		}
	}()
	log.Info().Str("listen", ln.Addr().String()).Msg("admin HTTP started")
	return hs, ln.Addr().String(), nil
}
