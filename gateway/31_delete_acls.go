package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// DeleteAcls v0–v3.
//
// v1 added pattern types, v2 made it flexible, v3 added the USER resource
// type. Every filter's matches are removed in one change of the stored
// ACLs, and each filter's result lists the ACLs it matched, as Kafka's do.

func init() {
	regKey(31, 0, 3, api[*kmsg.DeleteACLsRequest]{concurrent: handleDeleteACLs, errors: deleteACLsError})
}

func deleteACLsError(req *kmsg.DeleteACLsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode = code
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func handleDeleteACLs(ctx context.Context, gw *Gateway, r *request, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	if code, msg := gw.aclsGate(r, authz.OpAlter); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return resp, nil
	}
	filters := make([]authz.Filter, len(req.Filters))
	var valid []authz.Filter
	for i, f := range req.Filters {
		filters[i] = aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if err := filters[i].Validate(); err != nil {
			r.log().Info().Err(err).Msg("DeleteAcls: invalid filter")
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		valid = append(valid, filters[i])
	}
	if len(valid) == 0 {
		return resp, nil
	}
	// The matches are taken from the set the change applies to, so what
	// a result lists is exactly what this change removed.
	var before *authz.Set
	_, err := gw.acls.Update(ctx, func(cur *authz.Set) (*authz.Set, error) {
		before = cur
		return cur.Without(valid...), nil
	})
	removed := 0
	for i, f := range filters {
		if resp.Results[i].ErrorCode != 0 {
			continue
		}
		if err != nil {
			r.log().Error().Err(err).Msg("DeleteAcls: storing the ACLs in DIS failed")
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclStoreErrorCode(err), kmsg.StringPtr(err.Error())
			continue
		}
		for _, b := range before.Select(f) {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			removed++
		}
	}
	if err == nil {
		r.log().Info().Str("principal", r.principal()).Int("acls", removed).Msg("ACLs deleted")
	}
	return resp, nil
}
