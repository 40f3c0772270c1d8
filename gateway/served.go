package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// What ListOffsets, DeleteRecords, OffsetForLeaderEpoch and
// DescribeProducers share: each answers every partition from its own state
// on the gateway that owns it, after the same checks in the same order.
// Produce and Fetch make these checks too, with cases of their own between
// them (writability, leader hints, topic ids), so they keep theirs.

// servedTopic is one topic of such a request, authorized and looked up
// once for all its partitions.
type servedTopic struct {
	name   string
	t      *topics.Meta
	err    error
	denied bool
	// internal is the internal offsets topic, which has no stream: the
	// handlers that serve it check this first; to the others it is
	// unknown.
	internal bool
}

// serveTopic authorizes op on topic name and, when allowed, looks it up in
// r's tenant's catalog, described again when fresh (offsets the answer
// reports must be current): a denied topic costs DIS no describe.
func (gw *Gateway) serveTopic(ctx context.Context, r *request, op authz.Operation, name string, fresh bool) servedTopic {
	st := servedTopic{name: name, denied: !gw.authorize(r, op, authz.ResourceTopic, name), internal: name == offsetsTopic}
	switch {
	case st.denied:
	case st.internal:
		st.err = topics.ErrUnknownTopic
	case fresh:
		st.t, st.err = r.Tenant().catalog.Refresh(ctx, name)
	default:
		st.t, st.err = r.Tenant().catalog.Get(ctx, name)
	}
	return st
}

// partitionCode is the error partition p of st is answered with before its
// state is read: the topic is denied or unknown, its lookup failed, the
// partition cannot be read, or another gateway owns it. It is 0 when this
// gateway serves p.
func (gw *Gateway) partitionCode(st servedTopic, p int32) int16 {
	if code := existingPartitionCode(st, p); code != 0 {
		return code
	}
	if !gw.ownsPartition(st.name, p) {
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// existingPartitionCode is partitionCode for a request that names a
// partition without serving it, whichever gateway owns it (a
// transaction's partitions and offsets).
func existingPartitionCode(st servedTopic, p int32) int16 {
	switch {
	case st.denied:
		return topicDenied
	case errors.Is(st.err, topics.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case st.err != nil:
		return kafkaCodeForDIS(st.err)
	case !st.t.Readable(p):
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}
