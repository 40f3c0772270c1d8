package dislocal

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
)

const (
	authAK    = "AKEXAMPLE"
	authSK    = "secret-key-example"
	authToken = "iam-token-example"
)

// newAuthServer serves an embedded DIS that requires authentication, with
// a fixed clock; nil creds and tokens give a server that requires none.
func newAuthServer(t *testing.T, creds map[string]Credential, tokens []string) (*httptest.Server, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	srv, err := Open(Config{Dir: t.TempDir(), Now: clock.Now, RetentionCheckInterval: time.Hour,
		Credentials: creds, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); _ = srv.Close() })
	return hs, clock
}

// authCall sends one request, signed by signer (nil: unsigned), then
// changed by tamper, and returns the status and DIS error code.
func authCall(t *testing.T, hs *httptest.Server, signer disclient.Signer, method, path, body string, tamper func(*http.Request)) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Project-Id", project)
	req.Header.Set("User-Agent", "test")
	if signer != nil {
		if err := signer.Sign(req, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if tamper != nil {
		tamper(req)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb disclient.ErrorBody
	_ = json.Unmarshal(raw, &eb)
	return resp.StatusCode, eb.ErrorCode, eb.Message
}

// TestAuthRequired checks that a server with credentials serves correctly
// signed requests and refuses every kind of bad one with DIS's 441 codes.
func TestAuthRequired(t *testing.T) {
	hs, clock := newAuthServer(t,
		map[string]Credential{authAK: {SecretKey: authSK}, "AKBOUND": {SecretKey: authSK, ProjectID: "other"}},
		[]string{authToken})
	good := disclient.AKSKSigner{AccessKey: authAK, SecretKey: authSK, Now: clock.Now}
	const create = `{"stream_name":"s1","partition_count":1}`
	const streams = "/v2/" + project + "/streams"

	if st, code, msg := authCall(t, hs, good, "POST", streams, create, nil); st != http.StatusCreated {
		t.Fatalf("signed CreateStream: %d %s %s", st, code, msg)
	}
	if st, code, msg := authCall(t, hs, good, "GET", streams+"/s1/?limit_partitions=10", "", nil); st != http.StatusOK {
		t.Fatalf("signed DescribeStream with a trailing slash and a query: %d %s %s", st, code, msg)
	}
	within := disclient.AKSKSigner{AccessKey: authAK, SecretKey: authSK, Now: func() time.Time { return clock.Now().Add(-14 * time.Minute) }}
	if st, code, msg := authCall(t, hs, within, "GET", streams, "", nil); st != http.StatusOK {
		t.Fatalf("signature 14 minutes old: %d %s %s", st, code, msg)
	}
	if st, code, msg := authCall(t, hs, disclient.TokenSigner{Token: authToken}, "GET", streams, "", nil); st != http.StatusOK {
		t.Fatalf("valid X-Auth-Token: %d %s %s", st, code, msg)
	}

	stale := func(d time.Duration) disclient.Signer {
		return disclient.AKSKSigner{AccessKey: authAK, SecretKey: authSK, Now: func() time.Time { return clock.Now().Add(d) }}
	}
	cases := []struct {
		name   string
		signer disclient.Signer
		path   string
		body   string
		tamper func(*http.Request)
		status int
		code   string
	}{
		{name: "missing auth", status: 441, code: "DIS.4101"},
		{name: "tampered body", signer: good, body: create,
			tamper: func(r *http.Request) {
				r.Body = io.NopCloser(strings.NewReader(`{"stream_name":"s2","partition_count":1}`))
			}, status: 441, code: "DIS.4100"},
		{name: "tampered query", signer: good, path: streams + "?limit=1",
			tamper: func(r *http.Request) { r.URL.RawQuery = "limit=2" }, status: 441, code: "DIS.4100"},
		{name: "tampered signed header", signer: good,
			tamper: func(r *http.Request) { r.Header.Set("User-Agent", "other") }, status: 441, code: "DIS.4100"},
		{name: "wrong secret key", signer: disclient.AKSKSigner{AccessKey: authAK, SecretKey: "wrong", Now: clock.Now}, status: 441, code: "DIS.4100"},
		{name: "unknown access key", signer: disclient.AKSKSigner{AccessKey: "AKUNKNOWN", SecretKey: authSK, Now: clock.Now}, status: 441, code: "DIS.4107"},
		{name: "stale date", signer: stale(-16 * time.Minute), status: 441, code: "DIS.4105"},
		{name: "future date", signer: stale(16 * time.Minute), status: 441, code: "DIS.4105"},
		{name: "empty date", signer: good, tamper: func(r *http.Request) { r.Header.Del(disclient.HeaderSdkDate) }, status: 441, code: "DIS.4103"},
		{name: "unparsable date", signer: good, tamper: func(r *http.Request) { r.Header.Set(disclient.HeaderSdkDate, "2025-03-01") }, status: 441, code: "DIS.4104"},
		{name: "legacy layout", tamper: func(r *http.Request) {
			r.Header.Set("Authorization", "SDK-HMAC-SHA256 Credential="+authAK+"/20250301/cn-north-4/dis/sdk_request, SignedHeaders=host, Signature=00")
		}, status: 441, code: "DIS.4102"},
		{name: "other algorithm", tamper: func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }, status: 441, code: "DIS.4102"},
		{name: "empty access key", signer: good, tamper: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "Access="+authAK, "Access=", 1))
		}, status: 441, code: "DIS.4106"},
		{name: "no signature", signer: good, tamper: func(r *http.Request) {
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:strings.Index(a, ", Signature=")])
		}, status: 441, code: "DIS.4109"},
		{name: "wrong token", signer: disclient.TokenSigner{Token: "nope"}, status: 441, code: "DIS.4100"},
		{name: "key bound to another project", signer: disclient.AKSKSigner{AccessKey: "AKBOUND", SecretKey: authSK, Now: clock.Now}, status: 403, code: "DIS.4116"},
		{name: "unknown route still authenticated", path: "/nope", status: 441, code: "DIS.4101"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, path := "GET", streams
			if tc.body != "" {
				method = "POST"
			}
			if tc.path != "" {
				path = tc.path
			}
			st, code, msg := authCall(t, hs, tc.signer, method, path, tc.body, tc.tamper)
			if st != tc.status || code != tc.code {
				t.Fatalf("got %d %s (%s), want %d %s", st, code, msg, tc.status, tc.code)
			}
			if strings.Contains(msg, authSK) {
				t.Fatalf("the answer holds the secret key: %s", msg)
			}
		})
	}
	if st, _, msg := authCall(t, hs, nil, "GET", streams, "", func(r *http.Request) {
		r.Header.Set("Authorization", "SDK-HMAC-SHA256 Credential=AK/20250301/r/dis/sdk_request, SignedHeaders=host, Signature=00")
	}); st != 441 || !strings.Contains(msg, "legacy") {
		t.Errorf("the legacy layout's refusal does not say why: %d %s", st, msg)
	}
}

