package wire

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Wait counts a goroutine Go started until it returns, also when it
// panicked, and gives up when its context ends.
func TestPanicsWait(t *testing.T) {
	p := &Panics{Log: zerolog.Nop(), Count: prometheus.NewCounter(prometheus.CounterOpts{Name: "panics"})}
	release := make(chan struct{})
	p.Go("blocked", func() { <-release })
	p.Go("panics", func() { panic("boom") })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if n := p.Wait(ctx); n != 1 {
		t.Fatalf("Wait with one goroutine blocked: %d still running, want 1", n)
	}
	close(release)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n := p.Wait(ctx); n != 0 {
		t.Fatalf("Wait after the goroutine was released: %d still running", n)
	}
}
