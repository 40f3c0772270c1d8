package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// AddOffsetsToTxn v0–v4.
//
// v2 answers PRODUCER_FENCED where v0–v1 answer INVALID_PRODUCER_EPOCH; v3
// made it flexible. A transaction-version-1 producer names the group whose
// offsets it will commit in the transaction; the coordinator keeps it in
// the transaction's state (docs/design.md §13).

func init() {
	regKey(25, 0, 4, api[*kmsg.AddOffsetsToTxnRequest]{Concurrent: handleAddOffsetsToTxn, Errors: addOffsetsToTxnError})
}

func addOffsetsToTxnError(req *kmsg.AddOffsetsToTxnRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	resp.ErrorCode = code
	return resp
}

func handleAddOffsetsToTxn(ctx context.Context, gw *Gateway, r *request, req *kmsg.AddOffsetsToTxnRequest) (kmsg.Response, error) {
	fail := func(code int16) kmsg.Response { return addOffsetsToTxnError(req, code) }
	switch code := gw.txnRefusal(r, req.TransactionalID); {
	case code != 0:
		return fail(code), nil
	case !gw.authorize(r, authz.OpRead, authz.ResourceGroup, req.Group):
		return fail(groupDenied), nil
	}
	return gw.stepTxn(ctx, r, req.TransactionalID, req, fail), nil
}
