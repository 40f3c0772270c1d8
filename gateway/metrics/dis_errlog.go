package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

// disErrorLog writes the log line of failed DIS calls (docs/operations.md,
// "Logs"): at most one per operation and code per disErrorLogEvery, the
// next one counting the calls left out, so a DIS outage costs a line per
// operation and interval however many calls fail. Failures that mean DIS
// or the way to it is in trouble (no answer, 5xx, throttling, refused
// credentials) are warnings; answers that are a normal part of serving
// Kafka clients (a stream or checkpoint that does not exist yet, a cursor
// to renew) are debug, so info stays quiet under normal load. The line
// carries DIS's code and message, never a request: no credentials.
type disErrorLog struct {
	log zerolog.Logger

	mu   sync.Mutex
	seen map[disErrorKey]*disErrorSeen
}

type disErrorKey struct{ op, code string }

// disErrorSeen is under disErrorLog.mu.
type disErrorSeen struct {
	logged time.Time
	quiet  int64 // failures since the last line
}

// disErrorLogEvery is the least time between two lines for one operation
// and code.
const disErrorLogEvery = 30 * time.Second

// maxDISErrorKeys bounds the (operation, code) pairs remembered; past it
// the memory starts over, which costs at most one extra line per pair.
const maxDISErrorKeys = 1024

func newDISErrorLog(log zerolog.Logger) *disErrorLog {
	return &disErrorLog{log: log, seen: make(map[disErrorKey]*disErrorSeen)}
}

// note logs the failure err of a call of op, rate-limited. A call the
// caller cancelled (its client went away) is not a DIS error.
func (l *disErrorLog) note(op string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	code := disclient.ErrorCode(err)
	if code == "" {
		code = "error"
	}
	key := disErrorKey{op, code}
	now := time.Now()
	l.mu.Lock()
	s := l.seen[key]
	if s == nil {
		if len(l.seen) >= maxDISErrorKeys {
			clear(l.seen)
		}
		s = &disErrorSeen{}
		l.seen[key] = s
	} else if now.Sub(s.logged) < disErrorLogEvery {
		s.quiet++
		l.mu.Unlock()
		return
	}
	quiet := s.quiet
	s.logged, s.quiet = now, 0
	l.mu.Unlock()
	e := l.log.Debug()
	if disTrouble(err) {
		e = l.log.Warn()
	}
	e.Str("operation", op).Str("dis_code", code).Err(err).Int64("failures_not_logged", quiet).
		Dur("log_interval", disErrorLogEvery).Msg("DIS call failed")
}

// disAuthStatus is the HTTP status DIS refuses a signature or token with
// (DIS.4100 and the other authorization codes).
const disAuthStatus = 441

// disTrouble reports whether err says DIS, or the way to it, is in
// trouble rather than answering a request it does not take.
func disTrouble(err error) bool {
	var e *disclient.Error
	if !errors.As(err, &e) {
		return true // no DIS answer at all: network, timeout
	}
	return e.Status >= 500 || e.Status == 401 || e.Status == 403 || e.Status == disAuthStatus || isThrottleErr(err)
}
