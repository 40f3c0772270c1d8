package gateway

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// SASL mechanisms the gateway serves.
const (
	mechPlain       = "PLAIN"
	mechSCRAMSHA256 = "SCRAM-SHA-256"
	mechSCRAMSHA512 = "SCRAM-SHA-512"
)

// saslMechanisms is the list SaslHandshake offers, in preference order.
// Passthrough offers PLAIN alone: SCRAM needs stored credentials, and DIS
// secret keys are not stored.
func (gw *Gateway) saslMechanisms() []string {
	if gw.cfg.SASLPassthrough {
		return []string{mechPlain}
	}
	return []string{mechSCRAMSHA512, mechSCRAMSHA256, mechPlain}
}

// scramIterations is the PBKDF2 work factor of stored SCRAM credentials:
// twice Kafka's minimum of 4096 (and within its maximum of 16384), since a
// stolen exchange is attacked offline at that cost per guess.
const scramIterations = 8192

// SASLUsers are the gateway's own users ("gateway users" mode): SASL
// listeners authenticate Kafka clients against them with PLAIN or
// SCRAM-SHA-256/512, and the gateway talks to DIS with its own credentials.
// Passwords are not kept: PLAIN checks a salted SHA-256, SCRAM uses salted
// PBKDF2 credentials derived once at load time.
type SASLUsers struct {
	users map[string]*saslUser
	// decoyKey derives the salt of the made-up credentials an unknown
	// user is answered with (decoy).
	decoyKey []byte
}

type saslUser struct {
	salt      []byte
	plainHash [32]byte
	scram256  scram.StoredCredentials
	scram512  scram.StoredCredentials
}

// NewSASLUsers derives credentials for user → password; an empty password
// is refused, so a user file typo cannot open the gateway.
func NewSASLUsers(passwords map[string]string) (*SASLUsers, error) {
	u := &SASLUsers{users: make(map[string]*saslUser, len(passwords)), decoyKey: make([]byte, 32)}
	if _, err := rand.Read(u.decoyKey); err != nil {
		return nil, err
	}
	for name, password := range passwords {
		if name == "" || strings.ContainsAny(name, "\x00,=") {
			return nil, fmt.Errorf("gateway: SASL user name %q: empty or containing NUL, ',' or '='", name)
		}
		if password == "" {
			// Anyone who knows the name would sign in.
			return nil, fmt.Errorf("gateway: SASL user %q has an empty password", name)
		}
		salt := make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return nil, err
		}
		kf := scram.KeyFactors{Salt: string(salt), Iters: scramIterations}
		c256, err := scram.SHA256.NewClient(name, password, "")
		if err != nil {
			return nil, fmt.Errorf("gateway: SASL user %q: %w", name, err)
		}
		c512, err := scram.SHA512.NewClient(name, password, "")
		if err != nil {
			return nil, fmt.Errorf("gateway: SASL user %q: %w", name, err)
		}
		s256, err := c256.GetStoredCredentialsWithError(kf)
		if err != nil {
			return nil, fmt.Errorf("gateway: SASL user %q: %w", name, err)
		}
		s512, err := c512.GetStoredCredentialsWithError(kf)
		if err != nil {
			return nil, fmt.Errorf("gateway: SASL user %q: %w", name, err)
		}
		u.users[name] = &saslUser{
			salt:      salt,
			plainHash: sha256.Sum256(append(append([]byte{}, salt...), password...)),
			scram256:  s256,
			scram512:  s512,
		}
	}
	return u, nil
}

// LoadSASLUsers reads a users file: one "name:password" per line; blank
// lines and lines starting with '#' are skipped. Keep the file readable by
// disgw alone.
func LoadSASLUsers(path string) (*SASLUsers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: SASL users file: %w", err)
	}
	passwords := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, password, ok := strings.Cut(text, ":")
		if !ok {
			// Never echo the line: it holds a password.
			return nil, fmt.Errorf("gateway: SASL users file %s line %d: want name:password", path, line)
		}
		passwords[name] = password
	}
	return NewSASLUsers(passwords)
}

