package metrics

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/disgw/disgw/disclient"
)

// DISClient decorates a tenant's DIS client with the DIS series: calls by
// operation and outcome, latency, retries (reported from inside the client
// through disclient.WithRetryObserver), throttling, per-record PutRecords
// errors and cursor refreshes, and has failed calls logged (dis_errlog.go).
// Every DIS call of the gateway goes through
// one, so no call site counts anything itself.
type DISClient struct {
	next disclient.API
	m    *Metrics
	// tenant is the tenant label of the calls and record errors series:
	// whose credentials the calls are signed with.
	tenant string
	ops    map[string]*disOp
	// Answered is set by every successful call: proof that DIS answers,
	// which spares the gateway's readiness probe its own call.
	Answered atomic.Bool
}

// disOp holds one operation's series, resolved once.
type disOp struct {
	name      string
	ok        prometheus.Counter
	seconds   prometheus.Observer
	retries   prometheus.Counter
	throttled prometheus.Counter
	observer  disclient.RetryObserver
}

// disOperations are the operations of disclient.API, by their method names.
var disOperations = []string{
	"CreateStream", "ListStreams", "DescribeStream", "DeleteStream", "UpdatePartitionCount", "UpdateStream", "UpdateStreamTags",
	"PutRecords", "GetCursor", "GetRecords",
	"CreateApp", "ListApps", "DescribeApp", "DeleteApp", "ConsumerState",
	"CommitCheckpoint", "GetCheckpoint", "DeleteCheckpoint",
}

// InstrumentDIS wraps dis, the DIS client of the tenant with this access
// key, so that its calls are counted in m.
func (m *Metrics) InstrumentDIS(dis disclient.API, accessKey string) *DISClient {
	tenant, _ := m.disTenants.value(accessKey, "")
	d := &DISClient{next: dis, m: m, tenant: tenant, ops: make(map[string]*disOp, len(disOperations))}
	for _, name := range disOperations {
		op := &disOp{
			name:      name,
			ok:        m.disCalls.WithLabelValues(tenant, name, "ok"),
			seconds:   m.disSeconds.WithLabelValues(name),
			retries:   m.disRetries.WithLabelValues(name),
			throttled: m.disThrottled.WithLabelValues(name),
		}
		op.observer = func(err error) {
			op.retries.Inc()
			if isThrottleErr(err) {
				op.throttled.Inc()
			}
		}
		d.ops[name] = op
	}
	return d
}

// isThrottleErr reports whether err is DIS refusing traffic for a limit.
func isThrottleErr(err error) bool {
	var e *disclient.Error
	return errors.As(err, &e) && (disclient.IsThrottle(e.Code) || e.Status == 429)
}

// start begins a call of op: the context carries the retry observer.
func (d *DISClient) start(ctx context.Context, name string) (context.Context, *disOp, time.Time) {
	op := d.ops[name]
	return disclient.WithRetryObserver(ctx, op.observer), op, time.Now()
}

// observe makes one call through the metrics: its latency, outcome and
// the client's retries.
func observe[T any](d *DISClient, ctx context.Context, name string, call func(context.Context) (T, error)) (T, error) {
	ctx, op, began := d.start(ctx, name)
	resp, err := call(ctx)
	d.done(op, began, err)
	return resp, err
}

// observeErr is observe for a call that answers only an error.
func observeErr(d *DISClient, ctx context.Context, name string, call func(context.Context) error) error {
	_, err := observe(d, ctx, name, func(ctx context.Context) (struct{}, error) { return struct{}{}, call(ctx) })
	return err
}

// done counts a finished call.
func (d *DISClient) done(op *disOp, began time.Time, err error) {
	op.seconds.Observe(time.Since(began).Seconds())
	if err == nil {
		op.ok.Inc()
		d.Answered.Store(true)
		return
	}
	d.m.disErrors.note(op.name, err)
	code := disclient.ErrorCode(err)
	if code == "" {
		code = "error"
	}
	d.m.disCalls.WithLabelValues(d.tenant, op.name, code).Inc()
	if isThrottleErr(err) {
		op.throttled.Inc()
	}
}

// Close closes the wrapped client when it can be closed.
func (d *DISClient) Close() {
	if c, ok := d.next.(interface{ Close() }); ok {
		c.Close()
	}
}

// CreateStream calls the wrapped client, counted and timed as CreateStream.
func (d *DISClient) CreateStream(ctx context.Context, req *disclient.CreateStreamRequest) error {
	return observeErr(d, ctx, "CreateStream", func(ctx context.Context) error { return d.next.CreateStream(ctx, req) })
}

