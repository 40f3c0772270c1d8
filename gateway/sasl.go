package gateway

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/xdg-go/scram"

	"github.com/disgw/disgw/gateway/wire"
)

// The SASL exchange of a connection is wire's (wire/sasl.go); the gateway
// keeps its users and their credential checks, which wire calls through
// Deps.CheckPlain and Deps.SCRAM.

// saslMechanisms is the list SaslHandshake offers, in preference order.
// Passthrough offers PLAIN alone: SCRAM needs stored credentials, and DIS
// secret keys are not stored.
func (gw *Gateway) saslMechanisms() []string {
	if gw.cfg.SASLPassthrough {
		return []string{wire.MechPlain}
	}
	return []string{wire.MechSCRAMSHA512, wire.MechSCRAMSHA256, wire.MechPlain}
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

// checkPlain verifies a SASL/PLAIN message against the stored users.
func (u *SASLUsers) checkPlain(msg []byte) (string, error) {
	name, password, err := wire.ParsePlain(msg)
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
		if mech == wire.MechSCRAMSHA512 {
			return user.scram512, nil
		}
		return user.scram256, nil
	}
	if mech == wire.MechSCRAMSHA512 {
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
