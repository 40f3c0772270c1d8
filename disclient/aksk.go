package disclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// AKSKSigner signs requests with an access key and secret key exactly as
// the official Huawei Cloud Go SDK does (SDK-HMAC-SHA256, docs/dis-api.md §3), so
// DIS accepts them. Printing it, marshaling it to JSON or logging it with
// zerolog shows the access key only.
type AKSKSigner struct {
	AccessKey string
	SecretKey string
	// SecurityToken is the token of temporary credentials, sent signed in
	// X-Security-Token; empty for permanent keys.
	SecurityToken string
	// Now is the clock for X-Sdk-Date; nil uses time.Now.
	Now func() time.Time
}

var _ Signer = AKSKSigner{}

// Sign sets X-Sdk-Date, X-Security-Token (with temporary credentials) and
// Authorization. Every header already on req except Content-Type is
// signed, so it must be called last. The body's hash is signed whatever its
// content type: the SDK sends protobuf bodies as UNSIGNED-PAYLOAD, which
// would let anyone replaying a request change the records it writes.
func (s AKSKSigner) Sign(req *http.Request, body []byte) error {
	if s.AccessKey == "" || s.SecretKey == "" {
		return errors.New("AKSKSigner needs both AccessKey and SecretKey")
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	date := now().UTC().Format(SdkDateFormat)
	req.Header.Del(headerAuthorization)
	req.Header.Set(HeaderSdkDate, date)
	if s.SecurityToken != "" {
		req.Header.Set(headerSecurityToken, s.SecurityToken)
	}
	signed := signedHeaderNames(req.Header)
	canonical, err := CanonicalRequest(req, signed, body)
	if err != nil {
		return err
	}
	req.Header.Set(headerAuthorization, signAlgorithm+" Access="+s.AccessKey+
		", SignedHeaders="+strings.Join(signed, ";")+
		", Signature="+signature(s.SecretKey, date, canonical))
	return nil
}

// String shows the access key and whether the credentials are temporary,
// never the secret key or the token.
func (s AKSKSigner) String() string {
	return fmt.Sprintf("AKSKSigner{AccessKey: %q, SecretKey: <redacted>, temporary: %t}", s.AccessKey, s.SecurityToken != "")
}

// Format makes every fmt verb (%v, %+v, %#v, %s, ...) print String.
func (s AKSKSigner) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalJSON shows the access key only, so JSON logging cannot leak the
// secret key.
func (s AKSKSigner) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		AccessKey string `json:"access_key"`
		Temporary bool   `json:"temporary"`
	}{s.AccessKey, s.SecurityToken != ""})
}

// MarshalZerologObject logs the access key only.
func (s AKSKSigner) MarshalZerologObject(e *zerolog.Event) {
	e.Str("access_key", s.AccessKey).Bool("temporary", s.SecurityToken != "")
}

// TokenSigner authenticates with an IAM token in X-Auth-Token instead of a
// signature, as the legacy Java SDK's token mode does. Printing or logging
// it never shows the token.
type TokenSigner struct {
	Token string
}

var _ Signer = TokenSigner{}

// Sign sets X-Auth-Token.
func (s TokenSigner) Sign(req *http.Request, _ []byte) error {
	if s.Token == "" {
		return errors.New("TokenSigner needs a Token")
	}
	req.Header.Set(HeaderAuthToken, s.Token)
	return nil
}

// String never shows the token.
func (s TokenSigner) String() string { return "TokenSigner{Token: <redacted>}" }

// Format makes every fmt verb print String.
func (s TokenSigner) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalJSON hides the token.
func (s TokenSigner) MarshalJSON() ([]byte, error) { return []byte(`{"token":"<redacted>"}`), nil }

// MarshalZerologObject hides the token.
func (s TokenSigner) MarshalZerologObject(e *zerolog.Event) { e.Str("token", "<redacted>") }
