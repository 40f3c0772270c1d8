package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// CreatePartitions v0–v3.
//
// v1 only changed throttling; v2 made it flexible; v3 changed nothing on the
// wire. Adding partitions scales the DIS stream out with
// UpdatePartitionCount, a kept topic's keep stream first. Kafka cannot remove partitions, so a lower count is
// refused with INVALID_PARTITIONS, as Kafka does. DIS limits how often a
// stream may be rescaled; its refusal comes back as the mapped DIS error
// with DIS's message.

func init() {
	regKey(37, 0, 3, api[*kmsg.CreatePartitionsRequest]{Concurrent: handleCreatePartitions, Errors: createPartitionsError})
}

// createPartitionsError answers every topic of req with code.
func createPartitionsError(req *kmsg.CreatePartitionsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleCreatePartitions(ctx context.Context, gw *Gateway, r *request, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		if !gw.authorize(r, authz.OpAlter, authz.ResourceTopic, t.Topic) {
			rt.ErrorCode = topicDenied
		} else if isInternalTopic(t.Topic) {
			rt.ErrorCode, rt.ErrorMessage = gw.internalTopicRefused(r, t.Topic, "CreatePartitions")
		} else {
			rt.ErrorCode, rt.ErrorMessage = gw.createPartitions(ctx, tn, &t, req.ValidateOnly)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (gw *Gateway) createPartitions(ctx context.Context, tn *tenant, t *kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, *string) {
	fail := func(code int16, format string, args ...any) (int16, *string) {
		return code, kmsg.StringPtr(fmt.Sprintf(format, args...))
	}
	tm, err := tn.catalog.Refresh(ctx, t.Topic)
	switch {
	case errors.Is(err, topics.ErrUnknownTopic):
		return fail(kerr.UnknownTopicOrPartition.Code, "topic '%s' does not exist", t.Topic)
	case err != nil:
		return fail(kafkaCodeForDIS(err), "%v", err)
	}
	current := int32(0)
	for p := range tm.Partitions {
		if tm.Writable(int32(p)) {
			current = int32(p) + 1
		}
	}
	switch {
	case t.Count < current:
		return fail(kerr.InvalidPartitions.Code, "topic '%s' has %d partitions; Kafka cannot remove partitions", t.Topic, current)
	case t.Count == current:
		return fail(kerr.InvalidPartitions.Code, "topic '%s' already has %d partitions", t.Topic, current)
	}
	if t.Assignment != nil && len(t.Assignment) != int(t.Count-current) {
		return fail(kerr.InvalidReplicaAssignment.Code, "%d assignments for %d new partitions", len(t.Assignment), t.Count-current)
	}
	for _, a := range t.Assignment {
		if len(a.Replicas) != 1 || a.Replicas[0] != gw.cfg.NodeID {
			return fail(kerr.InvalidReplicaAssignment.Code, "every partition must be assigned to broker %d alone: DIS keeps the replicas", gw.cfg.NodeID)
		}
	}
	if validateOnly {
		return 0, nil
	}
	if err := tn.catalog.GrowKeep(ctx, tm, t.Count); err != nil {
		tn.catalog.Invalidate(t.Topic)
		gw.log.Warn().Err(err).Str("topic", t.Topic).Msg("UpdatePartitionCount of the keep stream failed")
		return fail(kafkaCodeForDIS(err), "%v", err)
	}
	err = tn.dis.UpdatePartitionCount(ctx, &disclient.UpdatePartitionCountRequest{StreamName: tm.Stream, TargetPartitionCount: t.Count})
	tn.catalog.Invalidate(t.Topic)
	if err != nil {
		gw.log.Warn().Err(err).Str("topic", t.Topic).Msg("UpdatePartitionCount failed")
		return fail(kafkaCodeForDIS(err), "%v", err)
	}
	gw.log.Info().Str("topic", t.Topic).Int32("partitions", t.Count).Msg("added partitions")
	return 0, nil
}
