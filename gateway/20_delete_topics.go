package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// DeleteTopics v0–v6.
//
// v1 added throttling; v4 made it flexible; v5 per-topic error messages; v6
// names topics by name or by id (KIP-516). A topic is deleted by deleting its
// DIS stream, with every record in it; the gateway forgets the topic's
// writers, producer state and cached records at once.

func init() { regKey(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(gw *Gateway, r *request, req *kmsg.DeleteTopicsRequest) {
	tn := r.s.tenant
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
	go func() {
		ctx, cancel := context.WithTimeout(r.ctx, disCallsTimeout)
		defer cancel()
		for _, tg := range targets {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID = tg.name, tg.id
			name := ""
			switch {
			case tg.name != nil && *tg.name != "":
				name = *tg.name
			case tg.id != [16]byte{}:
				if n, ok := tn.catalog.nameForID(ctx, tg.id); ok {
					name = n
					rt.Topic = kmsg.StringPtr(n)
				} else {
					rt.ErrorCode = kerr.UnknownTopicID.Code
				}
			default:
				rt.ErrorCode = kerr.InvalidRequest.Code
				rt.ErrorMessage = kmsg.StringPtr("a topic must be named by name or by id")
			}
			if name != "" {
				rt.ErrorCode, rt.ErrorMessage = gw.deleteTopic(ctx, tn, name)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		r.respond(resp)
	}()
}

// deleteTopic deletes the stream behind a topic.
func (gw *Gateway) deleteTopic(ctx context.Context, tn *tenant, name string) (int16, *string) {
	t, err := tn.catalog.get(ctx, name)
	if errors.Is(err, errUnknownTopic) {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	err = tn.dis.DeleteStream(ctx, name)
	tn.catalog.invalidate(name)
	if t != nil {
		gw.forgetStream(t.streamID)
	}
	switch {
	case disclient.IsCode(err, disclient.CodeStreamNotFound):
		return kerr.UnknownTopicOrPartition.Code, nil
	case err != nil:
		gw.log.Warn().Err(err).Str("topic", name).Msg("DeleteStream failed")
		return kafkaCodeForDIS(err), kmsg.StringPtr(err.Error())
	}
	gw.log.Info().Str("topic", name).Msg("deleted topic")
	return 0, nil
}

// forgetStream drops the partition writers and readers of a deleted stream.
func (gw *Gateway) forgetStream(streamID string) {
	gw.forEachTenant(func(tn *tenant) {
		tn.writers.forgetStream(streamID)
		tn.readers.forgetStream(streamID)
	})
}
