package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/topics"
)

// IncrementalAlterConfigs v0–v1.
//
// v1 is flexible. Each listed config is SET, DELETEd (back to its default),
// or, for list configs only (cleanup.policy), has values APPENDed or
// SUBTRACTed; configs not listed keep their value. Every change is checked
// against the topic config table (gateway/topics), so only retention.ms
// really changes; APPEND of "delete" to cleanup.policy is accepted and
// changes nothing. Broker configs are static and cannot be altered. A
// group's share.* configs are SET and DELETEd (docs/design.md §14).

func init() {
	regKey(44, 0, 1, api[*kmsg.IncrementalAlterConfigsRequest]{Concurrent: handleIncrementalAlterConfigs, Errors: incrementalAlterConfigsError})
}

// incrementalAlterConfigsError answers every resource of req with code.
func incrementalAlterConfigsError(req *kmsg.IncrementalAlterConfigsRequest, code int16) kmsg.Response {
	return incrementalAlterConfigsAnswer(req, func(*kmsg.IncrementalAlterConfigsRequestResource) (int16, *string) { return code, nil })
}

func handleIncrementalAlterConfigs(ctx context.Context, gw *Gateway, r *request, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	return incrementalAlterConfigsAnswer(req, func(res *kmsg.IncrementalAlterConfigsRequestResource) (int16, *string) {
		return gw.alterConfigResource(ctx, r, res.ResourceType, res.ResourceName, req.ValidateOnly,
			func(a *topics.Alter) *topics.ConfigError { return a.Change(res.Configs) },
			func(a *groupAlter) *topics.ConfigError { return a.Change(res.Configs) })
	}), nil
}

// incrementalAlterConfigsAnswer answers each resource of req with the error
// code and message answer gives it (configs_alter.go).
func incrementalAlterConfigsAnswer(req *kmsg.IncrementalAlterConfigsRequest, answer func(res *kmsg.IncrementalAlterConfigsRequestResource) (int16, *string)) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for i := range req.Resources {
		res := &req.Resources[i]
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = answer(res)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}
