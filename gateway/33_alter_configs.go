package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterConfigs v0–v2.
//
// v1 changed nothing on the wire; v2 is flexible. As in Kafka, a request
// replaces a topic's whole configuration: an alterable config it does not
// list (retention.ms, message.timestamp.*) goes back to its default, and a
// null value means the default too. Configs chosen at creation
// (dis.record.format, dis.stream.type) and those DIS fixes keep their value
// when left out, and may be listed with the value they have. Broker configs
// are static and cannot be altered.

func init() {
	regKey(33, 0, 2, api[*kmsg.AlterConfigsRequest]{concurrent: handleAlterConfigs, errors: alterConfigsError})
}

// alterConfigsError answers every resource of req with code.
func alterConfigsError(req *kmsg.AlterConfigsRequest, code int16) kmsg.Response {
	return alterConfigsAnswer(req, func(*kmsg.AlterConfigsRequestResource) (int16, *string) { return code, nil })
}

func handleAlterConfigs(ctx context.Context, gw *Gateway, r *request, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	return alterConfigsAnswer(req, func(res *kmsg.AlterConfigsRequestResource) (int16, *string) {
		return gw.alterConfigResource(ctx, r, res.ResourceType, res.ResourceName, req.ValidateOnly, func(a *topicAlter) *configError {
			return replaceTopicConfigs(a, res.Configs)
		})
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

// replaceTopicConfigs states a whole new configuration on a.
func replaceTopicConfigs(a *topicAlter, configs []kmsg.AlterConfigsRequestResourceConfig) *configError {
	for _, rc := range configs {
		c, cerr := a.config(rc.Name)
		if cerr != nil {
			return cerr
		}
		if rc.Value == nil {
			cerr = a.revert(c)
		} else {
			cerr = a.set(c, *rc.Value)
		}
		if cerr != nil {
			return cerr
		}
	}
	for i := range topicConfigs {
		c := &topicConfigs[i]
		if c.readOnly || a.seen[c.name] {
			continue
		}
		if cerr := a.revert(c); cerr != nil {
			return cerr
		}
	}
	return nil
}
