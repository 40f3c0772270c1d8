package disclient

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Names of the AK/SK signing scheme (docs/dis-api.md §3) that both the signer and
// the embedded server's verifier need.
const (
	// HeaderSdkDate carries the signing time, SdkDateFormat in UTC. It is part
	// of what is signed, so a server can refuse old signatures.
	HeaderSdkDate = "X-Sdk-Date"
	// SdkDateFormat is the layout of X-Sdk-Date.
	SdkDateFormat = "20060102T150405Z"
	// HeaderAuthToken carries an IAM token, the alternative to a signature.
	HeaderAuthToken = "X-Auth-Token"
	// HeaderContentSha256 stands in for the body hash; the SDK sets it to
	// UNSIGNED-PAYLOAD for bodies that are neither JSON nor BSON, which the
	// embedded server refuses: only the body's own hash proves the body.
	HeaderContentSha256 = "X-Sdk-Content-Sha256"
)

const (
	signAlgorithm       = "SDK-HMAC-SHA256"
	headerAuthorization = "Authorization"
	headerSecurityToken = "X-Security-Token"
)

// CanonicalRequest is the text an SDK-HMAC-SHA256 signature covers: method,
// canonical URI, sorted query, the signed headers and the body hash, built
// from req as it travels (so a client signing it and a server verifying it
// derive the same text). body is the exact request body; it is not read
// when req carries X-Sdk-Content-Sha256.
//
// Path segments and query keys and values are decoded and re-escaped to
// RFC 3986 unreserved characters; a segment holding an escaped "/" stays one
// segment. The URI always ends in "/".
func CanonicalRequest(req *http.Request, signedHeaders []string, body []byte) (string, error) {
	uri, err := canonicalURI(req.URL)
	if err != nil {
		return "", err
	}
	query, err := canonicalQuery(req.URL.RawQuery)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(req.Method)
	b.WriteByte('\n')
	b.WriteString(uri)
	b.WriteByte('\n')
	b.WriteString(query)
	b.WriteByte('\n')
	for _, name := range signedHeaders {
		values := req.Header.Values(name)
		if len(values) == 0 && name == "host" {
			values = []string{req.Host}
		}
		for _, v := range slices.Sorted(slices.Values(values)) {
			b.WriteString(name)
			b.WriteByte(':')
			b.WriteString(strings.TrimSpace(v))
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signedHeaders, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash(req.Header, body))
	return b.String(), nil
}

// canonicalURI re-escapes every segment of u's path and appends "/".
func canonicalURI(u *url.URL) (string, error) {
	segments := strings.Split(u.EscapedPath(), "/")
	for i, s := range segments {
		raw, err := url.PathUnescape(s)
		if err != nil {
			return "", fmt.Errorf("canonical request: invalid path segment %q", s)
		}
		segments[i] = escapeRFC3986(raw)
	}
	uri := strings.Join(segments, "/")
	if !strings.HasSuffix(uri, "/") {
		uri += "/"
	}
	return uri, nil
}

// canonicalQuery sorts the parameters by key, then by value, and joins them
// as k=v with "&"; a parameter without "=" has an empty value.
func canonicalQuery(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", fmt.Errorf("canonical request: invalid query: %w", err)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(q)) {
		values := q[k]
		slices.Sort(values)
		for _, v := range values {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(escapeRFC3986(k))
			b.WriteByte('=')
			b.WriteString(escapeRFC3986(v))
		}
	}
	return b.String(), nil
}

// payloadHash is X-Sdk-Content-Sha256 when present, else the hex SHA-256 of
// body.
func payloadHash(h http.Header, body []byte) string {
	if v := h.Values(HeaderContentSha256); len(v) > 0 {
		return v[0]
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// signedHeaderNames lists the headers the SDK signs: every header present,
// lower-cased and sorted, except Content-Type* and names holding "_".
func signedHeaderNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		lower := strings.ToLower(k)
		if strings.HasPrefix(lower, "content-type") || strings.Contains(lower, "_") {
			continue
		}
		names = append(names, lower)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// signature is hex(HMAC-SHA256(secretKey, string to sign)), the string to
// sign being the algorithm, the X-Sdk-Date value and the hex SHA-256 of the
// canonical request.
func signature(secretKey, sdkDate, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	mac := hmac.New(sha256.New, []byte(secretKey))
	mac.Write([]byte(signAlgorithm + "\n" + sdkDate + "\n"))
	mac.Write([]byte(hex.EncodeToString(sum[:])))
	return hex.EncodeToString(mac.Sum(nil))
}

// Authorization is a parsed "SDK-HMAC-SHA256 Access=…, SignedHeaders=…,
// Signature=…" header. Fields the header lacks are empty.
type Authorization struct {
	AccessKey     string
	SignedHeaders []string
	Signature     string
}

// ErrLegacyAuthorization is returned for the Credential=AK/date/region/...
// layout of the legacy Java and Python DIS SDKs, which is not supported.
var ErrLegacyAuthorization = errors.New("the legacy Credential=AK/date/region/dis/sdk_request signature (Java and Python DIS SDKs) is not supported; sign as the Go SDK does (Access=AK)")

// ParseAuthorization parses the Authorization header of a request signed
// as the Go SDK signs.
func ParseAuthorization(header string) (Authorization, error) {
	alg, rest, _ := strings.Cut(strings.TrimSpace(header), " ")
	if alg != signAlgorithm {
		return Authorization{}, fmt.Errorf("unsupported algorithm %q, want %s", alg, signAlgorithm)
	}
	var a Authorization
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Authorization{}, errors.New("fields must be name=value separated by commas")
		}
		switch k {
		case "Access":
			a.AccessKey = v
		case "SignedHeaders":
			if v != "" {
				a.SignedHeaders = strings.Split(v, ";")
			}
		case "Signature":
			a.Signature = v
		case "Credential":
			return Authorization{}, ErrLegacyAuthorization
		default:
			return Authorization{}, fmt.Errorf("unknown field %q", k)
		}
	}
	return a, nil
}

// VerifySignature reports whether auth.Signature is the signature of req and
// body made with secretKey and req's X-Sdk-Date. It compares in constant
// time; whether the date is recent and the key known is the caller's
// business.
func VerifySignature(req *http.Request, body []byte, auth Authorization, secretKey string) (bool, error) {
	canonical, err := CanonicalRequest(req, auth.SignedHeaders, body)
	if err != nil {
		return false, err
	}
	want := signature(secretKey, req.Header.Get(HeaderSdkDate), canonical)
	return hmac.Equal([]byte(want), []byte(auth.Signature)), nil
}

// escapeRFC3986 percent-encodes every byte outside A-Z a-z 0-9 - _ . ~ with
// upper-case hex, the escaping of the canonical request and of query values
// on the wire (a space is %20, never "+").
func escapeRFC3986(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	return string(b)
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}
