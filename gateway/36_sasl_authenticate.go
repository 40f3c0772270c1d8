package gateway

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslAuthenticate v0–v2.
//
// v1 added the session lifetime (KIP-368); it is always 0 here, which tells
// clients the gateway does not expire sessions, so none re-authenticates.
// v2 made it flexible. A failed authentication is answered with
// SASL_AUTHENTICATION_FAILED and the connection is closed after the answer,
// as Kafka does.

const apiKeySaslAuthenticate = 36

func init() {
	regKey(apiKeySaslAuthenticate, 0, 2, api[*kmsg.SASLAuthenticateRequest]{Ordered: handleSaslAuthenticate, Errors: saslAuthenticateError})
}

func saslAuthenticateError(req *kmsg.SASLAuthenticateRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = code
	return resp
}

func handleSaslAuthenticate(_ *Gateway, r *request, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.SASLAuthBytes, resp.ErrorCode, resp.ErrorMessage = r.SASLAuthenticate(req.SASLAuthBytes)
	return resp, nil
}
