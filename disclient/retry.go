package disclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"
)

// The defaults of a zero RetryPolicy: six sends spread over about three
// seconds at most, which rides out a throttled second of a DIS partition
// without holding a Kafka request much longer than its usual timeout.
const (
	defaultMaxAttempts = 6
	defaultBaseBackoff = 50 * time.Millisecond
	defaultMaxBackoff  = 2 * time.Second
)

// RetryPolicy bounds how often and how patiently a failed request is sent
// again. A zero field takes its default (6 attempts, 50ms base, 2s cap).
// What a partition's traffic control refused (DIS.4303) waits a steady
// BaseBackoff/2 to BaseBackoff instead (steadyBackoff).
//
// Before attempt n+1 the client waits a duration drawn uniformly from
// [0, min(MaxBackoff, BaseBackoff*2^(n-1))] ("full jitter"), so that many
// writers throttled at the same moment do not all come back at the same
// moment. It never waits past the context deadline: when the drawn wait would
// end after it, the client gives up at once and returns the last error.
type RetryPolicy struct {
	// MaxAttempts counts every send, the first included; 1 disables retries.
	MaxAttempts int
	// BaseBackoff bounds the first wait; the bound doubles per attempt.
	BaseBackoff time.Duration
	// MaxBackoff caps the bound; it is raised to BaseBackoff if lower.
	MaxBackoff time.Duration
}

// withDefaults fills zero fields and rejects negative ones.
func (p RetryPolicy) withDefaults() (RetryPolicy, error) {
	if p.MaxAttempts < 0 || p.BaseBackoff < 0 || p.MaxBackoff < 0 {
		return p, fmt.Errorf("disclient: negative value in RetryPolicy %+v", p)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.BaseBackoff == 0 {
		p.BaseBackoff = defaultBaseBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = defaultMaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.BaseBackoff)
	return p, nil
}

// backoff draws the wait that follows the given attempt (1-based).
func (p RetryPolicy) backoff(attempt int) time.Duration {
	bound := p.BaseBackoff
	for i := 1; i < attempt && bound < p.MaxBackoff; i++ {
		bound *= 2
	}
	bound = min(bound, p.MaxBackoff)
	return time.Duration(rand.Int64N(int64(bound) + 1))
}

// steadyBackoff draws the wait before sending again what a partition's
// traffic control refused (DIS.4303): uniformly from [BaseBackoff/2,
// BaseBackoff], whatever the attempt. A partition's quota refills at a
// steady rate, so a wait that doubles only leaves it unused: with records
// of about 1 MB against a 1 MB/s partition the doubling waits left a tenth
// of the partition's throughput unused (docs/errors.md).
func (p RetryPolicy) steadyBackoff() time.Duration {
	half := p.BaseBackoff / 2
	return half + time.Duration(rand.Int64N(int64(p.BaseBackoff-half)+1))
}

// wait sleeps before the send that follows attempt: steadyBackoff when the
// partition's traffic control refused it, else backoff. It reports false,
// without sleeping, when the sleep would end past ctx's deadline, and false
// as soon as ctx is done.
func (p RetryPolicy) wait(ctx context.Context, attempt int, trafficControl bool) (time.Duration, bool) {
	var d time.Duration
	if trafficControl {
		d = p.steadyBackoff()
	} else {
		d = p.backoff(attempt)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return d, false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return d, false
	case <-timer.C:
		return d, true
	}
}

// idempotency tells the retry loop what sending a request twice may cause.
type idempotency uint8

const (
	// idempotent requests change nothing when repeated (reads, deletes), or
	// fail harmlessly (a repeated create answers "exists").
	idempotent idempotency = iota
	// writesRecords requests append records: repeating one that DIS may have
	// carried out writes its records twice.
	writesRecords
)

// failure classifies why an attempt failed, which decides whether another
// attempt is safe.
type failure uint8

const (
	// failNone: the attempt succeeded.
	failNone failure = iota
	// failFinal: no retry can help (bad request, cancelled context, a 2xx
	// body that is not the JSON expected).
	failFinal
	// failDial: no connection could be opened, so nothing reached DIS.
	failDial
	// failSent: the exchange broke after the request may have been sent.
	failSent
	// failAnswer: DIS answered with an error status; the error is an *Error.
	failAnswer
)

// classifySendError tells a connection that never opened from one that broke
// midway, and both from the caller giving up.
func classifySendError(ctx context.Context, err error) failure {
	if ctx.Err() != nil {
		return failFinal
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return failDial
	}
	return failSent
}

// retries reports whether an attempt that failed with class f and error err
// may be sent again.
func (i idempotency) retries(f failure, err error) bool {
	switch f {
	case failDial:
		return true
	case failSent:
		return i == idempotent
	case failAnswer:
		var e *Error
		if !errors.As(err, &e) {
			return false
		}
		if i == idempotent {
			return e.Retriable()
		}
		return refusedUnwritten(e)
	default:
		return false
	}
}

// refusedUnwritten reports whether DIS turned a whole PutRecords request away
// before writing anything: rate limiting (HTTP 429, DIS.4303, DIS.4305) or
// an unavailable service (HTTP 503). A 500 gives no such promise.
func refusedUnwritten(e *Error) bool {
	return e.Status == 429 || e.Status == 503 ||
		e.Code == CodeTrafficControl || e.Code == CodeTooManyRequests
}
