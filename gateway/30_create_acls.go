package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// CreateAcls v0–v3.
//
// v1 added pattern types, v2 made it flexible, v3 added the USER resource
// type. Every valid binding of the request is stored in one change of the
// ACLs in DIS (docs/security.md, "ACLs"); an invalid one is answered with
// INVALID_REQUEST, as Kafka answers it, and does not stop the others.

func init() {
	regKey(30, 0, 3, api[*kmsg.CreateACLsRequest]{Concurrent: handleCreateACLs, Errors: createACLsError})
}

func createACLsError(req *kmsg.CreateACLsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode = code
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func handleCreateACLs(ctx context.Context, gw *Gateway, r *request, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
	}
	answer := func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}
	var add []authz.Binding
	valid, err := gw.changeACLs(ctx, r, len(req.Creations), answer, func(i int) error {
		c := &req.Creations[i]
		b := authz.Binding{
			ResourceType: authz.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: authz.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: authz.Operation(c.Operation), Permission: authz.Permission(c.PermissionType),
		}
		if err := b.Validate(); err != nil {
			r.Log().Info().Err(err).Str("principal", b.Principal).Str("resource", b.ResourceName).Msg("CreateAcls: invalid ACL")
			return err
		}
		add = append(add, b)
		return nil
	}, func(cur *authz.Set) *authz.Set { return cur.With(add...) })
	switch {
	case err != nil:
		r.Log().Error().Err(err).Int("acls", len(add)).Msg("CreateAcls: storing the ACLs in DIS failed")
		for _, i := range valid {
			answer(i, aclStoreErrorCode(err), kmsg.StringPtr(err.Error()))
		}
	case len(valid) > 0:
		r.Log().Info().Str("principal", r.Principal()).Int("acls", len(add)).Msg("ACLs created")
	}
	return resp, nil
}
