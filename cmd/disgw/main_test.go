package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/gateway/cluster"
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

// TestSASLMode checks --sasl-mode: a users file with an empty password is
// refused at start-up; passthrough refuses a users file and needs a SASL
// listener and, with the embedded DIS, the keys that make it check
// signatures, and gives a factory signing with the client's keys.
func TestSASLMode(t *testing.T) {
	sasl := []gateway.Listener{{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext}}
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("alice:pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyPassword := filepath.Join(dir, "empty-password")
	if err := os.WriteFile(emptyPassword, []byte("alice:pw\nbob:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := disclient.Config{Endpoint: "http://127.0.0.1:1", ProjectID: "p"}
	for _, tc := range []struct {
		name      string
		o         options
		listeners []gateway.Listener
		embedded  bool
		ok        bool
	}{
		{name: "users", o: options{saslMode: "users", saslUsersFile: users}, listeners: sasl, ok: true},
		{name: "user with an empty password", o: options{saslMode: "users", saslUsersFile: emptyPassword}, listeners: sasl},
		{name: "passthrough", o: options{saslMode: "passthrough"}, listeners: sasl, ok: true},
		{name: "passthrough with users file", o: options{saslMode: "passthrough", saslUsersFile: users}, listeners: sasl},
		{name: "passthrough without SASL listener", o: options{saslMode: "passthrough"}},
		{name: "passthrough over an embedded DIS without keys", o: options{saslMode: "passthrough"}, listeners: sasl, embedded: true},
		{name: "passthrough over an embedded DIS with keys", o: options{saslMode: "passthrough", embeddedAK: "AK", embeddedSK: "SK"}, listeners: sasl, embedded: true, ok: true},
		{name: "unknown mode", o: options{saslMode: "ldap"}, listeners: sasl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := gateway.Config{Listeners: tc.listeners}
			err := applySASLMode(&tc.o, &cfg, base, tc.embedded)
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

// TestAdminPprof checks that /debug/pprof/ is served only with --pprof,
// never its command line (which shows secrets passed as flags), while the
// admin endpoints are served either way.
func TestAdminPprof(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(adminHandler(reg, nil, on))
		profiles := http.StatusNotFound
		if on {
			profiles = http.StatusOK
		}
		for path, want := range map[string]int{
			"/debug/pprof/":        profiles,
			"/debug/pprof/heap":    profiles,
			"/debug/pprof/cmdline": http.StatusNotFound,
			"/healthz":             http.StatusOK,
			"/metrics":             http.StatusOK,
		} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("pprof %v: GET %s = %d, want %d", on, path, resp.StatusCode, want)
			}
		}
		srv.Close()
	}
}

// TestMemoryLimit checks --memory-limit: its default, that 0 sets no
// limit, that a set GOMEMLIMIT wins over the flag, and that a bad value is
// refused.
func TestMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.memoryLimit != 200<<20 {
		t.Fatalf("default --memory-limit %d", o.memoryLimit)
	}
	if o, err = parseFlags([]string{"--memory-limit", "0"}); err != nil || o.memoryLimit != 0 {
		t.Fatalf("--memory-limit 0: %d, %v", o.memoryLimit, err)
	}
	if _, err := parseFlags([]string{"--memory-limit", "lots"}); err == nil {
		t.Fatal("a non-numeric --memory-limit was accepted")
	}
	t.Setenv("DISGW_MEMORY_LIMIT", "1000")
	if o, err = parseFlags(nil); err != nil || o.memoryLimit != 1000 {
		t.Fatalf("DISGW_MEMORY_LIMIT: %d, %v", o.memoryLimit, err)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if got, from := applyMemoryLimit(150<<20, ""); got != 150<<20 || from != "flag" || debug.SetMemoryLimit(-1) != 150<<20 {
		t.Fatalf("flag: %d from %q, runtime %d", got, from, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got, from := applyMemoryLimit(0, ""); from != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("0: %d from %q, runtime %d", got, from, debug.SetMemoryLimit(-1))
	}
	// The runtime read GOMEMLIMIT at start; the flag must leave it alone.
	debug.SetMemoryLimit(300 << 20)
	if got, from := applyMemoryLimit(150<<20, "300MiB"); got != 300<<20 || from != "GOMEMLIMIT" || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Fatalf("GOMEMLIMIT: %d from %q, runtime %d", got, from, debug.SetMemoryLimit(-1))
	}
}

// clusterFrom runs newCluster over the gateway settings args give, with a
// peer secret unless args set one.
func clusterFrom(t *testing.T, args ...string) (gateway.Config, *cluster.Cluster, error) {
	t.Helper()
	o, err := parseFlags(append([]string{"--peer-secret", "0123456789abcdef"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{Listen: o.listen, AdvertisedAddr: o.advertised}
	if cfg.Listeners, err = parseListeners(o.listeners, o.advertisedListeners, &tls.Config{}); err != nil {
		t.Fatal(err)
	}
	c, err := newCluster(o, &cfg, zerolog.Nop())
	return cfg, c, err
}

// TestClusterFlags checks --node-id, --peers and --peers-dns: what
// membership and node id they give, and the settings refused at start.
func TestClusterFlags(t *testing.T) {
	cfg, c, err := clusterFrom(t, "--node-id", "4")
	if err != nil || c != nil || cfg.Membership != nil || cfg.NodeID != 4 {
		t.Fatalf("alone: cluster %v, membership %v, node %d, %v", c, cfg.Membership, cfg.NodeID, err)
	}

	cfg, c, err = clusterFrom(t, "--node-id", "1", "--listen", "0.0.0.0:19092", "--peers", "0=gw0:9092,1=gw1:19092,2=gw2:9092")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Membership != gateway.Membership(c) || cfg.NodeID != 1 || cfg.AdvertisedAddr != "gw1:19092" {
		t.Fatalf("--peers: membership %v, node %d, advertised %q", cfg.Membership, cfg.NodeID, cfg.AdvertisedAddr)
	}
	if got := c.Live(); len(got) != 3 || got[1] != (cluster.Peer{ID: 1, Host: "gw1", Port: 19092}) {
		t.Fatalf("live at start %+v, want all three", got)
	}

	cfg, _, err = clusterFrom(t, "--listen", "-", "--listeners", "SSL://0.0.0.0:9093", "--advertised-listeners", "SSL://gw0:9093", "--peers", "0=gw0:9093,1=gw1:9093")
	if err != nil || cfg.Listeners[0].AdvertisedAddr != "gw0:9093" {
		t.Fatalf("--peers on an SSL first listener: %+v, %v", cfg.Listeners, err)
	}

	cfg, c, err = clusterFrom(t, "--listen", "10.1.2.3:9092", "--peers-dns", "gateways.example:9092")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeID != 0x0a010203 || c.Self().ID != cfg.NodeID {
		t.Fatalf("--peers-dns: node id %#x, want 10.1.2.3's bits", cfg.NodeID)
	}

	for name, args := range map[string][]string{
		"negative node id":              {"--node-id", "-1"},
		"own id missing":                {"--node-id", "3", "--peers", "0=gw0:9092,1=gw1:9092"},
		"id repeated":                   {"--peers", "0=gw0:9092,0=gw1:9092"},
		"address repeated":              {"--peers", "0=gw0:9092,1=gw0:9092"},
		"not ID=host:port":              {"--peers", "gw0:9092"},
		"own entry not the advertised":  {"--advertised-addr", "gw9:9092", "--peers", "0=gw0:9092,1=gw1:9092"},
		"both lists":                    {"--peers", "0=gw0:9092", "--peers-dns", "gw:9092"},
		"node id with DNS":              {"--node-id", "0", "--listen", "10.0.0.1:9092", "--peers-dns", "gw:9092"},
		"DNS, advertised a host name":   {"--advertised-addr", "gw0:9092", "--peers-dns", "gw:9092"},
		"DNS, listening on any address": {"--listen", "0.0.0.0:9092", "--peers-dns", "gw:9092"},
		"DNS, another port":             {"--listen", "10.0.0.1:9093", "--peers-dns", "gw:9092"},
		"DNS without a port":            {"--listen", "10.0.0.1:9092", "--peers-dns", "gw"},
		"zero probe interval":           {"--peers", "0=gw0:9092", "--peer-probe-interval", "0s"},
		"dead before a probe":           {"--peers", "0=gw0:9092", "--peer-probe-interval", "2s", "--peer-dead-after", "1s"},
		"no peer secret":                {"--peer-secret", "", "--peers", "0=gw0:9092"},
		"a short peer secret":           {"--peer-secret", "short", "--peers-dns", "gw:9092", "--listen", "10.0.0.1:9092"},
	} {
		if _, c, err := clusterFrom(t, args...); err == nil {
			t.Errorf("%s: %v accepted (%v)", name, args, c.Live())
		}
	}
	if _, _, err := clusterFrom(t, "--peers", "0=gw0:9092,0=gw1:9092"); err == nil || !strings.Contains(err.Error(), "--peers") {
		t.Errorf("the error does not name the flag: %v", err)
	}
}

// TestEmbeddedDISAlone runs disgw with no Kafka listener: it serves the
// embedded DIS REST API alone, which a DIS client can use, with health on
// the admin listener, and stops when told. Every file and directory it
// made in its data directory is its owner's alone.
func TestEmbeddedDISAlone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := make(chan serving, 1)
	done := make(chan error, 1)
	dataDir := filepath.Join(t.TempDir(), "data")
	defer checkOwnerOnly(t, dataDir)
	go func() {
		done <- serve(ctx, []string{"--listen", "-", "--embedded-dis-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
			"--data-dir", dataDir, "--fsync", "none", "--log-level", "warn"}, func(s serving) { up <- s })
	}()
	var s serving
	select {
	case s = <-up:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not serving after 30s")
	}
	if s.embeddedDIS == "" || s.admin == "" {
		t.Fatalf("serving %+v", s)
	}
	dis, err := disclient.New(disclient.Config{Endpoint: s.embeddedDIS, ProjectID: "disgw"})
	if err != nil {
		t.Fatal(err)
	}
	defer dis.Close()
	if err := dis.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "alone", PartitionCount: 2}); err != nil {
		t.Fatal(err)
	}
	streams, err := dis.ListStreams(ctx, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(streams.StreamNames, "alone") {
		t.Fatalf("streams %v, want the one created", streams.StreamNames)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + s.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d", path, resp.StatusCode)
		}
	}
	// No gateway runs: none of its metrics are registered.
	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if bytes.Contains(metrics, []byte("disgw_connections")) || !bytes.Contains(metrics, []byte("go_goroutines")) {
		t.Errorf("metrics of a gateway that should not run, or none at all:\n%s", metrics)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("not stopped 30s after its context ended")
	}
	for _, bad := range [][]string{
		{"--listen", "-", "--dis-endpoint", "http://127.0.0.1:1", "--dis-project-id", "p"},
		{"--listen", "-", "--peers", "0=gw0:9092"},
	} {
		if err := serve(context.Background(), bad, nil); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// The keeper's and the transaction coordinator's flags must be positive: a
// zero would stop rewrites or their reads, and kept topics would lose what
// DIS expires, or leave transactions nowhere to live.
func TestKeepFlagsMustBePositive(t *testing.T) {
	for _, flag := range []string{"--compaction-map-bytes", "--keep-interval", "--keep-read-bytes-per-second", "--transaction-state-partitions", "--transaction-max-timeout"} {
		args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "", "--embedded-dis-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), flag, "0"}
		if err := serve(context.Background(), args, nil); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s 0: %v", flag, err)
		}
	}
}

// TestEmbeddedDataDirOwnerOnly: the data directory disgw creates for the
// embedded DIS is readable by its owner only.
func TestEmbeddedDataDirOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh", "data")
	o := options{dataDir: dir, fsync: "none", embeddedListen: "127.0.0.1:0"}
	srv, hs, _, err := startEmbedded(&o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Close(); _ = srv.Close() })
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o700 {
		t.Fatalf("data directory mode %o, want 700", mode)
	}
}

// TestEmbeddedDISLimits: --embedded-dis-limits=dis holds the embedded DIS
// to DIS's account quota (DIS.4308 past 50 COMMON partitions); none, the
// default, does not; anything else is refused at start.
func TestEmbeddedDISLimits(t *testing.T) {
	for _, tc := range []struct {
		limits string
		want   string // "" for success, or the DIS code of the 51-partition stream
	}{
		{"none", ""},
		{"dis", disclient.CodeQuotaExceeded},
	} {
		o := options{dataDir: t.TempDir(), fsync: "none", embeddedListen: "127.0.0.1:0", embeddedLimits: tc.limits}
		srv, hs, endpoint, err := startEmbedded(&o, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		dis, err := disclient.New(disclient.Config{Endpoint: endpoint, ProjectID: "disgw"})
		if err != nil {
			t.Fatal(err)
		}
		err = dis.CreateStream(context.Background(), &disclient.CreateStreamRequest{StreamName: "wide", PartitionCount: 51})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--embedded-dis-limits=%s: 51 partitions refused: %v", tc.limits, err)
		case tc.want != "" && !disclient.IsCode(err, tc.want):
			t.Errorf("--embedded-dis-limits=%s: 51 partitions gave %v, want %s", tc.limits, err, tc.want)
		}
		dis.Close()
		_ = hs.Close()
		_ = srv.Close()
	}
	o := options{dataDir: t.TempDir(), fsync: "none", embeddedListen: "127.0.0.1:0", embeddedLimits: "lots"}
	if _, _, _, err := startEmbedded(&o, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "--embedded-dis-limits") {
		t.Errorf("--embedded-dis-limits=lots: %v", err)
	}
}

// checkOwnerOnly fails t for anything under dir that users other than its
// owner may read, write or enter.
func checkOwnerOnly(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %s, want owner-only", path, info.Mode().Perm())
		}
		return nil
	})
	if err != nil || n < 3 {
		t.Fatalf("walking %s: %v, %d entries", dir, err, n)
	}
}

