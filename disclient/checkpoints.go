package disclient

import (
	"cmp"
	"context"
	"net/http"
)

// CommitCheckpoint stores a checkpoint; CheckpointType "" means LAST_READ,
// the only type DIS has. Committing the same position twice is harmless, so
// it is retried like a read.
func (c *Client) CommitCheckpoint(ctx context.Context, req *CommitCheckpointRequest) error {
	const op = "CommitCheckpoint"
	switch {
	case req == nil || req.AppName == "":
		return missing(op, "app name")
	case req.StreamName == "":
		return missing(op, "stream name")
	case req.PartitionID == "":
		return missing(op, "partition id")
	case req.SequenceNumber == "":
		return missing(op, "sequence number")
	}
	body := *req
	body.CheckpointType = cmp.Or(body.CheckpointType, CheckpointLastRead)
	return c.do(ctx, &call{op: op, method: http.MethodPost, url: c.v2 + "/checkpoints", in: &body})
}

// GetCheckpoint reads one partition's checkpoint; CheckpointType "" means
// LAST_READ.
func (c *Client) GetCheckpoint(ctx context.Context, req *GetCheckpointRequest) (*GetCheckpointResponse, error) {
	const op = "GetCheckpoint"
	switch {
	case req == nil || req.AppName == "":
		return nil, missing(op, "app name")
	case req.StreamName == "":
		return nil, missing(op, "stream name")
	case req.PartitionID == "":
		return nil, missing(op, "partition id")
	}
	// The checkpoint API spells its query names with underscores.
	u := newURL(c.v2, "/checkpoints").
		param("stream_name", req.StreamName).
		param("partition_id", req.PartitionID).
		param("app_name", req.AppName).
		param("checkpoint_type", cmp.Or(req.CheckpointType, CheckpointLastRead))
	out := new(GetCheckpointResponse)
	if err := c.do(ctx, &call{op: op, method: http.MethodGet, url: u.String(), out: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteCheckpoint deletes the checkpoint of one partition, or of every
// partition of the stream when PartitionID is ""; CheckpointType "" means
// LAST_READ.
func (c *Client) DeleteCheckpoint(ctx context.Context, req *DeleteCheckpointRequest) error {
	const op = "DeleteCheckpoint"
	switch {
	case req == nil || req.AppName == "":
		return missing(op, "app name")
	case req.StreamName == "":
		return missing(op, "stream name")
	}
	u := newURL(c.v2, "/checkpoints").
		param("stream_name", req.StreamName).
		param("app_name", req.AppName).
		param("checkpoint_type", cmp.Or(req.CheckpointType, CheckpointLastRead)).
		paramIf("partition_id", req.PartitionID)
	return c.do(ctx, &call{op: op, method: http.MethodDelete, url: u.String()})
}
