package dislocaltest_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

// TestOptionsReachServerAndClient starts a server that requires signatures,
// behind a handler that counts requests, with a signing client: the client
// must get through, the handler must have seen its calls, and an unsigned
// call must be refused, so each option really reached its side.
func TestOptionsReachServerAndClient(t *testing.T) {
	const ak, sk = "AKTEST", "test-secret"
	var seen atomic.Int32
	srv := dislocaltest.Start(t,
		dislocaltest.WithDIS(func(c *dislocal.Config) {
			c.Credentials = map[string]dislocal.Credential{ak: {SecretKey: sk}}
		}),
		dislocaltest.WithClient(func(c *disclient.Config) {
			c.Signer = disclient.AKSKSigner{AccessKey: ak, SecretKey: sk}
		}),
		dislocaltest.WithHandler(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.Add(1)
				next.ServeHTTP(w, r)
			})
		}))
	if err := srv.Client.CreateStream(t.Context(), &disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1}); err != nil {
		t.Fatalf("signed CreateStream: %v", err)
	}
	if seen.Load() != 1 {
		t.Fatalf("the wrapping handler saw %d requests, want 1", seen.Load())
	}
	resp, err := srv.HTTP.Client().Get(srv.URL + "/v2/" + dislocaltest.ProjectID + "/streams")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 441 {
		t.Fatalf("unsigned ListStreams: HTTP %d, want 441", resp.StatusCode)
	}
}

// TestCloseIsIdempotent closes a server twice; the test's own cleanup then
// closes it a third time, and none of them may fail.
func TestCloseIsIdempotent(t *testing.T) {
	srv := dislocaltest.Start(t)
	for range 2 {
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