// TestChooseACLKey: --acl-key (or DISGW_ACL_KEY) wins; else the key is
// derived from the DIS secret key the gateway signs with, the same for
// the same secret key and never the secret key itself; else, with the
// embedded DIS, it is a random key kept in the data directory, made
// owner-only once and read on every later start; a DIS endpoint with no
// secret key is refused with what to set.
func TestChooseACLKey(t *testing.T) {
	t.Setenv("DISGW_ACL_KEY", "a key from the environment")
	o, err := parseFlags([]string{"--authorizer", "acl"})
	if err != nil {
		t.Fatal(err)
	}
	if key, from, err := chooseACLKey(o, true); err != nil || string(key) != "a key from the environment" || from != "--acl-key" {
		t.Errorf("DISGW_ACL_KEY: %q from %s, %v", key, from, err)
	}
	if _, _, err := chooseACLKey(&options{aclKey: "short"}, true); err == nil {
		t.Error("a 5-character --acl-key was taken")
	}

	remote, _, err := chooseACLKey(&options{disSK: "the DIS secret key"}, false)
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := chooseACLKey(&options{disSK: "the DIS secret key"}, false)
	embedded, _, _ := chooseACLKey(&options{embeddedSK: "the DIS secret key", dataDir: t.TempDir()}, true)
	other, _, _ := chooseACLKey(&options{disSK: "another secret key"}, false)
	switch {
	case len(remote) != 32 || !bytes.Equal(remote, again) || !bytes.Equal(remote, embedded):
		t.Errorf("keys derived from one secret key differ or are short: %x %x %x", remote, again, embedded)
	case bytes.Equal(remote, other) || bytes.Contains(remote, []byte("the DIS secret key")):
		t.Error("the derived key does not depend on the secret key, or is it")
	}

	dir := filepath.Join(t.TempDir(), "data")
	first, from, err := chooseACLKey(&options{dataDir: dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "acl.key")
	fi, err := os.Stat(path)
	if err != nil || from != path {
		t.Fatalf("no key file at %s (from %s): %v", path, from, err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode %o, want 600", mode)
	}
	text, _ := os.ReadFile(path)
	if len(first) != 64 || string(bytes.TrimSpace(text)) != string(first) {
		t.Errorf("key %q, file %q: want the file's 64 hex characters", first, text)
	}
	second, _, err := chooseACLKey(&options{dataDir: dir}, true)
	if err != nil || !bytes.Equal(first, second) {
		t.Errorf("on the second start the key changed: %q, %v", second, err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := chooseACLKey(&options{dataDir: dir}, true); err == nil {
		t.Error("an empty key file was taken")
	}

	for name, o := range map[string]*options{
		"IAM token": {disAuthToken: "token"},
		"unsigned":  {},
	} {
		_, _, err := chooseACLKey(o, false)
		if err == nil || !strings.Contains(err.Error(), "--acl-key") || !strings.Contains(err.Error(), "DISGW_ACL_KEY") || !strings.Contains(err.Error(), "every gateway") {
			t.Errorf("%s: %v, want an error naming --acl-key, DISGW_ACL_KEY and that every gateway needs it", name, err)
		}
	}
}

// TestACLKeyAtStart: disgw with --authorizer acl in front of a DIS
// endpoint and no secret key does not start, saying what to set; with the
// embedded DIS it keeps its ACL key in the data directory, owner-only,
// and takes the same one when it starts again.
func TestACLKeyAtStart(t *testing.T) {
	err := serve(context.Background(), []string{"--authorizer", "acl", "--dis-endpoint", "http://127.0.0.1:1", "--dis-project-id", "p",
		"--listen", "127.0.0.1:0", "--admin-listen", "", "--request-timeout", "1s", "--log-level", "error"}, nil)
	if err == nil || !strings.Contains(err.Error(), "--acl-key") {
		t.Errorf("a DIS endpoint without a secret key: %v, want an error naming --acl-key", err)
	}
	dir := t.TempDir()
	var keys []string
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		up, done := make(chan serving, 1), make(chan error, 1)
		go func() {
			done <- serve(ctx, []string{"--authorizer", "acl", "--listen", "127.0.0.1:0", "--embedded-dis-listen", "127.0.0.1:0",
				"--admin-listen", "", "--data-dir", dir, "--fsync", "none", "--log-level", "error"}, func(s serving) { up <- s })
		}()
		select {
		case <-up:
		case err := <-done:
			cancel()
			t.Fatalf("serve: %v", err)
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatal("not serving after 30s")
		}
		fi, err := os.Stat(filepath.Join(dir, "acl.key"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			cancel()
			t.Fatalf("the ACL key file: %v, %v", fi, err)
		}
		key, _ := os.ReadFile(filepath.Join(dir, "acl.key"))
		keys = append(keys, string(key))
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve returned %v", err)
		}
	}
	if keys[0] != keys[1] {
		t.Error("the ACL key changed at the second start")
	}
}

// TestShareFlagsRefusedOutsideKafkasRanges: a share group flag Kafka would
// refuse stops the gateway at start, and the message names the flags.
func TestShareFlagsRefusedOutsideKafkasRanges(t *testing.T) {
	for _, tc := range [][]string{
		{"--share-group-max-size", "0"},
		{"--share-delivery-count-limit", "11"},
		{"--share-delivery-count-limit", "0"},
		{"--share-record-lock-duration", "90s"},
		{"--share-max-record-lock-duration", "2h"},
		{"--share-partition-max-record-locks", "50"},
	} {
		args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "", "--embedded-dis-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), tc[0], tc[1]}
		if err := serve(context.Background(), args, nil); err == nil || !strings.Contains(err.Error(), tc[0]) {
			t.Errorf("%s %s: %v", tc[0], tc[1], err)
		}
	}
}
