package wire

import (
	"errors"
	"fmt"
	"runtime/debug"

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
	go func() {
		defer p.Recover(what, nil)
		fn()
	}()
}
