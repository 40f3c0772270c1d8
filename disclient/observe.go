package disclient

import "context"

// RetryObserver learns of every attempt the Client sends again, with the
// error of the attempt that failed. It runs on the calling goroutine before
// the next attempt and must not block.
type RetryObserver func(err error)

type retryObserverKey struct{}

// WithRetryObserver returns a context whose calls report their retries to
// fn. Retries happen inside a call, where a decorator of API cannot see
// them; this is how the gateway counts them per operation.
func WithRetryObserver(ctx context.Context, fn RetryObserver) context.Context {
	return context.WithValue(ctx, retryObserverKey{}, fn)
}

// noteRetry tells ctx's observer, if any, that a call is sent again after
// err.
func noteRetry(ctx context.Context, err error) {
	if fn, ok := ctx.Value(retryObserverKey{}).(RetryObserver); ok {
		fn(err)
	}
}
