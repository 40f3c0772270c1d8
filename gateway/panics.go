package gateway

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// notePanic counts a recovered panic in disgw_panics_recovered_total and
// starts its error log line on log, with the value and the stack; the
// caller adds what it was doing and sends the line.
func (gw *Gateway) notePanic(log zerolog.Logger, v any) *zerolog.Event {
	gw.metrics.Panics.Inc()
	return log.Error().Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack()))
}

// recoverPanic, deferred first thing in every goroutine the gateway starts,
// keeps a panic there from taking the process and every other client down:
// it logs and counts the panic, then runs cleanup (nil for none), which
// must complete whatever the goroutine owed others.
func (gw *Gateway) recoverPanic(what string, cleanup func()) {
	v := recover()
	if v == nil {
		return
	}
	gw.notePanic(gw.log, v).Str("goroutine", what).Msg("goroutine panicked; recovered")
	if cleanup != nil {
		cleanup()
	}
}

// errTransportPanicked is a listener's outcome when its transport panicked.
var errTransportPanicked = errors.New("gateway: listener transport panicked")

// goSafe runs fn on a new goroutine guarded by recoverPanic.
func (gw *Gateway) goSafe(what string, fn func()) {
	go func() {
		defer gw.recoverPanic(what, nil)
		fn()
	}()
}
