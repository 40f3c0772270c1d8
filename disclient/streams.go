package disclient

import (
	"context"
	"net/http"
)

// CreateStream creates a stream. Like every create it is retried on
// throttling and server errors, so a create that DIS carried out before
// failing may answer DIS.4307 (stream exists) in the end.
func (c *Client) CreateStream(ctx context.Context, req *CreateStreamRequest) error {
	const op = "CreateStream"
	if req == nil || req.StreamName == "" {
		return missing(op, "stream name")
	}
	return c.do(ctx, &call{op: op, method: http.MethodPost, url: c.v2 + "/streams", in: req})
}

// ListStreams lists up to limit streams after startStreamName (exclusive);
// limit <= 0 and "" leave the server defaults.
func (c *Client) ListStreams(ctx context.Context, limit int, startStreamName string) (*ListStreamsResponse, error) {
	u := newURL(c.v2, "/streams").positive("limit", limit).paramIf("start_stream_name", startStreamName)
	out := new(ListStreamsResponse)
	if err := c.do(ctx, &call{op: "ListStreams", method: http.MethodGet, url: u.String(), out: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// DescribeStream returns a stream and up to limit of its partitions after
// startPartitionID (exclusive); limit <= 0 leaves the server default.
func (c *Client) DescribeStream(ctx context.Context, name, startPartitionID string, limit int) (*DescribeStreamResponse, error) {
	const op = "DescribeStream"
	if name == "" {
		return nil, missing(op, "stream name")
	}
	// start_partitionId with a capital I is how the API spells it.
	u := newURL(c.v2, "/streams").segment(name).
		paramIf("start_partitionId", startPartitionID).positive("limit_partitions", limit)
	out := new(DescribeStreamResponse)
	if err := c.do(ctx, &call{op: op, method: http.MethodGet, url: u.String(), out: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteStream deletes a stream and its records.
func (c *Client) DeleteStream(ctx context.Context, name string) error {
	const op = "DeleteStream"
	if name == "" {
		return missing(op, "stream name")
	}
	u := newURL(c.v2, "/streams").segment(name)
	return c.do(ctx, &call{op: op, method: http.MethodDelete, url: u.String()})
}

// UpdatePartitionCount scales a stream out or in to the target count.
func (c *Client) UpdatePartitionCount(ctx context.Context, req *UpdatePartitionCountRequest) error {
	const op = "UpdatePartitionCount"
	if req == nil || req.StreamName == "" {
		return missing(op, "stream name")
	}
	u := newURL(c.v2, "/streams").segment(req.StreamName)
	return c.do(ctx, &call{op: op, method: http.MethodPut, url: u.String(), in: req})
}

// UpdateStream changes a stream's retention, data type or schema. The
// official SDK sends it to the v3 API; v2 has no such operation.
func (c *Client) UpdateStream(ctx context.Context, req *UpdateStreamRequest) error {
	const op = "UpdateStream"
	if req == nil || req.StreamName == "" {
		return missing(op, "stream name")
	}
	u := newURL(c.v3, "/streams").segment(req.StreamName)
	return c.do(ctx, &call{op: op, method: http.MethodPut, url: u.String(), in: req})
}

// UpdateStreamTags adds (TagActionCreate, replacing the value of a key the
// stream has) or removes (TagActionDelete) tags of the stream with id
// streamID, DescribeStream's stream_id: the path names the stream by id,
// not by name.
func (c *Client) UpdateStreamTags(ctx context.Context, streamID string, req *StreamTagsRequest) error {
	const op = "UpdateStreamTags"
	if streamID == "" {
		return missing(op, "stream id")
	}
	if req == nil || req.Action == "" {
		return missing(op, "action")
	}
	u := newURL(c.v2, "/stream").segment(streamID).segment("tags").segment("action")
	return c.do(ctx, &call{op: op, method: http.MethodPost, url: u.String(), in: req})
}
