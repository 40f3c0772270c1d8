package gateway

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// DescribeAcls v0–v3.
//
// v1 added pattern types (KIP-290; v0 filters are literal), v2 made it
// flexible, v3 added the USER resource type. The answer is the ACLs this
// gateway last read from DIS, grouped by resource pattern.

func init() {
	regKey(29, 0, 3, api[*kmsg.DescribeACLsRequest]{Ordered: handleDescribeACLs, Errors: describeACLsError})
}

func describeACLsError(req *kmsg.DescribeACLsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = code
	return resp
}

func handleDescribeACLs(gw *Gateway, r *request, req *kmsg.DescribeACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if resp.ErrorCode, resp.ErrorMessage = gw.aclsGate(r, authz.OpDescribe); resp.ErrorCode != 0 {
		return resp, nil
	}
	f := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err := f.Validate(); err != nil {
		r.Log().Info().Err(err).Msg("DescribeAcls: invalid filter")
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return resp, nil
	}
	type pattern struct {
		rt   authz.ResourceType
		name string
		pt   authz.PatternType
	}
	at := map[pattern]int{}
	for _, b := range gw.acls.Current().Select(f) {
		p := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := at[p]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(b.ResourceType)
			res.ResourceName = b.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			i = len(resp.Resources)
			at[p] = i
			resp.Resources = append(resp.Resources, res)
		}
		acl := kmsg.NewDescribeACLsResponseResourceACL()
		acl.Principal, acl.Host = b.Principal, b.Host
		acl.Operation, acl.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, acl)
	}
	return resp, nil
}
