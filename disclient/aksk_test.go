package disclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	sdksigner "github.com/huaweicloud/huaweicloud-sdk-go-v3/core/auth/signer"
	sdkrequest "github.com/huaweicloud/huaweicloud-sdk-go-v3/core/request"
	"github.com/rs/zerolog"
)

const (
	signAK        = "HPUAEXAMPLEACCESSKEY"
	signSK        = "sEcReT/k3y+WITH=odd&chars"
	signToken     = "temporary-security-token-value"
	signEndpoint  = "https://dis.cn-north-4.myhuaweicloud.com"
	signProject   = "0a1b2c3d4e5f"
	signUserAgent = "huaweicloud-usdk-go/3.0"
)

var signTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// signCase is one request, described so that both the official SDK and
// disclient's URL builder can build it.
type signCase struct {
	name     string
	method   string
	segments []string    // path segments after /v2/{project_id}, unescaped
	query    [][2]string // name, value; unescaped
	body     string
	ctype    string
	token    string
}

var signCases = []signCase{
	{name: "GET records", method: "GET", segments: []string{"records"},
		query: [][2]string{{"partition-cursor", "eyJnZXRJdGVyYXRvclBhcmFtIjp7fX0"}, {"max_fetch_bytes", "1048576"}}},
	{name: "GET cursor with escaped values", method: "GET", segments: []string{"cursors"},
		query: [][2]string{{"stream-name", "a b/c+d&e=f~g.h_i-j%k"}, {"partition-id", "shardId-0000000003"},
			{"cursor-type", "AT_TIMESTAMP"}, {"timestamp", "1700000000000"}, {"empty", ""}, {"unicode", "é☃"}}},
	{name: "POST JSON body", method: "POST", segments: []string{"records"},
		body: `{"stream_name":"s1","records":[{"data":"aGVsbG8=","partition_key":"k"}]}`},
	{name: "PUT scale", method: "PUT", segments: []string{"streams", "s1"},
		body: `{"stream_name":"s1","target_partition_count":4}`},
	{name: "DELETE special path segment", method: "DELETE", segments: []string{"streams", "a b+c%d~é(x)"}},
	{name: "DELETE checkpoints", method: "DELETE", segments: []string{"checkpoints"},
		query: [][2]string{{"stream_name", "s1"}, {"app_name", "g1"}, {"checkpoint_type", "LAST_READ"}}},
	{name: "GET consumer state nested path", method: "GET", segments: []string{"apps", "g 1", "streams", "s:1"},
		query: [][2]string{{"checkpoint_type", "LAST_READ"}, {"limit", "100"}}},
	{name: "POST with security token", method: "POST", segments: []string{"checkpoints"}, token: signToken,
		body: `{"app_name":"g1","checkpoint_type":"LAST_READ","stream_name":"s1","partition_id":"0","sequence_number":"5"}`},
	{name: "GET with security token", method: "GET", segments: []string{"streams"}, token: signToken,
		query: [][2]string{{"limit", "10"}, {"start_stream_name", "x y"}}},
	{name: "POST protobuf body", method: "POST", segments: []string{"records"}, ctype: "application/x-protobuf; charset=utf-8",
		body: "\x0a\x02s1\x12\x05\x1a\x03abc"},
}

func (tc signCase) contentType() string {
	if tc.ctype != "" {
		return tc.ctype
	}
	return "application/json"
}

// sdkRequest builds tc as the SDK's request object, headers as the SDK's
// BasicCredentials and HcHttpClient set them, with a fixed X-Sdk-Date.
func (tc signCase) sdkRequest() *sdkrequest.DefaultHttpRequest {
	b := sdkrequest.NewHttpRequestBuilder().
		WithEndpoint(signEndpoint).
		WithPath("/v2/"+signProject+"/"+strings.Join(tc.segments, "/")).
		WithMethod(tc.method).
		AddHeaderParam("Content-Type", tc.contentType()).
		AddHeaderParam("User-Agent", signUserAgent).
		AddHeaderParam("X-Project-Id", signProject).
		AddHeaderParam(HeaderSdkDate, signTime.Format(SdkDateFormat))
	if tc.token != "" {
		b.AddHeaderParam(headerSecurityToken, tc.token)
	}
	for _, kv := range tc.query {
		b.AddQueryParam(kv[0], reflect.ValueOf(kv[1]))
	}
	if tc.body != "" {
		b.WithBody("", tc.body)
	}
	return b.Build()
}

