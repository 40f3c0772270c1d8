package disclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

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

// signCase is one request, described so that disclient's URL builder can
// build it, with the signature the official SDK gives it.
type signCase struct {
	name     string
	method   string
	segments []string    // path segments after /v2/{project_id}, unescaped
	query    [][2]string // name, value; unescaped
	body     string
	ctype    string
	token    string
	// sdkAuth is the Authorization header the official Go SDK (v0.1.207)
	// signs this request with; test/sdkconformance checks it live. The
	// protobuf body is the exception: the SDK sends it as UNSIGNED-PAYLOAD,
	// and disclient signs its hash as the SDK signs a JSON body's.
	sdkAuth string
}

var signCases = []signCase{
	{name: "GET records", method: "GET", segments: []string{"records"},
		query:   [][2]string{{"partition-cursor", "eyJnZXRJdGVyYXRvclBhcmFtIjp7fX0"}, {"max_fetch_bytes", "1048576"}},
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=6d245492fbdd2a5118785410ef0100991f881d3fa1cf5db60becbb3ec2708929"},
	{name: "GET cursor with escaped values", method: "GET", segments: []string{"cursors"},
		query: [][2]string{{"stream-name", "a b/c+d&e=f~g.h_i-j%k"}, {"partition-id", "shardId-0000000003"},
			{"cursor-type", "AT_TIMESTAMP"}, {"timestamp", "1700000000000"}, {"empty", ""}, {"unicode", "é☃"}},
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=962e3cf63515c411896535fc67e8e0e332c4e35697ef231cc3a644cdca093d14"},
	{name: "POST JSON body", method: "POST", segments: []string{"records"},
		body:    `{"stream_name":"s1","records":[{"data":"aGVsbG8=","partition_key":"k"}]}`,
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=a48d65a5c61e9c2b7b1c81ee88a9fe86d055a09f026c036c7876d9b3d2b3a210"},
	{name: "PUT scale", method: "PUT", segments: []string{"streams", "s1"},
		body:    `{"stream_name":"s1","target_partition_count":4}`,
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=e7779dcd59f6ccba7b9ea093e7d6109cf812fe6bcf65815321d5edebdf7498d7"},
	{name: "DELETE special path segment", method: "DELETE", segments: []string{"streams", "a b+c%d~é(x)"},
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=367e2f344b713619728b3ed0ee2476942bdc7f81028527f8990f570f032258c8"},
	{name: "DELETE checkpoints", method: "DELETE", segments: []string{"checkpoints"},
		query:   [][2]string{{"stream_name", "s1"}, {"app_name", "g1"}, {"checkpoint_type", "LAST_READ"}},
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=f7b63c81d67403ab25948c8a9aa0734264f736b64c8ba4f3a26261f9d6d50dbe"},
	{name: "GET consumer state nested path", method: "GET", segments: []string{"apps", "g 1", "streams", "s:1"},
		query:   [][2]string{{"checkpoint_type", "LAST_READ"}, {"limit", "100"}},
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=f706c465eb14239b313db88b8e6a9b0e2e4d3db8fc273cf43605b72e0048d117"},
	{name: "POST with security token", method: "POST", segments: []string{"checkpoints"}, token: signToken,
		body:    `{"app_name":"g1","checkpoint_type":"LAST_READ","stream_name":"s1","partition_id":"0","sequence_number":"5"}`,
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date;x-security-token, Signature=7ce01efe0d3778df6dd1c04ff7c10fea6a4d77a19af35f3420fa9e408dc09f23"},
	{name: "GET with security token", method: "GET", segments: []string{"streams"}, token: signToken,
		query:   [][2]string{{"limit", "10"}, {"start_stream_name", "x y"}},
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date;x-security-token, Signature=61af00c97bf73315fccd243153f24c308604150f283d5767b555e4a102d7ddb1"},
	{name: "POST protobuf body", method: "POST", segments: []string{"records"}, ctype: "application/x-protobuf; charset=utf-8",
		body:    "\x0a\x02s1\x12\x05\x1a\x03abc",
		sdkAuth: "SDK-HMAC-SHA256 Access=HPUAEXAMPLEACCESSKEY, SignedHeaders=user-agent;x-project-id;x-sdk-date, Signature=850726d1aaa4a9808449e0047a4b22111ec3982fb028f90ac087984dc9a99de8"},
}

func (tc signCase) contentType() string {
	if tc.ctype != "" {
		return tc.ctype
	}
	return "application/json"
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

// TestSignatureMatchesSDK signs each request as the client builds it with
// AKSKSigner and wants the Authorization header the official SDK made for
// it, byte for byte; and it wants VerifySignature to accept the request.
func TestSignatureMatchesSDK(t *testing.T) {
	for _, tc := range signCases {
		t.Run(tc.name, func(t *testing.T) {
			ours := tc.ourRequest(t)
			if err := (AKSKSigner{AccessKey: signAK, SecretKey: signSK, SecurityToken: tc.token, Now: fixedClock}).Sign(ours, []byte(tc.body)); err != nil {
				t.Fatal(err)
			}
			if got := ours.Header.Get(headerAuthorization); got != tc.sdkAuth {
				t.Errorf("Authorization\n got %s\nwant %s", got, tc.sdkAuth)
			}
			if got, want := ours.Header.Get(HeaderSdkDate), signTime.Format(SdkDateFormat); got != want {
				t.Errorf("X-Sdk-Date %q, want %q", got, want)
			}
			if tc.token != "" && ours.Header.Get(headerSecurityToken) != tc.token {
				t.Errorf("X-Security-Token not sent")
			}
			auth, err := ParseAuthorization(ours.Header.Get(headerAuthorization))
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := VerifySignature(ours, []byte(tc.body), auth, signSK); err != nil || !ok {
				t.Errorf("VerifySignature of our own request: %v, %v (URL %s)", ok, err, ours.URL)
			}
		})
	}
}

// TestSignatureCoversRequest checks that changing any signed part of a
// request changes its signature, the body included whatever its content
// type.
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
	if sign(proto, nil) == sign(other, nil) {
		t.Errorf("changing a protobuf body kept the signature: its hash must be signed as a JSON body's is")
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
