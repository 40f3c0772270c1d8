package gateway

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster v0–v1.
//
// v1 added the endpoint type (KIP-919; 1 = brokers, the only kind served).
// The cluster is this gateway: one broker, which is also the controller.

func init() {
	regKey(60, 0, 1, api[*kmsg.DescribeClusterRequest]{ordered: handleDescribeCluster, errors: describeClusterError})
}

func describeClusterError(req *kmsg.DescribeClusterRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ErrorCode = code
	return resp
}

func handleDescribeCluster(gw *Gateway, r *request, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("disgw serves broker endpoints only")
		return resp, nil
	}
	resp.EndpointType = 1
	resp.ClusterID = gw.cfg.ClusterID
	resp.ControllerID = gw.cfg.NodeID
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = gw.cfg.NodeID, r.s.lis.host, r.s.lis.port
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	return resp, nil
}
