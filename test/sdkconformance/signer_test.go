package sdkconformance_test

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	sdksigner "github.com/huaweicloud/huaweicloud-sdk-go-v3/core/auth/signer"
	sdkrequest "github.com/huaweicloud/huaweicloud-sdk-go-v3/core/request"

	"github.com/disgw/disgw/disclient"
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

// signCase is one request as the official SDK is asked to build it. The
// same requests, with the URLs the SDK puts on the wire, are in
// disclient/aksk_test.go, which checks that disclient builds those URLs.
type signCase struct {
	name   string
	method string
	path   string      // after /v2/{project_id}/, unescaped, as the SDK is given it
	query  [][2]string // name, value; unescaped
	body   string
	ctype  string
	token  string
}

var signCases = []signCase{
	{name: "GET records", method: "GET", path: "records",
		query: [][2]string{{"partition-cursor", "eyJnZXRJdGVyYXRvclBhcmFtIjp7fX0"}, {"max_fetch_bytes", "1048576"}}},
	{name: "GET cursor with escaped values", method: "GET", path: "cursors",
		query: [][2]string{{"stream-name", "a b/c+d&e=f~g.h_i-j%k"}, {"partition-id", "shardId-0000000003"},
			{"cursor-type", "AT_TIMESTAMP"}, {"timestamp", "1700000000000"}, {"empty", ""}, {"unicode", "é☃"}}},
	{name: "POST JSON body", method: "POST", path: "records",
		body: `{"stream_name":"s1","records":[{"data":"aGVsbG8=","partition_key":"k"}]}`},
	{name: "PUT scale", method: "PUT", path: "streams/s1",
		body: `{"stream_name":"s1","target_partition_count":4}`},
	{name: "DELETE special path segment", method: "DELETE", path: "streams/a b+c%d~é(x)"},
	{name: "DELETE checkpoints", method: "DELETE", path: "checkpoints",
		query: [][2]string{{"stream_name", "s1"}, {"app_name", "g1"}, {"checkpoint_type", "LAST_READ"}}},
	{name: "GET consumer state nested path", method: "GET", path: "apps/g 1/streams/s:1",
		query: [][2]string{{"checkpoint_type", "LAST_READ"}, {"limit", "100"}}},
	{name: "POST with security token", method: "POST", path: "checkpoints", token: signToken,
		body: `{"app_name":"g1","checkpoint_type":"LAST_READ","stream_name":"s1","partition_id":"0","sequence_number":"5"}`},
	{name: "GET with security token", method: "GET", path: "streams", token: signToken,
		query: [][2]string{{"limit", "10"}, {"start_stream_name", "x y"}}},
	{name: "POST protobuf body", method: "POST", path: "records", ctype: "application/x-protobuf; charset=utf-8",
		body: "\x0a\x02s1\x12\x05\x1a\x03abc"},
}

// sdkRequest builds tc as the SDK's request object, headers as the SDK's
// BasicCredentials and HcHttpClient set them, with a fixed X-Sdk-Date.
func (tc signCase) sdkRequest() *sdkrequest.DefaultHttpRequest {
	ctype := tc.ctype
	if ctype == "" {
		ctype = "application/json"
	}
	b := sdkrequest.NewHttpRequestBuilder().
		WithEndpoint(signEndpoint).
		WithPath("/v2/"+signProject+"/"+tc.path).
		WithMethod(tc.method).
		AddHeaderParam("Content-Type", ctype).
		AddHeaderParam("User-Agent", signUserAgent).
		AddHeaderParam("X-Project-Id", signProject).
		AddHeaderParam(disclient.HeaderSdkDate, signTime.Format(disclient.SdkDateFormat))
	if tc.token != "" {
		b.AddHeaderParam("X-Security-Token", tc.token)
	}
	for _, kv := range tc.query {
		b.AddQueryParam(kv[0], reflect.ValueOf(kv[1]))
	}
	if tc.body != "" {
		b.WithBody("", tc.body)
	}
	return b.Build()
}

// TestSignatureMatchesSDK signs each request with the official SDK's signer
// and, as it goes on the wire, with disclient.AKSKSigner, and wants the
// same Authorization header byte for byte; and it wants
// disclient.VerifySignature (the embedded server's check) to accept the
// SDK's request.
func TestSignatureMatchesSDK(t *testing.T) {
	for _, tc := range signCases {
		t.Run(tc.name, func(t *testing.T) {
			sdkReq := tc.sdkRequest()
			sdkHeaders, err := sdksigner.Signer{}.Sign(sdkReq, signAK, signSK)
			if err != nil {
				t.Fatal(err)
			}
			want := sdkHeaders["Authorization"]
			if !strings.HasPrefix(want, "SDK-HMAC-SHA256 Access="+signAK+", ") {
				t.Fatalf("unexpected SDK Authorization %q", want)
			}
			for k, v := range sdkHeaders {
				sdkReq.AddHeaderParam(k, v)
			}
			wire, err := sdkReq.ConvertRequest()
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(wire.Body)
			if err != nil {
				t.Fatal(err)
			}

			auth, err := disclient.ParseAuthorization(wire.Header.Get("Authorization"))
			if err != nil {
				t.Fatal(err)
			}
			ok, err := disclient.VerifySignature(wire, body, auth, signSK)
			if err != nil || !ok {
				t.Errorf("VerifySignature of the SDK's wire request: %v, %v (URL %s)", ok, err, wire.URL)
			}

			ours := wire.Clone(t.Context())
			ours.Header.Del("Authorization")
			ours.Header.Del(disclient.HeaderSdkDate)
			ours.Header.Del("X-Security-Token")
			signer := disclient.AKSKSigner{AccessKey: signAK, SecretKey: signSK, SecurityToken: tc.token,
				Now: func() time.Time { return signTime }}
			if err := signer.Sign(ours, body); err != nil {
				t.Fatal(err)
			}
			if got := ours.Header.Get("Authorization"); got != want {
				t.Errorf("Authorization\n got %s\nwant %s", got, want)
			}
			if got := ours.Header.Get(disclient.HeaderSdkDate); got != sdkHeaders[disclient.HeaderSdkDate] {
				t.Errorf("X-Sdk-Date %q, SDK %q", got, sdkHeaders[disclient.HeaderSdkDate])
			}
			if tc.token != "" && ours.Header.Get("X-Security-Token") != tc.token {
				t.Errorf("X-Security-Token not sent")
			}
		})
	}
}
