package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
)

// TestStartWarnings checks the warnings an operator gets at start: a
// secret given as a flag (named, never shown), PLAIN passwords over a
// SASL_PLAINTEXT listener others reach, a passthrough gateway's
// unauthenticated PLAINTEXT listener, a users file others may read, and
// ACLs kept in a DIS that checks no signatures; and none where the set-up
// is safe.
func TestStartWarnings(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	said := func() string { s := buf.String(); buf.Reset(); return s }

	t.Setenv("DISGW_DIS_SK", "")
	o, err := parseFlags([]string{"--embedded-dis-sk", "very-secret-value", "--embedded-dis-ak", "AK"})
	if err != nil {
		t.Fatal(err)
	}
	warnSecretFlags(o, log)
	if out := said(); !strings.Contains(out, "--embedded-dis-sk") || !strings.Contains(out, "DISGW_EMBEDDED_DIS_SK") || strings.Contains(out, "very-secret-value") {
		t.Errorf("a secret flag: %q", out)
	}
	t.Setenv("DISGW_EMBEDDED_DIS_SK", "very-secret-value")
	if o, err = parseFlags([]string{"--embedded-dis-ak", "AK"}); err != nil {
		t.Fatal(err)
	}
	warnSecretFlags(o, log)
	if out := said(); out != "" {
		t.Errorf("a secret from the environment: %q", out)
	}

	warnUnsafeListeners(&gateway.Config{Listen: "127.0.0.1:9092", SASLPassthrough: true,
		Listeners: []gateway.Listener{{Addr: "0.0.0.0:9093", Protocol: gateway.SASLPlaintext}}}, log)
	if out := said(); !strings.Contains(out, "0.0.0.0:9093") || !strings.Contains(out, "--listen -") {
		t.Errorf("passthrough over SASL_PLAINTEXT on any address, with a PLAINTEXT listener: %q", out)
	}
	warnUnsafeListeners(&gateway.Config{Listen: "-", SASLPassthrough: true,
		Listeners: []gateway.Listener{{Addr: "127.0.0.1:9093", Protocol: gateway.SASLPlaintext}, {Addr: "0.0.0.0:9094", Protocol: gateway.SASLSSL}}}, log)
	if out := said(); out != "" {
		t.Errorf("passthrough on loopback SASL_PLAINTEXT and SASL_SSL, no PLAINTEXT: %q", out)
	}

	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("alice:pw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(users, 0o644); err != nil {
		t.Fatal(err)
	}
	warnOpenFile(users, "the SASL users file", log)
	if out := said(); !strings.Contains(out, "SASL users file") {
		t.Errorf("a users file others may read: %q", out)
	}
	if err := os.Chmod(users, 0o600); err != nil {
		t.Fatal(err)
	}
	warnOpenFile(users, "the SASL users file", log)
	if out := said(); out != "" {
		t.Errorf("an owner-only users file: %q", out)
	}

	acl := &options{authorizer: gateway.AuthorizerACL}
	warnUnsignedACLs(context.Background(), acl, true, disclient.Config{}, log)
	if out := said(); !strings.Contains(out, "checks no signatures") {
		t.Errorf("ACLs on an embedded DIS without keys: %q", out)
	}
	for status, warns := range map[int]bool{http.StatusOK: true, 441: false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			if status == http.StatusOK {
				_, _ = w.Write([]byte(`{"total_number":0,"stream_names":[],"has_more_streams":false}`))
			} else {
				_, _ = w.Write([]byte(`{"errorCode":"DIS.4100","message":"Authorization error."}`))
			}
		}))
		warnUnsignedACLs(context.Background(), acl, false, disclient.Config{Endpoint: srv.URL, ProjectID: "p", Retry: disclient.RetryPolicy{MaxAttempts: 1}}, log)
		srv.Close()
		if out := said(); strings.Contains(out, "checks no signatures") != warns {
			t.Errorf("ACLs on a remote DIS answering %d: %q", status, out)
		}
	}
}
