package main

import (
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
)

// The gateway's own DIS client is the in-process one only with the
// embedded server and --embedded-dis-transport local, its default.
func TestOwnDISTransport(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.embeddedTransport != "local" {
		t.Errorf("--embedded-dis-transport defaults to %q, want local", o.embeddedTransport)
	}
	srv, err := dislocal.Open(dislocal.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dis, err := disclient.New(disclient.Config{Endpoint: "http://127.0.0.1:1", ProjectID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		transport string
		local     *dislocal.Server
		http      bool
	}{
		{"local", srv, false},
		{"local", nil, true},
		{"http", srv, true},
	} {
		api, err := ownDIS(c.transport, c.local, "p", dis)
		if err != nil {
			t.Fatalf("%s: %v", c.transport, err)
		}
		if got := api == disclient.API(dis); got != c.http {
			t.Errorf("--embedded-dis-transport %s, embedded %v: HTTP client %v, want %v", c.transport, c.local != nil, got, c.http)
		}
	}
	if _, err := ownDIS("grpc", srv, "p", dis); err == nil {
		t.Error("--embedded-dis-transport grpc accepted")
	}
}
