package gateway

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// DescribeCluster v0–v1.
//
// v1 added the endpoint type (KIP-919; 1 = brokers, the only kind served).
// The brokers are the live gateways of the Membership, as in Metadata; the
// controller is this gateway, since every gateway serves the admin APIs.

func init() {
	regKey(60, 0, 1, api[*kmsg.DescribeClusterRequest]{Ordered: handleDescribeCluster, Errors: describeClusterError})
}

func describeClusterError(req *kmsg.DescribeClusterRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ErrorCode = code
	return resp
}

func handleDescribeCluster(gw *Gateway, r *request, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if !gw.authorizeCluster(r, authz.OpDescribe) {
		resp.ErrorCode = clusterDenied
		return resp, nil
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = gw.authorizedOps(r, authz.ResourceCluster, authz.ClusterName)
	}
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("disgw serves broker endpoints only")
		return resp, nil
	}
	resp.EndpointType = 1
	resp.ClusterID = gw.cfg.ClusterID
	resp.ControllerID = gw.cfg.NodeID
	for _, p := range gw.cfg.Membership.Live() {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = p.ID
		b.Host, b.Port = gw.peerAddr(r.Listener(), p)
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp, nil
}
