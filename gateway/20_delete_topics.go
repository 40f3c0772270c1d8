package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// DeleteTopics v0–v6.
//
// v1 added throttling; v4 made it flexible; v5 per-topic error messages; v6
// names topics by name or by id (KIP-516). A topic is deleted by deleting its
// DIS stream, with every record in it, then a kept topic's keep stream; the gateway forgets the topic's
// writers, producer state and cached records at once.

func init() {
	regKey(20, 0, 6, api[*kmsg.DeleteTopicsRequest]{Concurrent: handleDeleteTopics, Errors: deleteTopicsError})
}

// deleteTopicsError answers every topic of req, by name or id, with code.
func deleteTopicsError(req *kmsg.DeleteTopicsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	add := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, code
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 6 {
		for _, t := range req.Topics {
			add(t.Topic, t.TopicID)
		}
	} else {
		for _, name := range req.TopicNames {
			add(kmsg.StringPtr(name), [16]byte{})
		}
	}
	return resp
}

func handleDeleteTopics(ctx context.Context, gw *Gateway, r *request, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, name := range req.TopicNames {
			targets = append(targets, target{name: kmsg.StringPtr(name)})
		}
	}
	for _, tg := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = tg.name, tg.id
		name := ""
		switch {
		case tg.name != nil && *tg.name != "":
			name = *tg.name
		case tg.id == offsetsTopicID:
			name = offsetsTopic
			rt.Topic = kmsg.StringPtr(name)
		case tg.id != [16]byte{}:
			if n, ok := tn.catalog.NameForID(ctx, tg.id); ok {
				name = n
				rt.Topic = kmsg.StringPtr(n)
			} else {
				rt.ErrorCode = kerr.UnknownTopicID.Code
			}
		default:
			rt.ErrorCode = kerr.InvalidRequest.Code
			rt.ErrorMessage = kmsg.StringPtr("a topic must be named by name or by id")
		}
		if name != "" && !gw.authorize(r, authz.OpDelete, authz.ResourceTopic, name) {
			rt.ErrorCode = topicDenied
			// Named by id: the name stays hidden from a principal that
			// may not describe it, as Kafka hides it.
			if (tg.name == nil || *tg.name == "") && !gw.permits(r, authz.OpDescribe, authz.ResourceTopic, name) {
				rt.Topic = nil
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		switch name {
		case "":
		case offsetsTopic, txnStateTopic, shareStateTopic:
			rt.ErrorCode, rt.ErrorMessage = gw.internalTopicRefused(r, name, "DeleteTopics")
		default:
			rt.ErrorCode, rt.ErrorMessage = gw.deleteTopic(ctx, tn, name)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// deleteTopic deletes the stream behind a topic.
func (gw *Gateway) deleteTopic(ctx context.Context, tn *tenant, name string) (int16, *string) {
	t, err := tn.catalog.Get(ctx, name)
	if errors.Is(err, topics.ErrUnknownTopic) {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	err = tn.dis.DeleteStream(ctx, topics.StreamName(name))
	tn.catalog.Invalidate(name)
	gone := err == nil || disclient.IsCode(err, disclient.CodeStreamNotFound)
	if t != nil && gone {
		// Only a stream DIS says is gone: a refused delete (this tenant's
		// keys may not delete it) leaves every tenant's writers, readers
		// and cached records as they were.
		gw.forgetStream(t.StreamID)
	}
	switch {
	case disclient.IsCode(err, disclient.CodeStreamNotFound):
		return kerr.UnknownTopicOrPartition.Code, nil
	case err != nil:
		gw.log.Warn().Err(err).Str("topic", name).Msg("DeleteStream failed")
		return kafkaCodeForDIS(err), kmsg.StringPtr(err.Error())
	}
	if err := tn.catalog.DeleteKeep(ctx, name, t); err != nil {
		// The topic is gone; its keep stream is ignored without it, and
		// replaced when a topic of the name is created again.
		gw.log.Warn().Err(err).Str("topic", name).Msg("deleting the topic's keep stream failed")
	}
	gw.log.Info().Str("topic", name).Msg("deleted topic")
	return 0, nil
}

// forgetStream drops the partition states of a deleted stream.
func (gw *Gateway) forgetStream(streamID string) {
	gw.forEachTenant(func(tn *tenant) {
		tn.parts.ForgetStream(streamID)
	})
}