// ourRequest builds tc the way Client.attempt does.
func (tc signCase) ourRequest(t *testing.T) *http.Request {
	t.Helper()
	u := newURL(signEndpoint+"/v2/"+signProject, "")
	for _, s := range tc.segments {
		u.segment(s)
	}
	for _, kv := range tc.query {
		u.param(kv[0], kv[1])
	}
	req, err := http.NewRequest(tc.method, u.String(), strings.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", tc.contentType())
	req.Header.Set("X-Project-Id", signProject)
	req.Header.Set("User-Agent", signUserAgent)
	return req
}

func fixedClock() time.Time { return signTime }

// TestSignatureMatchesSDK signs each request with the official SDK's signer
// and with AKSKSigner and wants the same Authorization header, byte for
// byte; and it wants VerifySignature to accept the request exactly as the
// SDK puts it on the wire.
func TestSignatureMatchesSDK(t *testing.T) {
	for _, tc := range signCases {
		t.Run(tc.name, func(t *testing.T) {
			sdkReq := tc.sdkRequest()
			sdkHeaders, err := sdksigner.Signer{}.Sign(sdkReq, signAK, signSK)
			if err != nil {
				t.Fatal(err)
			}
			want := sdkHeaders[headerAuthorization]
			if !strings.HasPrefix(want, signAlgorithm+" Access="+signAK+", ") {
				t.Fatalf("unexpected SDK Authorization %q", want)
			}

			ours := tc.ourRequest(t)
			if err := (AKSKSigner{AccessKey: signAK, SecretKey: signSK, SecurityToken: tc.token, Now: fixedClock}).Sign(ours, []byte(tc.body)); err != nil {
				t.Fatal(err)
			}
			if got := ours.Header.Get(headerAuthorization); got != want {
				t.Errorf("Authorization\n got %s\nwant %s", got, want)
			}
			if got := ours.Header.Get(HeaderSdkDate); got != sdkHeaders[HeaderSdkDate] {
				t.Errorf("X-Sdk-Date %q, SDK %q", got, sdkHeaders[HeaderSdkDate])
			}
			if tc.token != "" && ours.Header.Get(headerSecurityToken) != tc.token {
				t.Errorf("X-Security-Token not sent")
			}

			for k, v := range sdkHeaders {
				sdkReq.AddHeaderParam(k, v)
			}
			wire, err := sdkReq.ConvertRequest()
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(wire.Body)
			auth, err := ParseAuthorization(wire.Header.Get(headerAuthorization))
			if err != nil {
				t.Fatal(err)
			}
			ok, err := VerifySignature(wire, body, auth, signSK)
			if err != nil || !ok {
				t.Errorf("VerifySignature of the SDK's wire request: %v, %v (URL %s)", ok, err, wire.URL)
			}
		})
	}
}

// TestSignatureCoversRequest checks that changing any signed part of a
// request changes its signature, and that the body is left out only for
// non-JSON content, as the SDK does.
func TestSignatureCoversRequest(t *testing.T) {
	base := signCase{method: "POST", segments: []string{"records"}, query: [][2]string{{"a", "1"}}, body: `{"x":1}`}
	sign := func(tc signCase, edit func(*http.Request)) string {
		req := tc.ourRequest(t)
		if edit != nil {
			edit(req)
		}
		if err := (AKSKSigner{AccessKey: signAK, SecretKey: signSK, Now: fixedClock}).Sign(req, []byte(tc.body)); err != nil {
			t.Fatal(err)
		}
		return req.Header.Get(headerAuthorization)
	}
	ref := sign(base, nil)

	changes := map[string]signCase{}
	c := base
	c.body = `{"x":2}`
	changes["body"] = c
	c = base
	c.query = [][2]string{{"a", "2"}}
	changes["query value"] = c
	c = base
	c.segments = []string{"records", "x"}
	changes["path"] = c
	c = base
	c.method = "PUT"
	changes["method"] = c
	for what, tc := range changes {
		if sign(tc, nil) == ref {
			t.Errorf("changing the %s kept the signature", what)
		}
	}
	if sign(base, func(r *http.Request) { r.Header.Set("X-Project-Id", "other") }) == ref {
		t.Errorf("changing a header kept the signature")
	}
	if sign(base, func(r *http.Request) { r.Header.Set("X-Extra", "v") }) == ref {
		t.Errorf("adding a header kept the signature")
	}

	proto := base
	proto.ctype = "application/x-protobuf"
	other := proto
	other.body = "different"
	if sign(proto, nil) != sign(other, nil) {
		t.Errorf("a protobuf body was signed; the SDK sends X-Sdk-Content-Sha256: UNSIGNED-PAYLOAD instead")
	}
}

// TestSignerRefusesMissingKeys checks that a half-configured signer fails
// instead of sending an unsigned request, and says nothing of the secret.
func TestSignerRefusesMissingKeys(t *testing.T) {
	req := signCases[0].ourRequest(t)
	if err := (AKSKSigner{SecretKey: signSK}).Sign(req, nil); err == nil || strings.Contains(err.Error(), signSK) {
		t.Errorf("missing AK: %v", err)
	}
	if err := (AKSKSigner{AccessKey: signAK}).Sign(req, nil); err == nil {
		t.Errorf("missing SK: no error")
	}
	if err := (TokenSigner{}).Sign(req, nil); err == nil {
		t.Errorf("missing token: no error")
	}
	if err := (TokenSigner{Token: "tok"}).Sign(req, nil); err != nil || req.Header.Get(HeaderAuthToken) != "tok" {
		t.Errorf("token signer: %v, header %q", err, req.Header.Get(HeaderAuthToken))
	}
}

// TestSignersHideSecrets prints and marshals the signers every usual way and
// wants neither the secret key nor a token in the output.
func TestSignersHideSecrets(t *testing.T) {
	aksk := AKSKSigner{AccessKey: signAK, SecretKey: signSK, SecurityToken: signToken}
	token := TokenSigner{Token: signToken}
	var out bytes.Buffer
	log := zerolog.New(&out)
	for _, v := range []any{aksk, &aksk, token, &token, Config{Signer: aksk}, Config{Signer: &token}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		log.Info().Interface("signer", v).Msg("")
	}
	log.Info().Object("aksk", aksk).Object("token", token).Msg("")
	for _, secret := range []string{signSK, signToken} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("a secret was printed:\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), signAK) {
		t.Errorf("the access key, useful to tell credentials apart, was not shown")
	}
}
