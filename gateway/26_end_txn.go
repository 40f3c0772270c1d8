package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn v0–v5.
//
// v2 answers PRODUCER_FENCED where v0–v1 answer INVALID_PRODUCER_EPOCH; v3
// made it flexible; v5 is transaction version 2 (KIP-890 part 2): every
// end bumps the producer's epoch, which the answer carries. The
// coordinator answers once the transaction's PrepareCommit or
// PrepareAbort is in DIS; the markers follow (docs/design.md §13).

func init() {
	regKey(26, 0, 5, api[*kmsg.EndTxnRequest]{Concurrent: handleEndTxn, Errors: endTxnError})
}

func endTxnError(req *kmsg.EndTxnRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	return resp
}

func handleEndTxn(ctx context.Context, gw *Gateway, r *request, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	fail := func(code int16) kmsg.Response { return endTxnError(req, code) }
	if code := gw.txnRefusal(r, req.TransactionalID); code != 0 {
		return fail(code), nil
	}
	return gw.stepTxn(ctx, r, req.TransactionalID, req, fail), nil
}
