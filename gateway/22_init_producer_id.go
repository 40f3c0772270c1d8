package gateway

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId v0–v5.
//
// v2 made it flexible; v3 lets a producer bump its epoch by sending its
// current id and epoch (KIP-360); v4 and v5 only changed error codes. Only
// idempotent producers are served: ids come from producerIDs, unique across
// restarts. Transactions are not supported, so a transactional id is refused
// here, where a producer first asks, with a clear message.

func init() {
	regKey(22, 0, 5, api[*kmsg.InitProducerIDRequest]{Ordered: handleInitProducerID, Errors: initProducerIDError})
}

func initProducerIDError(req *kmsg.InitProducerIDRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, code
	return resp
}

func handleInitProducerID(gw *Gateway, r *request, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil:
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		gw.log.Info().Str("transactional_id", *req.TransactionalID).Msg("refused a transactional producer: disgw does not support transactions")
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
