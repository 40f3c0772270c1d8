package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// Passthrough starts only in front of a DIS that refuses a call signed
// with made-up keys: where DIS takes it (an embedded DIS without keys, or
// one that checks no signatures), any password would sign in as any
// access key, so Start fails saying what to set.
func TestPassthroughNeedsDISThatChecksSignatures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		starts bool
	}{
		{"DIS takes any signature", 200, `{"total_number":0,"stream_names":[],"has_more_streams":false}`, false},
		{"DIS checks the signature and denies on RBAC", 403, `{"errorCode":"DIS.4116","message":"RBAC denied"}`, false},
		{"DIS refuses the signature", 441, `{"errorCode":"DIS.4107","message":"bad AK"}`, true},
		{"IAM refuses the key", 401, `{"error_code":"APIGW.0301","error_msg":"Incorrect IAM authentication information"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := newFakeDISServer(t, tc.status, tc.body, &calls)
			gw, err := New(Config{
				Listen:          "127.0.0.1:0",
				SASLPassthrough: true,
				Listeners:       []Listener{{Addr: "127.0.0.1:0", Protocol: SASLPlaintext}},
				NewTenantDIS: func(ak, sk string) (disclient.API, error) {
					return disclient.New(disclient.Config{Endpoint: srv, ProjectID: "p",
						Signer: disclient.AKSKSigner{AccessKey: ak, SecretKey: sk}, Retry: disclient.RetryPolicy{MaxAttempts: 1}})
				},
			}, localDIS(t))
			if err != nil {
				t.Fatal(err)
			}
			err = gw.Start()
			t.Cleanup(func() { _ = gw.Close(context.Background()) })
			if calls.Load() != 1 {
				t.Fatalf("%d DIS calls, want the one that checks signatures", calls.Load())
			}
			switch {
			case tc.starts && err != nil:
				t.Fatalf("Start: %v", err)
			case !tc.starts && (err == nil || !errors.Is(err, disclient.ErrSignaturesNotChecked) || !strings.Contains(err.Error(), "--embedded-dis-ak")):
				t.Fatalf("Start = %v, want a refusal naming what to set", err)
			}
		})
	}
}

// Guesses sent in parallel count as they start, not when DIS has answered:
// with a burst of three and DIS slow to answer, ten sign-ins at once from
// one address reach DIS at most three times.
func TestParallelSignInGuessesCountedAtStart(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) > 1 {
			time.Sleep(300 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(441)
		_, _ = w.Write([]byte(`{"errorCode":"DIS.4100","message":"Authorization error."}`))
	}))
	t.Cleanup(srv.Close)
	gw := startGateway(t, Config{
		SASLPassthrough:       true,
		AuthFailureBurst:      3,
		AuthFailuresPerMinute: 1,
		SignInChecksPerSecond: 1000,
		Listeners:             []Listener{{Addr: "127.0.0.1:0", Protocol: SASLPlaintext}},
		NewTenantDIS: func(ak, sk string) (disclient.API, error) {
			return disclient.New(disclient.Config{Endpoint: srv.URL, ProjectID: "p",
				Signer: disclient.AKSKSigner{AccessKey: ak, SecretKey: sk}, Retry: disclient.RetryPolicy{MaxAttempts: 1}})
		},
	}, localDIS(t))
	calls.Store(1) // the start-up check; every later call is slow
	addr := gw.ListenerAddr(SASLPlaintext)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() { signIn(t, addr, fmt.Sprintf("AKGUESS%d", i), randomKey(t)) })
	}
	wg.Wait()
	if got := calls.Load() - 1; got > 3 {
		t.Fatalf("ten parallel guesses reached DIS %d times, want at most the burst of 3", got)
	}
}