// ListStreams calls the wrapped client, counted and timed as ListStreams.
func (d *DISClient) ListStreams(ctx context.Context, limit int, startStreamName string) (*disclient.ListStreamsResponse, error) {
	return observe(d, ctx, "ListStreams", func(ctx context.Context) (*disclient.ListStreamsResponse, error) {
		return d.next.ListStreams(ctx, limit, startStreamName)
	})
}

// DescribeStream calls the wrapped client, counted and timed as DescribeStream.
func (d *DISClient) DescribeStream(ctx context.Context, name, startPartitionID string, limit int) (*disclient.DescribeStreamResponse, error) {
	return observe(d, ctx, "DescribeStream", func(ctx context.Context) (*disclient.DescribeStreamResponse, error) {
		return d.next.DescribeStream(ctx, name, startPartitionID, limit)
	})
}

// DeleteStream calls the wrapped client, counted and timed as DeleteStream.
func (d *DISClient) DeleteStream(ctx context.Context, name string) error {
	return observeErr(d, ctx, "DeleteStream", func(ctx context.Context) error { return d.next.DeleteStream(ctx, name) })
}

// UpdatePartitionCount calls the wrapped client, counted and timed as UpdatePartitionCount.
func (d *DISClient) UpdatePartitionCount(ctx context.Context, req *disclient.UpdatePartitionCountRequest) error {
	return observeErr(d, ctx, "UpdatePartitionCount", func(ctx context.Context) error { return d.next.UpdatePartitionCount(ctx, req) })
}

// UpdateStream calls the wrapped client, counted and timed as UpdateStream.
func (d *DISClient) UpdateStream(ctx context.Context, req *disclient.UpdateStreamRequest) error {
	return observeErr(d, ctx, "UpdateStream", func(ctx context.Context) error { return d.next.UpdateStream(ctx, req) })
}

// UpdateStreamTags calls the wrapped client, counted and timed as UpdateStreamTags.
func (d *DISClient) UpdateStreamTags(ctx context.Context, streamID string, req *disclient.StreamTagsRequest) error {
	return observeErr(d, ctx, "UpdateStreamTags", func(ctx context.Context) error { return d.next.UpdateStreamTags(ctx, streamID, req) })
}

// PutRecords also counts the records DIS refused one by one; a call with
// throttled records counts once as throttled.
func (d *DISClient) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	ctx, op, began := d.start(ctx, "PutRecords")
	resp, err := d.next.PutRecords(ctx, req)
	d.done(op, began, err)
	d.countRefused(op, resp, err)
	return resp, err
}

// PutRecordsPipelined passes a pipelined PutRecords on to a client that
// can answer before the records are durable (disclient.PipelinedPutter),
// counted as PutRecords with its duration up to that answer; any other
// client is called with PutRecords, and its wait has nothing to do.
func (d *DISClient) PutRecordsPipelined(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, func() error, error) {
	p, ok := d.next.(disclient.PipelinedPutter)
	if !ok {
		resp, err := d.PutRecords(ctx, req)
		return resp, func() error { return nil }, err
	}
	ctx, op, began := d.start(ctx, "PutRecords")
	resp, wait, err := p.PutRecordsPipelined(ctx, req)
	d.done(op, began, err)
	d.countRefused(op, resp, err)
	return resp, wait, err
}

// countRefused counts the records of a PutRecords answer that DIS refused.
func (d *DISClient) countRefused(op *disOp, resp *disclient.PutRecordsResponse, err error) {
	if err == nil && resp.FailedRecordCount > 0 {
		throttled := false
		for i := range resp.Records {
			if c := resp.Records[i].ErrorCode; c != "" {
				d.m.disRecordErrors.WithLabelValues(d.tenant, c).Inc()
				throttled = throttled || disclient.IsThrottle(c)
			}
		}
		if throttled {
			op.throttled.Inc()
		}
	}
}

// GetCursor calls the wrapped client, counted and timed as GetCursor.
func (d *DISClient) GetCursor(ctx context.Context, req *disclient.GetCursorRequest) (*disclient.GetCursorResponse, error) {
	return observe(d, ctx, "GetCursor", func(ctx context.Context) (*disclient.GetCursorResponse, error) { return d.next.GetCursor(ctx, req) })
}