// errAuthFailed is what a client learns of any failed authentication; the
// log says more, without secrets.
var errAuthFailed = errors.New("authentication failed: invalid credentials or mechanism")

// parsePlain splits a SASL/PLAIN message: authzid NUL authcid NUL passwd.
func parsePlain(msg []byte) (name string, password []byte, err error) {
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

// checkPlain verifies a SASL/PLAIN message against the stored users.
func (u *SASLUsers) checkPlain(msg []byte) (string, error) {
	name, password, err := parsePlain(msg)
	if err != nil {
		return name, err
	}
	user, ok := u.users[name]
	if !ok {
		return name, errors.New("unknown user")
	}
	got := sha256.Sum256(append(append([]byte{}, user.salt...), password...))
	if subtle.ConstantTimeCompare(got[:], user.plainHash[:]) != 1 {
		return name, errors.New("wrong password")
	}
	return name, nil
}

// scramServer returns a SCRAM server for mech over these users.
func (u *SASLUsers) scramServer(mech string) (*scram.Server, error) {
	lookup := func(name string) (scram.StoredCredentials, error) {
		user, ok := u.users[name]
		if !ok {
			return u.decoy(name), nil
		}
		if mech == mechSCRAMSHA512 {
			return user.scram512, nil
		}
		return user.scram256, nil
	}
	if mech == mechSCRAMSHA512 {
		return scram.SHA512.NewServer(lookup)
	}
	return scram.SHA256.NewServer(lookup)
}

// decoy is what SCRAM answers an unknown user with, as RFC 5802 §5.1
// suggests: a salt that is the same on every try for the name and the
// usual iteration count, so the server-first message does not tell whether
// the user exists, and keys no proof can match, so the exchange fails at
// the client's proof as with a wrong password.
func (u *SASLUsers) decoy(name string) scram.StoredCredentials {
	mac := hmac.New(sha256.New, u.decoyKey)
	mac.Write([]byte(name))
	sum := mac.Sum(nil)
	keys := make([]byte, 64)
	_, _ = rand.Read(keys)
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(sum[:16]), Iters: scramIterations},
		StoredKey:  keys[:32],
		ServerKey:  keys[32:],
	}
}

// saslState is a connection's authentication progress; the dispatcher
// goroutine alone touches it, in request order.
type saslState struct {
	mech          string
	scram         *scram.ServerConversation
	authenticated bool
	principal     string
}

// saslStep runs one SASL exchange for the chosen mechanism and returns the
// server's answer and whether authentication completed. An address, IPv6
// network or user with too many failed sign-ins, counting those under way,
// is refused before its credentials are checked, and every failure but a
// refusal for want of capacity counts against each.
func (s *session) saslStep(token []byte) ([]byte, bool, error) {
	now := time.Now()
	user := s.saslUser(token)
	attempt, ok := s.gw.authLimit.begin(s.remoteHost(), user, now)
	if !ok {
		s.log.Warn().Str("user", user).Str("mechanism", s.auth.mech).Msg("SASL authentication refused: too many failed sign-ins from this address or for this user")
		return nil, false, errAuthThrottled
	}
	out, done, err := s.saslExchange(token)
	failed := err != nil && !errors.Is(err, errSignInsBusy) && !errors.Is(err, errTooManyTenants)
	s.gw.authLimit.end(attempt, failed, time.Now())
	return out, done, err
}

