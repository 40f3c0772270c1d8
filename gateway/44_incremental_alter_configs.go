package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs v0–v1.
//
// v1 is flexible. Each listed config is SET, DELETEd (back to its default),
// or, for list configs only (cleanup.policy), has values APPENDed or
// SUBTRACTed; configs not listed keep their value. Every change is checked
// against topicConfigs, so only retention.ms really changes; APPEND of
// "delete" to cleanup.policy is accepted and changes nothing. Broker configs
// are static and cannot be altered.

func init() {
	regKey(44, 0, 1, api[*kmsg.IncrementalAlterConfigsRequest]{concurrent: handleIncrementalAlterConfigs, errors: incrementalAlterConfigsError})
}

// incrementalAlterConfigsError answers every resource of req with code.
func incrementalAlterConfigsError(req *kmsg.IncrementalAlterConfigsRequest, code int16) kmsg.Response {
	return incrementalAlterConfigsAnswer(req, func(*kmsg.IncrementalAlterConfigsRequestResource) (int16, *string) { return code, nil })
}

func handleIncrementalAlterConfigs(ctx context.Context, gw *Gateway, r *request, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	return incrementalAlterConfigsAnswer(req, func(res *kmsg.IncrementalAlterConfigsRequestResource) (int16, *string) {
		return gw.alterConfigResource(ctx, r, res.ResourceType, res.ResourceName, req.ValidateOnly, func(a *topicAlter) *configError {
			return changeTopicConfigs(a, res.Configs)
		})
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

// changeTopicConfigs states each listed change on a.
func changeTopicConfigs(a *topicAlter, configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) *configError {
	for _, rc := range configs {
		c, cerr := a.config(rc.Name)
		if cerr != nil {
			return cerr
		}
		if rc.Op == kmsg.IncrementalAlterConfigOpDelete {
			if cerr := a.revert(c); cerr != nil {
				return cerr
			}
			continue
		}
		if rc.Value == nil {
			return invalidRequest("config %s: a null value is only allowed with DELETE", rc.Name)
		}
		v := *rc.Value
		switch rc.Op {
		case kmsg.IncrementalAlterConfigOpSet:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !c.list() {
				return invalidConfig("config %s is not a list: only SET and DELETE apply", c.name)
			}
			v = changedList(c.current(a.cfg, &a.next), v, rc.Op == kmsg.IncrementalAlterConfigOpAppend)
		default:
			return invalidRequest("config %s: unknown operation %d", rc.Name, int8(rc.Op))
		}
		if cerr := a.set(c, v); cerr != nil {
			return cerr
		}
	}
	return nil
}

// changedList appends the comma-separated values to list, skipping those
// already there, or removes them from it.
func changedList(list, values string, add bool) string {
	var items []string
	if list != "" {
		items = strings.Split(list, ",")
	}
	for _, v := range strings.Split(values, ",") {
		v = strings.TrimSpace(v)
		if add && !slices.Contains(items, v) {
			items = append(items, v)
		}
		if !add {
			items = slices.DeleteFunc(items, func(s string) bool { return s == v })
		}
	}
	return strings.Join(items, ",")
}