// GetRecords also counts expired cursors: the caller gets a new one.
func (d *DISClient) GetRecords(ctx context.Context, cursor string, maxFetchBytes int) (*disclient.GetRecordsResponse, error) {
	return d.getRecords(ctx, func(ctx context.Context) (*disclient.GetRecordsResponse, error) {
		return d.next.GetRecords(ctx, cursor, maxFetchBytes)
	})
}

// GetRecordsSpans passes a GetRecords that may leave record data in files
// on to a client that can (disclient.SpanGetter), counted as GetRecords;
// any other client is called with GetRecords.
func (d *DISClient) GetRecordsSpans(ctx context.Context, cursor string, maxFetchBytes, head, spanMin int) (*disclient.GetRecordsResponse, error) {
	sg, ok := d.next.(disclient.SpanGetter)
	if !ok {
		return d.GetRecords(ctx, cursor, maxFetchBytes)
	}
	return d.getRecords(ctx, func(ctx context.Context) (*disclient.GetRecordsResponse, error) {
		return sg.GetRecordsSpans(ctx, cursor, maxFetchBytes, head, spanMin)
	})
}

// getRecords observes one GetRecords call and counts an expired cursor.
func (d *DISClient) getRecords(ctx context.Context, call func(context.Context) (*disclient.GetRecordsResponse, error)) (*disclient.GetRecordsResponse, error) {
	resp, err := observe(d, ctx, "GetRecords", call)
	if disclient.IsCode(err, disclient.CodeCursorExpired) {
		d.m.cursorRefreshes.Inc()
	}
	return resp, err
}

// CreateApp calls the wrapped client, counted and timed as CreateApp.
func (d *DISClient) CreateApp(ctx context.Context, name string) error {
	return observeErr(d, ctx, "CreateApp", func(ctx context.Context) error { return d.next.CreateApp(ctx, name) })
}

// ListApps calls the wrapped client, counted and timed as ListApps.
func (d *DISClient) ListApps(ctx context.Context, limit int, startAppName, streamName string) (*disclient.ListAppsResponse, error) {
	return observe(d, ctx, "ListApps", func(ctx context.Context) (*disclient.ListAppsResponse, error) {
		return d.next.ListApps(ctx, limit, startAppName, streamName)
	})
}

// DescribeApp calls the wrapped client, counted and timed as DescribeApp.
func (d *DISClient) DescribeApp(ctx context.Context, name string) (*disclient.App, error) {
	return observe(d, ctx, "DescribeApp", func(ctx context.Context) (*disclient.App, error) { return d.next.DescribeApp(ctx, name) })
}

// DeleteApp calls the wrapped client, counted and timed as DeleteApp.
func (d *DISClient) DeleteApp(ctx context.Context, name string) error {
	return observeErr(d, ctx, "DeleteApp", func(ctx context.Context) error { return d.next.DeleteApp(ctx, name) })
}

// ConsumerState calls the wrapped client, counted and timed as ConsumerState.
func (d *DISClient) ConsumerState(ctx context.Context, app, stream string, limit int, startPartitionID string) (*disclient.ConsumerStateResponse, error) {
	return observe(d, ctx, "ConsumerState", func(ctx context.Context) (*disclient.ConsumerStateResponse, error) {
		return d.next.ConsumerState(ctx, app, stream, limit, startPartitionID)
	})
}

// CommitCheckpoint calls the wrapped client, counted and timed as CommitCheckpoint.
func (d *DISClient) CommitCheckpoint(ctx context.Context, req *disclient.CommitCheckpointRequest) error {
	return observeErr(d, ctx, "CommitCheckpoint", func(ctx context.Context) error { return d.next.CommitCheckpoint(ctx, req) })
}

// GetCheckpoint calls the wrapped client, counted and timed as GetCheckpoint.
func (d *DISClient) GetCheckpoint(ctx context.Context, req *disclient.GetCheckpointRequest) (*disclient.GetCheckpointResponse, error) {
	return observe(d, ctx, "GetCheckpoint", func(ctx context.Context) (*disclient.GetCheckpointResponse, error) {
		return d.next.GetCheckpoint(ctx, req)
	})
}

// DeleteCheckpoint calls the wrapped client, counted and timed as DeleteCheckpoint.
func (d *DISClient) DeleteCheckpoint(ctx context.Context, req *disclient.DeleteCheckpointRequest) error {
	return observeErr(d, ctx, "DeleteCheckpoint", func(ctx context.Context) error { return d.next.DeleteCheckpoint(ctx, req) })
}
