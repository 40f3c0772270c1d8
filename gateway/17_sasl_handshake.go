package gateway

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake v0–v1.
//
// The client names its mechanism. After v0 the SASL tokens follow as bare
// size-prefixed frames (Kafka before 1.0); after v1 they travel in
// SaslAuthenticate requests (KIP-152). Advertised only when a SASL listener
// is configured.

const apiKeySaslHandshake = 17

func init() {
	regKey(apiKeySaslHandshake, 0, 1, api[*kmsg.SASLHandshakeRequest]{Ordered: handleSaslHandshake, Errors: saslHandshakeError})
}

func saslHandshakeError(req *kmsg.SASLHandshakeRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = code
	return resp
}

func handleSaslHandshake(gw *Gateway, r *request, req *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = gw.saslMechanisms()
	resp.ErrorCode = r.SASLHandshake(req.Mechanism, req.Version, resp.SupportedMechanisms)
	return resp, nil
}