// TestNoCredentialsAcceptsAnything keeps the default: without credentials
// the embedded server serves unsigned and wrongly signed requests alike.
func TestNoCredentialsAcceptsAnything(t *testing.T) {
	hs, _ := newAuthServer(t, nil, nil)
	streams := "/v2/" + project + "/streams"
	if st, code, msg := authCall(t, hs, nil, "POST", streams, `{"stream_name":"s1","partition_count":1}`, nil); st != http.StatusCreated {
		t.Fatalf("unsigned CreateStream: %d %s %s", st, code, msg)
	}
	bogus := disclient.AKSKSigner{AccessKey: "any", SecretKey: "thing", Now: func() time.Time { return time.Unix(0, 0) }}
	if st, code, msg := authCall(t, hs, bogus, "GET", streams, "", nil); st != http.StatusOK {
		t.Fatalf("stale signature without credentials: %d %s %s", st, code, msg)
	}
}

// protobufSigner signs a request as a protobuf one; unsigned states the
// body as UNSIGNED-PAYLOAD, as the official SDK does for protobuf.
type protobufSigner struct {
	disclient.Signer
	unsigned bool
}

func (s protobufSigner) Sign(r *http.Request, body []byte) error {
	r.Header.Set("Content-Type", "application/x-protobuf")
	if s.unsigned {
		r.Header.Set(disclient.HeaderContentSha256, "UNSIGNED-PAYLOAD")
	}
	return s.Signer.Sign(r, body)
}

// TestChangedBodyRefused: a signed request replayed with another body is
// refused with DIS.4100, for protobuf bodies as for JSON ones, and so is a
// body stated as UNSIGNED-PAYLOAD or under a hash that is not its own.
func TestChangedBodyRefused(t *testing.T) {
	hs, clock := newAuthServer(t, map[string]Credential{authAK: {SecretKey: authSK}}, nil)
	good := disclient.AKSKSigner{AccessKey: authAK, SecretKey: authSK, Now: clock.Now}
	const records = "/v2/" + project + "/records"
	const streams = "/v2/" + project + "/streams"
	const original, changed = "\x0a\x02s1\x12\x05\x1a\x03abc", "\x0a\x02s1\x12\x05\x1a\x03xyz"
	swap := func(body string) func(*http.Request) {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
		}
	}
	if st, code, msg := authCall(t, hs, protobufSigner{Signer: good}, "POST", records, original, nil); st == 441 {
		t.Fatalf("a correctly signed protobuf request: %d %s %s", st, code, msg)
	}
	for _, tc := range []struct {
		name       string
		signer     disclient.Signer
		path, body string
		tamper     func(*http.Request)
	}{
		{name: "protobuf body changed", signer: protobufSigner{Signer: good}, path: records, body: original, tamper: swap(changed)},
		{name: "protobuf UNSIGNED-PAYLOAD", signer: protobufSigner{Signer: good, unsigned: true}, path: records, body: original},
		{name: "protobuf UNSIGNED-PAYLOAD body changed", signer: protobufSigner{Signer: good, unsigned: true}, path: records, body: original, tamper: swap(changed)},
		{name: "JSON body changed", signer: good, path: streams, body: `{"stream_name":"s1","partition_count":1}`, tamper: swap(`{"stream_name":"s9","partition_count":1}`)},
		{name: "JSON body under a stated hash not its own", signer: good, path: streams, body: `{"stream_name":"s1","partition_count":1}`,
			tamper: func(r *http.Request) { r.Header.Set(disclient.HeaderContentSha256, strings.Repeat("0", 64)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st, code, msg := authCall(t, hs, tc.signer, "POST", tc.path, tc.body, tc.tamper); st != 441 || code != "DIS.4100" {
				t.Fatalf("got %d %s (%s), want 441 DIS.4100", st, code, msg)
			}
		})
	}
}
