package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
)

// What DescribeAcls, CreateAcls and DeleteAcls share: without an
// authorizer they answer SECURITY_DISABLED, as a Kafka broker without one
// does; with one they need DESCRIBE (DescribeAcls) or ALTER (the others)
// on the cluster.

// aclsDisabled is the message of SECURITY_DISABLED answers.
var aclsDisabled = kmsg.StringPtr("no authorizer is configured on this gateway (--authorizer=none)")

// aclsGate answers why r may not use an ACL API, or 0.
func (gw *Gateway) aclsGate(r *request, op authz.Operation) (int16, *string) {
	if gw.acls == nil {
		return kerr.SecurityDisabled.Code, aclsDisabled
	}
	if !gw.authorizeCluster(r, op) {
		return clusterDenied, nil
	}
	return 0, nil
}

// aclFilter converts a request's filter fields.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) authz.Filter {
	return authz.Filter{
		ResourceType: authz.ResourceType(rt), ResourceName: name, PatternType: authz.PatternType(pt),
		Principal: principal, Host: host, Operation: authz.Operation(op), Permission: authz.Permission(perm),
	}
}

// changeACLs is what CreateAcls and DeleteAcls share, for a request of n
// items (creations or filters), each with a result that answer(i, code,
// msg) fills in. Unless r may alter ACLs, every item is answered with the
// gate's refusal. An item check rejects (check logs why) is answered
// INVALID_REQUEST and does not stop the others. The valid ones are stored
// in one change of the ACLs in DIS, change making the new set from the
// current one. It returns the valid items, none when nothing was stored,
// and the store's error, which the caller logs and answers them with
// (aclStoreErrorCode).
func (gw *Gateway) changeACLs(ctx context.Context, r *request, n int, answer func(i int, code int16, msg *string), check func(i int) error, change func(cur *authz.Set) *authz.Set) ([]int, error) {
	if code, msg := gw.aclsGate(r, authz.OpAlter); code != 0 {
		for i := range n {
			answer(i, code, msg)
		}
		return nil, nil
	}
	var valid []int
	for i := range n {
		if err := check(i); err != nil {
			answer(i, kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error()))
			continue
		}
		valid = append(valid, i)
	}
	if len(valid) == 0 {
		return nil, nil
	}
	_, err := gw.acls.Update(ctx, func(cur *authz.Set) (*authz.Set, error) { return change(cur), nil })
	return valid, err
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
