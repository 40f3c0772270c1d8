package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
)

// CreateAcls v0–v3.
//
// v1 added pattern types, v2 made it flexible, v3 added the USER resource
// type. Every valid binding of the request is stored in one change of the
// ACLs in DIS (docs/security.md, "ACLs"); an invalid one is answered with
// INVALID_REQUEST, as Kafka answers it, and does not stop the others.

func init() {
	regKey(30, 0, 3, api[*kmsg.CreateACLsRequest]{concurrent: handleCreateACLs, errors: createACLsError})
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
	if code, msg := gw.aclsGate(r, authz.OpAlter); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return resp, nil
	}
	var add []authz.Binding
	var valid []int
	for i, c := range req.Creations {
		b := authz.Binding{
			ResourceType: authz.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: authz.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: authz.Operation(c.Operation), Permission: authz.Permission(c.PermissionType),
		}
		if err := b.Validate(); err != nil {
			r.log().Info().Err(err).Str("principal", b.Principal).Str("resource", b.ResourceName).Msg("CreateAcls: invalid ACL")
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		add = append(add, b)
		valid = append(valid, i)
	}
	if len(add) == 0 {
		return resp, nil
	}
	if _, err := gw.acls.Update(ctx, func(cur *authz.Set) (*authz.Set, error) { return cur.With(add...), nil }); err != nil {
		r.log().Error().Err(err).Int("acls", len(add)).Msg("CreateAcls: storing the ACLs in DIS failed")
		for _, i := range valid {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclStoreErrorCode(err), kmsg.StringPtr(err.Error())
		}
		return resp, nil
	}
	r.log().Info().Str("principal", r.principal()).Int("acls", len(add)).Msg("ACLs created")
	return resp, nil
}

// aclStoreErrorCode is the Kafka error for a failed change of the stored
// ACLs: a DIS failure maps as everywhere else; anything else (the set
// outgrew a DIS record, or kept losing races) is Kafka's UNKNOWN_SERVER_ERROR.
func aclStoreErrorCode(err error) int16 {
	var de *disclient.Error
	if errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kafkaCodeForDIS(err)
	}
	return kerr.UnknownServerError.Code
}
