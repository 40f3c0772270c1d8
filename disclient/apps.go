package disclient

import (
	"context"
	"net/http"
)

// CreateApp creates an app, DIS's consumer group. A create retried after
// DIS carried it out answers DIS.4330 (app exists).
func (c *Client) CreateApp(ctx context.Context, name string) error {
	const op = "CreateApp"
	if name == "" {
		return missing(op, "app name")
	}
	return c.do(ctx, &call{op: op, method: http.MethodPost, url: c.v2 + "/apps", in: &CreateAppRequest{AppName: name}})
}

// ListApps lists up to limit apps after startAppName (exclusive), only those
// consuming streamName when it is set; zero values leave the server defaults.
func (c *Client) ListApps(ctx context.Context, limit int, startAppName, streamName string) (*ListAppsResponse, error) {
	u := newURL(c.v2, "/apps").positive("limit", limit).
		paramIf("start_app_name", startAppName).paramIf("stream_name", streamName)
	out := new(ListAppsResponse)
	if err := c.do(ctx, &call{op: "ListApps", method: http.MethodGet, url: u.String(), out: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// DescribeApp returns one app.
func (c *Client) DescribeApp(ctx context.Context, name string) (*App, error) {
	const op = "DescribeApp"
	if name == "" {
		return nil, missing(op, "app name")
	}
	out := new(App)
	u := newURL(c.v2, "/apps").segment(name)
	if err := c.do(ctx, &call{op: op, method: http.MethodGet, url: u.String(), out: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteApp deletes an app and its checkpoints.
func (c *Client) DeleteApp(ctx context.Context, name string) error {
	const op = "DeleteApp"
	if name == "" {
		return missing(op, "app name")
	}
	u := newURL(c.v2, "/apps").segment(name)
	return c.do(ctx, &call{op: op, method: http.MethodDelete, url: u.String()})
}

// ConsumerState returns the LAST_READ checkpoints and offsets of up to limit
// partitions of stream after startPartitionID (exclusive) for app: a group's
// committed offsets and lag in one call.
func (c *Client) ConsumerState(ctx context.Context, app, stream string, limit int, startPartitionID string) (*ConsumerStateResponse, error) {
	const op = "ConsumerState"
	switch {
	case app == "":
		return nil, missing(op, "app name")
	case stream == "":
		return nil, missing(op, "stream name")
	}
	u := newURL(c.v2, "/apps").segment(app).path("/streams").segment(stream).
		param("checkpoint_type", CheckpointLastRead).
		positive("limit", limit).
		paramIf("start_partition_id", startPartitionID)
	out := new(ConsumerStateResponse)
	if err := c.do(ctx, &call{op: op, method: http.MethodGet, url: u.String(), out: out}); err != nil {
		return nil, err
	}
	return out, nil
}
