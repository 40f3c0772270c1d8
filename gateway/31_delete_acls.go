package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// DeleteAcls v0–v3.
//
// v1 added pattern types, v2 made it flexible, v3 added the USER resource
// type. Every filter's matches are removed in one change of the stored
// ACLs, and each filter's result lists the ACLs it matched, as Kafka's do.

func init() {
	regKey(31, 0, 3, api[*kmsg.DeleteACLsRequest]{Concurrent: handleDeleteACLs, Errors: deleteACLsError})
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
	answer := func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}
	filters := make([]authz.Filter, len(req.Filters))
	var remove []authz.Filter
	// The matches are taken from the set the change applies to, so what
	// a result lists is exactly what this change removed.
	var before *authz.Set
	valid, err := gw.changeACLs(ctx, r, len(req.Filters), answer, func(i int) error {
		f := &req.Filters[i]
		filters[i] = aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if err := filters[i].Validate(); err != nil {
			r.Log().Info().Err(err).Msg("DeleteAcls: invalid filter")
			return err
		}
		remove = append(remove, filters[i])
		return nil
	}, func(cur *authz.Set) *authz.Set {
		before = cur
		return cur.Without(remove...)
	})
	removed := 0
	for _, i := range valid {
		if err != nil {
			r.Log().Error().Err(err).Msg("DeleteAcls: storing the ACLs in DIS failed")
			answer(i, aclStoreErrorCode(err), kmsg.StringPtr(err.Error()))
			continue
		}
		for _, b := range before.Select(filters[i]) {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			removed++
		}
	}
	if err == nil && len(valid) > 0 {
		r.Log().Info().Str("principal", r.Principal()).Int("acls", removed).Msg("ACLs deleted")
	}
	return resp, nil
}
