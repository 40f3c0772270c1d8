package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
)

// Environment variables set flags, and the command line wins over them.
func TestFlagsFromEnvironment(t *testing.T) {
	t.Setenv("DISGW_DATA_DIR", "/from/env")
	t.Setenv("DISGW_DEFAULT_PARTITIONS", "6")
	t.Setenv("DISGW_LISTEN", "127.0.0.1:1")
	o, err := parseFlags([]string{"--listen", "127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	if o.dataDir != "/from/env" || o.defaultPartitions != 6 || o.listen != "127.0.0.1:2" {
		t.Fatalf("data dir %q, partitions %d, listen %q", o.dataDir, o.defaultPartitions, o.listen)
	}
}

func TestBadEnvironmentValue(t *testing.T) {
	t.Setenv("DISGW_DEFAULT_PARTITIONS", "many")
	if _, err := parseFlags(nil); err == nil {
		t.Fatal("a non-numeric DISGW_DEFAULT_PARTITIONS was accepted")
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/xdg")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != "127.0.0.1:9092" || o.dataDir != "/xdg/disgw" || o.fsync != "always" || o.autoCreate != "auto" || o.adminListen == "" {
		t.Fatalf("defaults: %+v", o)
	}
}

// TestSigner checks which signer each credential combination gives, and
// that keys meant for the other kind of backend are refused.
func TestSigner(t *testing.T) {
	cases := []struct {
		name     string
		o        options
		embedded bool
		want     string // %T of the signer, "" for none, "error"
	}{
		{name: "embedded, open", embedded: true},
		{name: "embedded with keys", o: options{embeddedAK: "ak", embeddedSK: "SECRET"}, embedded: true, want: "disclient.AKSKSigner"},
		{name: "embedded with DIS keys", o: options{disAK: "ak", disSK: "SECRET"}, embedded: true, want: "error"},
		{name: "DIS unsigned"},
		{name: "DIS AK/SK", o: options{disAK: "ak", disSK: "SECRET", disSecurityToken: "t"}, want: "disclient.AKSKSigner"},
		{name: "DIS token", o: options{disAuthToken: "t"}, want: "disclient.TokenSigner"},
		{name: "DIS with embedded keys", o: options{embeddedAK: "ak", embeddedSK: "SECRET"}, want: "error"},
		{name: "AK without SK", o: options{disAK: "ak"}, want: "error"},
		{name: "embedded SK without AK", o: options{embeddedSK: "SECRET"}, embedded: true, want: "error"},
		{name: "token with AK/SK", o: options{disAK: "ak", disSK: "SECRET", disAuthToken: "t"}, want: "error"},
		{name: "security token alone", o: options{disSecurityToken: "t"}, want: "error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCredentials(&tc.o)
			var s disclient.Signer
			if err == nil {
				s, err = newSigner(&tc.o, tc.embedded)
			}
			got := ""
			switch {
			case err != nil:
				got = "error"
			case s != nil:
				got = fmt.Sprintf("%T", s)
			}
			if got != tc.want {
				t.Fatalf("got %s (%v), want %s", got, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("the error shows a secret: %v", err)
			}
		})
	}
	s, _ := newSigner(&options{disAK: "ak", disSK: "SECRET", disSecurityToken: "tok"}, false)
	if a := s.(disclient.AKSKSigner); a.AccessKey != "ak" || a.SecretKey != "SECRET" || a.SecurityToken != "tok" {
		t.Errorf("AK/SK signer built wrong: %+v", a)
	}
	if got := embeddedCredentials(&options{embeddedAK: "ak", embeddedSK: "SECRET"}); got["ak"].SecretKey != "SECRET" {
		t.Errorf("embedded server credentials: %v", got)
	}
}

func TestParseListeners(t *testing.T) {
	tlsCfg := &tls.Config{}
	ls, err := parseListeners("SASL_SSL://0.0.0.0:9093, sasl_plaintext://:9095", "SASL_SSL://kafka.example:9093", tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Protocol != gateway.SASLSSL || ls[0].AdvertisedAddr != "kafka.example:9093" || ls[0].TLS != tlsCfg ||
		ls[1].Protocol != gateway.SASLPlaintext || ls[1].Addr != ":9095" || ls[1].TLS != nil {
		t.Fatalf("parsed %+v", ls)
	}
	for _, bad := range []string{"SSL://:1", "PLAINTEXT://:1", "FTP://:1", "SASL_PLAINTEXT:9092", "SASL_PLAINTEXT://:1,SASL_PLAINTEXT://:2"} {
		if _, err := parseListeners(bad, "", nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSASLMode checks --sasl-mode: passthrough refuses a users file and
// needs a SASL listener, and gives a factory signing with the client's keys.
func TestSASLMode(t *testing.T) {
	sasl := []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext}}
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("alice:pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := disclient.Config{Endpoint: "http://127.0.0.1:1", ProjectID: "p"}
	for _, tc := range []struct {
		name      string
		o         options
		listeners []gateway.Listener
		ok        bool
	}{
		{name: "users", o: options{saslMode: "users", saslUsersFile: users}, listeners: sasl, ok: true},
		{name: "passthrough", o: options{saslMode: "passthrough"}, listeners: sasl, ok: true},
		{name: "passthrough with users file", o: options{saslMode: "passthrough", saslUsersFile: users}, listeners: sasl},
		{name: "passthrough without SASL listener", o: options{saslMode: "passthrough"}},
		{name: "unknown mode", o: options{saslMode: "ldap"}, listeners: sasl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := gateway.Config{Listeners: tc.listeners}
			err := applySASLMode(&tc.o, &cfg, base)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			if tc.ok && (cfg.SASLPassthrough != (tc.o.saslMode == "passthrough") || (cfg.NewTenantDIS != nil) != cfg.SASLPassthrough || (cfg.SASL != nil) == cfg.SASLPassthrough) {
				t.Fatalf("config: passthrough %v, factory %v, users %v", cfg.SASLPassthrough, cfg.NewTenantDIS != nil, cfg.SASL != nil)
			}
			if cfg.NewTenantDIS != nil {
				if _, err := cfg.NewTenantDIS("ak", "sk"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
