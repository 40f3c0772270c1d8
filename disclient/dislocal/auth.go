package dislocal

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/disgw/disgw/disclient"
)

// Credential is a secret key the embedded server verifies signatures with.
// Printing it never shows the secret key.
type Credential struct {
	SecretKey string
	// ProjectID, when set, is the only project the key may use, as with an
	// IAM user that sees one project; others get DIS.4116.
	ProjectID string
}

// String hides the secret key.
func (c Credential) String() string {
	return fmt.Sprintf("Credential{SecretKey: <redacted>, ProjectID: %q}", c.ProjectID)
}

// Format makes every fmt verb print String.
func (c Credential) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// Authentication answers. DIS sends HTTP 441 for AK/SK problems; the codes
// and messages are those of DIS's error table (DIS.4100-4112), and a
// signature that does not match is DIS.4100, "Authorization error.".
const (
	statusAuthFailed = 441

	codeAuthError        = "DIS.4100"
	codeAuthEmpty        = "DIS.4101"
	codeAuthUnparsable   = "DIS.4102"
	codeDateEmpty        = "DIS.4103"
	codeDateUnparsable   = "DIS.4104"
	codeDateInvalid      = "DIS.4105"
	codeAccessKeyEmpty   = "DIS.4106"
	codeAccessKeyInvalid = "DIS.4107"
	codeAuthFields       = "DIS.4109"
	codeForbidden        = "DIS.4116"
)

// maxClockSkew is how far X-Sdk-Date may be from the server's clock.
const maxClockSkew = 15 * time.Minute

func authError(code, format string, args ...any) *apiError {
	return &apiError{status: statusAuthFailed, code: code, message: fmt.Sprintf(format, args...)}
}

// authRequired reports whether requests must be authenticated.
func (s *Server) authRequired() bool {
	return len(s.cfg.Credentials) > 0 || len(s.cfg.Tokens) > 0
}

// authenticate checks r's X-Auth-Token or AK/SK signature. To verify a
// signed body it reads the body and returns r with the body put back.
// Nothing secret, not even the signature, goes into an answer or a log.
func (s *Server) authenticate(r *http.Request) (*http.Request, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		if token := r.Header.Get(disclient.HeaderAuthToken); token != "" {
			return r, s.checkToken(token)
		}
		return r, authError(codeAuthEmpty, "Authorization header cannot be empty.")
	}
	auth, err := disclient.ParseAuthorization(header)
	if err != nil {
		return r, authError(codeAuthUnparsable, "Incorrectly parsed authorization header. [%v]", err)
	}
	if auth.AccessKey == "" {
		return r, authError(codeAccessKeyEmpty, "Empty AcessKey header.")
	}
	if err := s.checkDate(r.Header.Get(disclient.HeaderSdkDate)); err != nil {
		return r, err
	}
	cred, ok := s.cfg.Credentials[auth.AccessKey]
	if !ok {
		return r, authError(codeAccessKeyInvalid, "Invalid AcessKey header.")
	}
	if len(auth.SignedHeaders) == 0 || auth.Signature == "" {
		return r, authError(codeAuthFields, "The Authorization header must contain the following field: {Access,SignedHeaders,Signature}")
	}
	body, err := readAll(r.Body, maxPutBodyBytes)
	if err != nil {
		return r, err
	}
	r2 := *r
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r = &r2
	// A stated body hash (UNSIGNED-PAYLOAD included) must be the body's,
	// or a replayed request could carry another body under its signature.
	if v := r.Header.Values(disclient.HeaderContentSha256); len(v) > 0 {
		sum := sha256.Sum256(body)
		if v[0] != hex.EncodeToString(sum[:]) {
			return r, authError(codeAuthError, "Authorization error. [the body is not the one signed; %s must be its hex SHA-256]", disclient.HeaderContentSha256)
		}
	}
	valid, err := disclient.VerifySignature(r, body, auth, cred.SecretKey)
	if err != nil {
		return r, authError(codeAuthError, "Authorization error. [%v]", err)
	}
	if !valid {
		return r, authError(codeAuthError, "Authorization error. [the signature does not match the request]")
	}
	if cred.ProjectID != "" && pathProject(r.URL.Path) != cred.ProjectID {
		return r, &apiError{status: http.StatusForbidden, code: codeForbidden, message: "The access key may not use this project."}
	}
	return r, nil
}

// checkDate wants an X-Sdk-Date within maxClockSkew of the server's clock.
func (s *Server) checkDate(v string) error {
	if v == "" {
		return authError(codeDateEmpty, "Empty X-Sdk-Date header.")
	}
	t, err := time.Parse(disclient.SdkDateFormat, v)
	if err != nil {
		return authError(codeDateUnparsable, "Error parsing X-Sdk-Date header. [%s] is not %s.", v, disclient.SdkDateFormat)
	}
	if skew := s.cfg.Now().Sub(t); skew > maxClockSkew || skew < -maxClockSkew {
		return authError(codeDateInvalid, "Invalid X-Sdk-Date header. [%s] is more than %v from the server's clock.", v, maxClockSkew)
	}
	return nil
}

// checkToken accepts a token equal to one of Config.Tokens, comparing each
// in constant time.
func (s *Server) checkToken(token string) error {
	match := 0
	for _, t := range s.cfg.Tokens {
		match |= subtle.ConstantTimeCompare([]byte(t), []byte(token))
	}
	if match != 1 {
		return authError(codeAuthError, "Authorization error. [invalid X-Auth-Token]")
	}
	return nil
}

// readAll reads a body of at most limit bytes.
func readAll(body io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	switch {
	case err != nil:
		return nil, errorf(disclient.CodeInvalidRequest, "Reading the request body failed. [%v]", err)
	case int64(len(b)) > limit:
		return nil, errorf(disclient.CodeInvalidRequest, "Request body exceeds %d bytes.", limit)
	}
	return b, nil
}

// pathProject is the project id of a /v2/{project}/... or /v3/{project}/...
// path, or "" when the path has none.
func pathProject(path string) string {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	if len(parts) < 2 || (parts[0] != "v2" && parts[0] != "v3") {
		return ""
	}
	return parts[1]
}
