package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId v0–v5.
//
// v2 made it flexible; v3 lets a producer bump its epoch by sending its
// current id and epoch (KIP-360); v4 and v5 only changed error codes.
// Idempotent producers get ids from producerIDs, unique across restarts. A
// transactional id goes to the transaction coordinator (docs/design.md
// §13); a gateway that does not serve transactions (transactional) refuses
// it here, where a producer first asks, with a clear message.

func init() {
	regKey(22, 0, 5, api[*kmsg.InitProducerIDRequest]{Concurrent: handleInitProducerID, Errors: initProducerIDError})
}

func initProducerIDError(req *kmsg.InitProducerIDRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, code
	return resp
}

func handleInitProducerID(ctx context.Context, gw *Gateway, r *request, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	if req.TransactionalID != nil {
		return gw.initTransactionalProducer(ctx, r, req), nil
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case !gw.mayWriteIdempotently(r):
		resp.ErrorCode = clusterDenied
	case req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < 1<<15-1:
		// An idempotent producer bumping its epoch after an error keeps its id.
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
	default:
		resp.ProducerID, resp.ProducerEpoch = gw.producers.next(), 0
	}
	return resp, nil
}

// initTransactionalProducer hands an InitProducerId with a transactional
// id to its coordinator.
func (gw *Gateway) initTransactionalProducer(ctx context.Context, r *request, req *kmsg.InitProducerIDRequest) kmsg.Response {
	id := *req.TransactionalID
	if code := gw.txnRefusal(r, id); code != 0 {
		return initProducerIDError(req, code)
	}
	return gw.stepTxn(ctx, r, id, req, func(code int16) kmsg.Response { return initProducerIDError(req, code) })
}