// saslUser is the user name token signs in as, as far as it is known yet:
// PLAIN carries it in every message, SCRAM in its first, after which the
// conversation knows it; "" when a message names none.
func (s *session) saslUser(token []byte) string {
	if s.auth.mech == mechPlain {
		name, _, _ := parsePlain(token)
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
func (s *session) saslExchange(token []byte) ([]byte, bool, error) {
	users := s.gw.cfg.SASL
	switch s.auth.mech {
	case mechPlain:
		if s.gw.cfg.SASLPassthrough {
			ok, err := s.plainPassthrough(token)
			return nil, ok, err
		}
		name, err := users.checkPlain(token)
		if err != nil {
			s.log.Warn().Str("user", name).Str("mechanism", mechPlain).Str("reason", err.Error()).Msg("SASL authentication failed")
			return nil, false, errAuthFailed
		}
		s.auth.principal = name
		return nil, true, nil
	case mechSCRAMSHA256, mechSCRAMSHA512:
		if s.auth.scram == nil {
			srv, err := users.scramServer(s.auth.mech)
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
	}
	return nil, false, errors.New("no SASL mechanism chosen: SaslHandshake comes first")
}

// plainPassthrough authenticates a PLAIN message whose user name and
// password are a DIS access key and secret key: DIS must accept one call
// signed with them, and the connection's DIS calls use them from then on.
// Only the access key is ever logged.
func (s *session) plainPassthrough(token []byte) (bool, error) {
	ak, sk, err := parsePlain(token)
	if err == nil && (ak == "" || len(sk) == 0) {
		err = errors.New("empty access key or secret key")
	}
	if err == nil && !s.gw.authLimit.allowCheck(time.Now()) {
		err = errSignInsBusy
	}
	var tn *tenant
	if err == nil {
		tn, err = s.gw.passthroughTenant(s.ctx, ak, string(sk))
	}
	if err != nil {
		ev := s.log.Warn()
		if !errors.Is(err, errDISAuth) {
			ev = s.log.Error()
		}
		ev.Str("user", ak).Str("mechanism", mechPlain).Str("reason", err.Error()).Msg("SASL passthrough authentication failed")
		if errors.Is(err, errTooManyTenants) || errors.Is(err, errSignInsBusy) {
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
		s.gw.releaseTenant(tn)
		return false, errAuthFailed
	}
	// A re-authentication (KIP-368) ends the connection's hold on the
	// credentials it signed in with before.
	s.gw.releaseTenant(prev)
	s.auth.principal = ak
	return true, nil
}

// saslHandshake is what SaslHandshake does to r's connection: it chooses
// the mechanism, one of offered, and after v0 takes the next frames for bare
// SASL tokens. It returns the answer's error code; on an error the
// connection closes after the answer.
func (r *request) saslHandshake(mechanism string, version int16, offered []string) int16 {
	s := r.s
	var code int16
	switch {
	case !s.lis.Protocol.usesSASL() || s.auth.authenticated || s.auth.mech != "":
		code = kerr.IllegalSaslState.Code
	case !slices.Contains(offered, mechanism):
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

// saslAuthenticate is what SaslAuthenticate does to r's connection: one
// step of the exchange its handshake chose. It returns the server's token,
// or the answer's error code and message; on an error the connection
// closes after the answer.
func (r *request) saslAuthenticate(token []byte) ([]byte, int16, *string) {
	s := r.s
	if s.auth.mech == "" || s.auth.authenticated || s.rawSASL.Load() {
		s.closeAfterQueued()
		return nil, kerr.IllegalSaslState.Code, kmsg.StringPtr("SaslHandshake v1 must come first")
	}
	out, done, err := s.saslStep(token)
	if err != nil {
		s.gw.metrics.AuthFailures.WithLabelValues(s.auth.mech).Inc()
		s.closeAfterQueued()
		return nil, kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(err.Error())
	}
	if done {
		s.authenticated()
	}
	return out, 0, nil
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
		s.gw.metrics.AuthFailures.WithLabelValues(s.auth.mech).Inc()
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
	return key == apiKeyApiVersions || key == apiKeySaslHandshake || key == apiKeySaslAuthenticate
}

// saslEnabled reports whether any listener uses SASL: only then are the SASL
// APIs advertised. It reads the configuration, which never changes, so
// connections of a listener that is already serving may ask while Start is
// still binding the others.
func (gw *Gateway) saslEnabled() bool {
	for _, l := range gw.cfg.Listeners {
		if l.Protocol.usesSASL() {
			return true
		}
	}
	return false
}
