package gateway

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// FindCoordinator v0–v6.
//
// v1 added the key type (0 group, 1 transaction) and error messages; v3 made
// it flexible; v4 batches keys (KIP-699); v5 and v6 only changed error codes
// and key types (2, share groups). A group's coordinator is its owner in
// the Membership (docs/design.md §6), at the address Metadata lists for it
// (docs/kafka-compat.md item 5). A transactional id's coordinator is the
// owner of its state partition (docs/design.md §13); a client the gateway
// serves no transactions answers a non-retriable error with a message, not
// an endless retry loop.

func init() {
	regKey(10, 0, 6, api[*kmsg.FindCoordinatorRequest]{Ordered: handleFindCoordinator, Errors: findCoordinatorError})
}

// findCoordinatorError answers req with code at the top level (before v4)
// or for every key.
func findCoordinatorError(req *kmsg.FindCoordinatorRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port, c.ErrorCode = key, -1, -1, code
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}

const (
	coordinatorKeyGroup       = 0
	coordinatorKeyTransaction = 1
)

func handleFindCoordinator(gw *Gateway, r *request, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		switch req.CoordinatorType {
		case coordinatorKeyGroup:
			if !gw.authorize(r, authz.OpDescribe, authz.ResourceGroup, key) {
				c.NodeID, c.Port, c.ErrorCode = -1, -1, groupDenied
				break
			}
			owner := gw.coordinator(key)
			c.NodeID = owner.ID
			c.Host, c.Port = gw.peerAddr(r.Listener(), owner)
		case coordinatorKeyTransaction:
			switch {
			case !gw.transactional(r.Tenant()):
				c.NodeID, c.Port = -1, -1
				c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				c.ErrorMessage = kmsg.StringPtr("disgw gateways with peers serve transactions to clients of their own DIS credentials, not to passthrough clients")
			case !gw.authorize(r, authz.OpDescribe, authz.ResourceTransactionalID, key):
				c.NodeID, c.Port = -1, -1
				c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			default:
				owner := gw.txnCoordinator(key)
				c.NodeID = owner.ID
				c.Host, c.Port = gw.peerAddr(r.Listener(), owner)
			}
		default:
			c.NodeID, c.Port = -1, -1
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = kmsg.StringPtr("disgw coordinates consumer groups and transactions only")
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp, nil
}
