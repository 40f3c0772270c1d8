package gateway

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
