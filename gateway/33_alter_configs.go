package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/topics"
)

// AlterConfigs v0–v2.
//
// v1 changed nothing on the wire; v2 is flexible. As in Kafka, a request
// replaces a topic's whole configuration: an alterable config it does not
// list (retention.ms, message.timestamp.*) goes back to its default, and a
// null value means the default too. Configs chosen at creation
// (dis.record.format, dis.stream.type) and those DIS fixes keep their value
// when left out, and may be listed with the value they have. Broker configs
// are static and cannot be altered. A group's share.* configs are replaced
// the same way; its timings are set by flags.

func init() {
	regKey(33, 0, 2, api[*kmsg.AlterConfigsRequest]{Concurrent: handleAlterConfigs, Errors: alterConfigsError})
}

// alterConfigsError answers every resource of req with code.
func alterConfigsError(req *kmsg.AlterConfigsRequest, code int16) kmsg.Response {
	return alterConfigsAnswer(req, func(*kmsg.AlterConfigsRequestResource) (int16, *string) { return code, nil })
}

func handleAlterConfigs(ctx context.Context, gw *Gateway, r *request, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	return alterConfigsAnswer(req, func(res *kmsg.AlterConfigsRequestResource) (int16, *string) {
		return gw.alterConfigResource(ctx, r, res.ResourceType, res.ResourceName, req.ValidateOnly,
			func(a *topics.Alter) *topics.ConfigError { return a.Replace(res.Configs) },
			func(a *groupAlter) *topics.ConfigError { return a.Replace(res.Configs) })
	}), nil
}

// alterConfigsAnswer answers each resource of req with the error
// code and message answer gives it (configs_alter.go).
func alterConfigsAnswer(req *kmsg.AlterConfigsRequest, answer func(res *kmsg.AlterConfigsRequestResource) (int16, *string)) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for i := range req.Resources {
		res := &req.Resources[i]
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = answer(res)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}
