package sdkconformance_test

import (
	"errors"
	"testing"
	"time"

	"github.com/huaweicloud/huaweicloud-sdk-go-v3/core/auth/basic"
	"github.com/huaweicloud/huaweicloud-sdk-go-v3/core/config"
	"github.com/huaweicloud/huaweicloud-sdk-go-v3/core/sdkerr"
	dis "github.com/huaweicloud/huaweicloud-sdk-go-v3/services/dis/v2"
	"github.com/huaweicloud/huaweicloud-sdk-go-v3/services/dis/v2/model"

	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

const (
	authAK = "AKEXAMPLE"
	authSK = "secret-key-example"
)

// TestOfficialSDKSignatures drives a server that requires signatures with
// the official Go SDK, with permanent and temporary credentials, and wants
// its calls served; with a wrong secret key it wants them refused.
func TestOfficialSDKSignatures(t *testing.T) {
	hs := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) {
		c.RetentionCheckInterval = time.Hour
		c.Credentials = map[string]dislocal.Credential{authAK: {SecretKey: authSK}}
	})).HTTP
	client := func(sk, token string) *dis.DisClient {
		b := basic.NewCredentialsBuilder().WithAk(authAK).WithSk(sk).WithProjectId(sdkProject)
		if token != "" {
			b.WithSecurityToken(token)
		}
		cred, err := b.SafeBuild()
		if err != nil {
			t.Fatal(err)
		}
		hc, err := dis.DisClientBuilder().WithEndpoints([]string{hs.URL}).WithCredential(cred).
			WithHttpConfig(config.DefaultHttpConfig().WithHttpRoundTripper(hs.Client().Transport).WithTimeout(10 * time.Second)).
			SafeBuild()
		if err != nil {
			t.Fatal(err)
		}
		return dis.NewDisClient(hc)
	}

	c := client(authSK, "")
	if _, err := c.CreateStream(&model.CreateStreamRequest{Body: &model.CreateStreamReq{StreamName: "s1", PartitionCount: 1}}); err != nil {
		t.Fatalf("SDK CreateStream: %v", err)
	}
	key := "k e/y"
	put, err := client(authSK, "sts-token").SendRecords(&model.SendRecordsRequest{Body: &model.PutRecordsRequest{StreamName: "s1",
		Records: []model.PutRecordsRequestEntry{{Data: "aGVsbG8=", PartitionKey: &key}}}})
	if err != nil || put.FailedRecordCount == nil || *put.FailedRecordCount != 0 {
		t.Fatalf("SDK SendRecords with a security token: %v, %v", put, err)
	}
	start := "a b"
	if _, err := c.ListStreams(&model.ListStreamsRequest{StartStreamName: &start}); err != nil {
		t.Fatalf("SDK ListStreams with an escaped query: %v", err)
	}

	_, err = client("wrong", "").ListStreams(&model.ListStreamsRequest{})
	var se *sdkerr.ServiceResponseError
	if !errors.As(err, &se) || se.StatusCode != 441 {
		t.Fatalf("SDK with a wrong secret key: %v, want HTTP 441", err)
	}
}
