package wire

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Panics recovers the panics of the gateway's goroutines, the
// connections' and the gateway's own: a panic is a bug, and one client's
// must not take the process and every other client down.
type Panics struct {
	// Log gets a line for each panic, Count counts it
	// (disgw_panics_recovered_total).
	Log   zerolog.Logger
	Count prometheus.Counter
	// running counts the goroutines Go started that have not returned,
	// which a gateway that stops waits for (Wait).
	running atomic.Int64
}

// note counts a recovered panic in disgw_panics_recovered_total and
// starts its error log line on log, with the value and the stack; the
// caller adds what it was doing and sends the line.
func (p *Panics) note(log zerolog.Logger, v any) *zerolog.Event {
	p.Count.Inc()
	return log.Error().Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack()))
}

// Recover, deferred first thing in every goroutine the gateway starts,
// keeps a panic there from taking the process and every other client down:
// it logs and counts the panic, then runs cleanup (nil for none), which
// must complete whatever the goroutine owed others.
func (p *Panics) Recover(what string, cleanup func()) {
	v := recover()
	if v == nil {
		return
	}
	p.note(p.Log, v).Str("goroutine", what).Msg("goroutine panicked; recovered")
	if cleanup != nil {
		cleanup()
	}
}

// errTransportPanicked is a listener's outcome when its transport panicked.
var errTransportPanicked = errors.New("gateway: listener transport panicked")

// Go runs fn on a new goroutine guarded by Recover.
func (p *Panics) Go(what string, fn func()) {
	p.running.Add(1)
	go func() {
		defer p.running.Add(-1)
		defer p.Recover(what, nil)
		fn()
	}()
}

// waitPoll is how often Wait looks at the goroutines still running.
const waitPoll = 5 * time.Millisecond

// Wait returns once every goroutine Go started has returned, or ctx is
// done first; it reports how many were still running then. A gateway
// that stops waits, once its context is cancelled, so that nothing it
// started outlives it: a goroutine still logging after Close would write
// to a logger its owner no longer expects lines on.
func (p *Panics) Wait(ctx context.Context) int64 {
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	for {
		n := p.running.Load()
		if n == 0 {
			return 0
		}
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
		}
	}
}
