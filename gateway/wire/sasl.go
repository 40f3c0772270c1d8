package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"github.com/disgw/disgw/gateway/cluster"
)

// SASL mechanisms the gateway serves.
const (
	MechPlain       = "PLAIN"
	MechSCRAMSHA256 = "SCRAM-SHA-256"
	MechSCRAMSHA512 = "SCRAM-SHA-512"
)

// errAuthFailed is what a client learns of any failed authentication; the
// log says more, without secrets.
var errAuthFailed = errors.New("authentication failed: invalid credentials or mechanism")

// ErrRefused marks passthrough credentials DIS refused, as opposed to DIS
// being unwell: a failed sign-in is logged as a warning then, as an error
// otherwise.
var ErrRefused = errors.New("DIS refused the credentials")

// Busy is an error refusing a sign-in for want of capacity rather than for
// its credentials: the client learns msg, and the refusal counts as no
// failed sign-in (sasl_limit.go).
func Busy(msg string) error { return &busyError{msg} }

// busyError is a refusal Busy made.
type busyError struct{ msg string }

// Error is what the client learns.
func (e *busyError) Error() string { return e.msg }

// isBusy reports whether err is a refusal Busy made.
func isBusy(err error) bool {
	var b *busyError
	return errors.As(err, &b)
}

// ParsePlain splits a SASL/PLAIN message: authzid NUL authcid NUL passwd.
func ParsePlain(msg []byte) (name string, password []byte, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", nil, errors.New("malformed PLAIN message")
	}
	authz, name, password := string(parts[0]), string(parts[1]), parts[2]
	if authz != "" && authz != name {
		return name, nil, errors.New("PLAIN authorization id differs from the user")
	}
	return name, password, nil
}

// saslState is a connection's authentication progress; the dispatcher
// goroutine alone touches it, in request order.
type saslState struct {
	mech          string
	scram         *scram.ServerConversation
	peerSignIn    *cluster.PeerSignIn
	authenticated bool
	principal     string
	// peer is set once another gateway signed in (cluster.MechPeer).
	peer bool
}

// saslStep runs one SASL exchange for the chosen mechanism and returns the
// server's answer and whether authentication completed. An address, IPv6
// network or user with too many failed sign-ins, counting those under way,
// is refused before its credentials are checked, and every failure but a
// refusal for want of capacity counts against each.
func (s *session[T]) saslStep(token []byte) ([]byte, bool, error) {
	now := time.Now()
	user := s.saslUser(token)
	attempt, ok := s.srv.authLimit.begin(s.remoteHost(), user, now)
	if !ok {
		s.log.Warn().Str("user", user).Str("mechanism", s.auth.mech).Msg("SASL authentication refused: too many failed sign-ins from this address or for this user")
		return nil, false, errAuthThrottled
	}
	out, done, err := s.saslExchange(token)
	failed := err != nil && !isBusy(err)
	s.srv.authLimit.end(attempt, failed, time.Now())
	return out, done, err
}

// saslUser is the user name token signs in as, as far as it is known yet:
// PLAIN carries it in every message, SCRAM in its first, after which the
// conversation knows it; "" when a message names none.
func (s *session[T]) saslUser(token []byte) string {
	if s.auth.mech == MechPlain {
		name, _, _ := ParsePlain(token)
		return name
	}
	if s.auth.scram != nil {
		return s.auth.scram.Username()
	}
	return scramFirstUser(token)
}

// scramFirstUser is the user name of a SCRAM client-first message
// (RFC 5802: gs2-header, then "n=" name), as sent, "" when it has none.
func scramFirstUser(msg []byte) string {
	parts := strings.SplitN(string(msg), ",", 4)
	if len(parts) < 4 || !strings.HasPrefix(parts[2], "n=") {
		return ""
	}
	return parts[2][2:]
}

// saslExchange is saslStep without the throttling.
func (s *session[T]) saslExchange(token []byte) ([]byte, bool, error) {
	switch s.auth.mech {
	case MechPlain:
		if s.srv.d.SASLPassthrough {
			ok, err := s.plainPassthrough(token)
			return nil, ok, err
		}
		name, err := s.srv.d.CheckPlain(token)
		if err != nil {
			s.log.Warn().Str("user", name).Str("mechanism", MechPlain).Str("reason", err.Error()).Msg("SASL authentication failed")
			return nil, false, errAuthFailed
		}
		s.auth.principal = name
		return nil, true, nil
	case MechSCRAMSHA256, MechSCRAMSHA512:
		if s.auth.scram == nil {
			srv, err := s.srv.d.SCRAM(s.auth.mech)
			if err != nil {
				return nil, false, err
			}
			s.auth.scram = srv.NewConversation()
		}
		out, err := s.auth.scram.Step(string(token))
		if err != nil {
			s.log.Warn().Str("user", s.auth.scram.Username()).Str("mechanism", s.auth.mech).Str("reason", err.Error()).Msg("SASL authentication failed")
			return nil, false, errAuthFailed
		}
		if s.auth.scram.Done() {
			if !s.auth.scram.Valid() {
				return nil, false, errAuthFailed
			}
			s.auth.principal = s.auth.scram.Username()
			return []byte(out), true, nil
		}
		return []byte(out), false, nil
	case cluster.MechPeer:
		if s.auth.peerSignIn == nil {
			s.auth.peerSignIn = cluster.NewPeerSignIn(s.srv.d.PeerSecret)
		}
		out, done, err := s.auth.peerSignIn.Step(token)
		if err != nil {
			s.log.Warn().Str("mechanism", cluster.MechPeer).Str("reason", err.Error()).Msg("a peer's sign-in failed")
			return nil, false, errAuthFailed
		}
		if done {
			s.auth.principal = "disgw-peer-" + strconv.Itoa(int(s.auth.peerSignIn.From()))
			s.auth.peer = true
		}
		return out, done, nil
	}
	return nil, false, errors.New("no SASL mechanism chosen: SaslHandshake comes first")
}

