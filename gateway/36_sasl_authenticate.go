package gateway

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
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
	regKey(apiKeySaslAuthenticate, 0, 2, api[*kmsg.SASLAuthenticateRequest]{ordered: handleSaslAuthenticate, errors: saslAuthenticateError})
}

func saslAuthenticateError(req *kmsg.SASLAuthenticateRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = code
	return resp
}

func handleSaslAuthenticate(gw *Gateway, r *request, req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s := r.s
	if s.auth.mech == "" || s.auth.authenticated || s.rawSASL.Load() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslHandshake v1 must come first")
		s.closeAfterQueued()
		return resp, nil
	}
	out, done, err := s.saslStep(req.SASLAuthBytes)
	if err != nil {
		s.gw.metrics.authFailures.WithLabelValues(s.auth.mech).Inc()
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		s.closeAfterQueued()
		return resp, nil
	}
	resp.SASLAuthBytes = out
	if done {
		s.authenticated()
	}
	return resp, nil
}

// authenticated records a completed authentication.
func (s *session) authenticated() {
	s.auth.authenticated = true
	s.auth.scram = nil
	s.rawSASL.Store(false)
	s.authed.Store(true)
	s.log.Info().Str("principal", s.auth.principal).Str("mechanism", s.auth.mech).Msg("SASL authentication succeeded")
}

// serveRawSASL handles a bare SASL token after a v0 handshake; the answer
// is a bare token too.
func (s *session) serveRawSASL(r *request) {
	defer s.gw.recoverPanic("SASL token", func() {
		r.finish(nil)
		s.closeAfterQueued()
	})
	out, done, err := s.saslStep(r.raw)
	if err != nil {
		s.gw.metrics.authFailures.WithLabelValues(s.auth.mech).Inc()
		// Kafka closes the connection without an answer here: v0 has no
		// way to carry an error.
		r.finishFrame(nil)
		s.closeAfterQueued()
		return
	}
	if done {
		s.authenticated()
	}
	r.finishFrame(binaryFrame(out))
}

// binaryFrame prefixes payload with its 4-byte size, as bare SASL tokens
// travel after a v0 handshake.
func binaryFrame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}
