package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/disgw/disgw/disclient"
)

// fakeDISGateway returns a passthrough gateway whose tenants' DIS clients
// call an HTTP server that answers every request with status and body, and
// a count of the requests that server received.
func fakeDISGateway(t *testing.T, status int, body string, tune func(*Config)) (*Gateway, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := newFakeDISServer(t, status, body, &calls)
	gw := newIdleTestGateway(t, &metaCountingDIS{}, func(c *Config) {
		c.SASLPassthrough = true
		c.NewTenantDIS = func(ak, sk string) (disclient.API, error) {
			return disclient.New(disclient.Config{
				Endpoint:  srv,
				ProjectID: "p",
				Signer:    disclient.AKSKSigner{AccessKey: ak, SecretKey: sk},
				Retry:     disclient.RetryPolicy{MaxAttempts: 1},
			})
		}
		if tune != nil {
			tune(c)
		}
	})
	return gw, &calls
}

// newFakeDISServer starts an HTTP server that answers every request with
// status and body, counting them in calls, and returns its URL.
func newFakeDISServer(t *testing.T, status int, body string, calls *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Only DIS's own answer that it checked the signature and refused on RBAC
// grounds counts as a sign-in; a 403 from anything in front of DIS (a proxy,
// an API gateway) without DIS's code, or a 441, is a failure and caches no
// tenant.
func TestPassthroughSignInNeedsDISProof(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"success", 200, `{"total_number":0,"stream_names":[],"has_more_streams":false}`, true},
		{"DIS RBAC denial", 403, `{"errorCode":"DIS.4116","message":"RBAC denied"}`, true},
		{"bare 403", 403, "", false},
		{"proxy 403 page", 403, "<html>Forbidden</html>", false},
		{"API gateway 403", 403, `{"error_code":"APIGW.0301","error_msg":"Incorrect IAM authentication information"}`, false},
		{"403 with another DIS code", 403, `{"errorCode":"DIS.4107","message":"bad AK"}`, false},
		{"DIS signature failure", 441, `{"errorCode":"DIS.4106","message":"signature mismatch"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, calls := fakeDISGateway(t, tc.status, tc.body, nil)
			tn, err := gw.passthroughTenant(context.Background(), "AK", "SK")
			if calls.Load() != 1 {
				t.Fatalf("%d DIS calls, want 1", calls.Load())
			}
			if tc.ok {
				if err != nil || tn == nil {
					t.Fatalf("sign-in refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("sign-in accepted")
			}
			if errors.Is(err, errTooManyTenants) || len(gw.tenants) != 0 {
				t.Fatalf("error %v, %d tenants cached", err, len(gw.tenants))
			}
		})
	}
}