// plainPassthrough authenticates a PLAIN message whose user name and
// password are a DIS access key and secret key: DIS must accept one call
// signed with them, and the connection's DIS calls use them from then on.
// Only the access key is ever logged.
func (s *session[T]) plainPassthrough(token []byte) (bool, error) {
	ak, sk, err := ParsePlain(token)
	if err == nil && (ak == "" || len(sk) == 0) {
		err = errors.New("empty access key or secret key")
	}
	if err == nil && !s.srv.authLimit.allowCheck(time.Now()) {
		err = errSignInsBusy
	}
	var tn T
	if err == nil {
		tn, err = s.srv.d.Passthrough(s.ctx, ak, string(sk))
	}
	if err != nil {
		ev := s.log.Warn()
		if !errors.Is(err, ErrRefused) {
			ev = s.log.Error()
		}
		ev.Str("user", ak).Str("mechanism", MechPlain).Str("reason", err.Error()).Msg("SASL passthrough authentication failed")
		if isBusy(err) {
			return false, err
		}
		return false, errAuthFailed
	}
	s.mu.Lock()
	prev, closed := s.tenant, s.closed
	if !closed {
		s.tenant = tn
	}
	s.mu.Unlock()
	if closed {
		s.srv.d.Release(tn)
		return false, errAuthFailed
	}
	// A re-authentication (KIP-368) ends the connection's hold on the
	// credentials it signed in with before.
	s.srv.d.Release(prev)
	s.auth.principal = ak
	return true, nil
}

// SASLHandshake is what SaslHandshake does to r's connection: it chooses
// the mechanism, one of offered, and after v0 takes the next frames for bare
// SASL tokens. Another gateway may choose cluster.MechPeer on any
// listener, when the gateway has peers. It returns the answer's error
// code; on an error the connection closes after the answer.
func (r *Call[T]) SASLHandshake(mechanism string, version int16, offered []string) int16 {
	s := r.s
	var code int16
	peer := mechanism == cluster.MechPeer && len(s.srv.d.PeerSecret) > 0
	switch {
	case !s.lis.Protocol.UsesSASL() && !peer || s.auth.authenticated || s.auth.mech != "":
		code = kerr.IllegalSaslState.Code
	case !peer && !slices.Contains(offered, mechanism):
		code = kerr.UnsupportedSaslMechanism.Code
		s.log.Warn().Str("mechanism", mechanism).Msg("SASL handshake with an unsupported mechanism")
	default:
		s.auth.mech = mechanism
		if version == 0 {
			s.rawSASL.Store(true)
		}
	}
	if code != 0 {
		s.closeAfterQueued()
	}
	return code
}

// SASLAuthenticate is what SaslAuthenticate does to r's connection: one
// step of the exchange its handshake chose. It returns the server's token,
// or the answer's error code and message; on an error the connection
// closes after the answer.
func (r *Call[T]) SASLAuthenticate(token []byte) ([]byte, int16, *string) {
	s := r.s
	if s.auth.mech == "" || s.auth.authenticated || s.rawSASL.Load() {
		s.closeAfterQueued()
		return nil, kerr.IllegalSaslState.Code, kmsg.StringPtr("SaslHandshake v1 must come first")
	}
	out, done, err := s.saslStep(token)
	if err != nil {
		s.srv.d.Metrics.AuthFailures.WithLabelValues(s.auth.mech).Inc()
		s.closeAfterQueued()
		return nil, kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(err.Error())
	}
	if done {
		s.authenticated()
	}
	return out, 0, nil
}

// authenticated records a completed authentication.
func (s *session[T]) authenticated() {
	s.auth.authenticated = true
	s.auth.scram, s.auth.peerSignIn = nil, nil
	s.rawSASL.Store(false)
	s.authed.Store(true)
	s.log.Info().Str("principal", s.auth.principal).Str("mechanism", s.auth.mech).Msg("SASL authentication succeeded")
}

// serveRawSASL handles a bare SASL token after a v0 handshake; the answer
// is a bare token too.
func (s *session[T]) serveRawSASL(r *Call[T]) {
	defer s.srv.d.Panics.Recover("SASL token", func() {
		r.finish(nil)
		s.closeAfterQueued()
	})
	out, done, err := s.saslStep(r.raw)
	if err != nil {
		s.srv.d.Metrics.AuthFailures.WithLabelValues(s.auth.mech).Inc()
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

// allowedBeforeAuth lists what a client may send on a SASL listener before
// it has authenticated, as Kafka allows.
func allowedBeforeAuth(key int16) bool {
	return key == kmsg.ApiVersions.Int16() || key == kmsg.SASLHandshake.Int16() || key == kmsg.SASLAuthenticate.Int16()
}

// saslEnabled reports whether any listener uses SASL or the gateway has
// peers, which sign in with cluster.MechPeer: only then are the SASL APIs
// advertised. New asks it of the configuration, which never changes, so
// connections of a listener that is already serving know it while Listen
// is still binding the others.
func saslEnabled(cfg *Config) bool {
	if len(cfg.PeerSecret) > 0 {
		return true
	}
	for _, l := range cfg.Listeners {
		if l.Protocol.UsesSASL() {
			return true
		}
	}
	return false
}
