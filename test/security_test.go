package test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdgscram "github.com/xdg-go/scram"

	"github.com/disgw/disgw/gateway"
)

// testCA is a throwaway certificate authority and server certificate for
// 127.0.0.1, made fresh for each test run.
type testCA struct {
	pool    *x509.CertPool
	server  tls.Certificate
	caPEM   []byte
	caPath  string
	tempDir string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "disgw test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{pool: x509.NewCertPool(), tempDir: t.TempDir()}
	ca.pool.AddCert(cert)
	ca.server = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
	ca.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	ca.caPath = filepath.Join(ca.tempDir, "ca.pem")
	if err := os.WriteFile(ca.caPath, ca.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// secureUsers are the SASL users of the secure cluster.
var secureUsers = map[string]string{"alice": "alice-secret-pw", "bob": "bob-secret-pw"}

// logBuffer collects a cluster's logs to check them for secrets.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startSecureCluster runs PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL
// listeners together.
func startSecureCluster(t *testing.T) (*Cluster, *testCA, *logBuffer) {
	t.Helper()
	ca := newTestCA(t)
	users, err := gateway.NewSASLUsers(secureUsers)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{ca.server}, MinVersion: tls.VersionTLS12}
	c, err := Start(Options{Dir: t.TempDir(), Logger: zerolog.New(logs).Level(zerolog.InfoLevel), Gateway: func(cfg *gateway.Config) {
		cfg.SASL = users
		cfg.Listeners = []gateway.Listener{
			{Addr: "127.0.0.1:0", Protocol: gateway.SSL, TLS: tlsCfg},
			{Addr: "127.0.0.1:0", Protocol: gateway.SASLPlaintext},
			{Addr: "127.0.0.1:0", Protocol: gateway.SASLSSL, TLS: tlsCfg},
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	createTopic(t, c, "secure", 1, nil)
	return c, ca, logs
}

type secureCase struct {
	name  string
	proto gateway.SecurityProtocol
	mech  func(user, pass string) sasl.Mechanism
}

var saslCases = []secureCase{
	{"PLAIN/SASL_PLAINTEXT", gateway.SASLPlaintext, func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() }},
	{"SCRAM-SHA-256/SASL_PLAINTEXT", gateway.SASLPlaintext, func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha256Mechanism() }},
	{"SCRAM-SHA-512/SASL_SSL", gateway.SASLSSL, func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha512Mechanism() }},
	{"PLAIN/SASL_SSL", gateway.SASLSSL, func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() }},
}

func secureClient(t *testing.T, c *Cluster, ca *testCA, proto gateway.SecurityProtocol, mech sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{kgo.SeedBrokers(c.Gateway.ListenerAddr(proto).String()), kgo.RetryTimeout(5 * time.Second), kgo.RequestRetries(2)}
	if mech != nil {
		o = append(o, kgo.SASL(mech))
	}
	if proto == gateway.SSL || proto == gateway.SASLSSL {
		o = append(o, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1"}))
	}
	cl, err := kgo.NewClient(append(o, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestFranzGoSASL produces and consumes over each SASL listener and
// mechanism with good credentials; bad credentials read and write nothing;
// and no password reaches the logs.
func TestFranzGoSASL(t *testing.T) {
	t.Parallel()
	c, ca, logs := startSecureCluster(t)
	for _, sc := range saslCases {
		t.Run(sc.name, func(t *testing.T) {
			ctx := testContext(t, 30*time.Second)
			value := []byte("via " + sc.name)
			good := secureClient(t, c, ca, sc.proto, sc.mech("alice", secureUsers["alice"]), kgo.DefaultProduceTopic("secure"))
			res := good.ProduceSync(ctx, &kgo.Record{Value: value})
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce with good credentials: %v", err)
			}
			off := res[0].Record.Offset
			cons := secureClient(t, c, ca, sc.proto, sc.mech("bob", secureUsers["bob"]),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secure": {0: kgo.NewOffset().At(off)}}))
			fs := cons.PollFetches(ctx)
			if recs := fs.Records(); len(recs) == 0 || !bytes.Equal(recs[0].Value, value) {
				t.Fatalf("consume with good credentials: %v, errors %v", recs, fs.Errors())
			}

			bad := secureClient(t, c, ca, sc.proto, sc.mech("alice", "wrong-password"), kgo.DefaultProduceTopic("secure"))
			if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("connecting with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if err := bad.ProduceSync(pctx, &kgo.Record{Value: []byte("must not land")}).FirstErr(); err == nil {
				t.Fatal("a produce with a wrong password succeeded")
			}
			unknown := secureClient(t, c, ca, sc.proto, sc.mech("mallory", "x"),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secure": {0: kgo.NewOffset().AtStart()}}))
			fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
			defer fcancel()
			if recs := unknown.PollFetches(fctx).Records(); len(recs) != 0 {
				t.Fatalf("an unknown user read %d records", len(recs))
			}
		})
	}
	// Nothing a client without credentials sent was written.
	check := secureClient(t, c, ca, gateway.SASLPlaintext, plain.Auth{User: "alice", Pass: secureUsers["alice"]}.AsMechanism(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secure": {0: kgo.NewOffset().AtStart()}}))
	ctx := testContext(t, 10*time.Second)
	got := 0
	for got < len(saslCases) {
		fs := check.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		for _, r := range fs.Records() {
			if string(r.Value) == "must not land" {
				t.Fatal("a record produced with bad credentials was written")
			}
			got++
		}
	}
	for _, pw := range append([]string{"wrong-password"}, secureUsers["alice"], secureUsers["bob"]) {
		if strings.Contains(logs.String(), pw) {
			t.Fatalf("a password appears in the logs")
		}
	}
	if !strings.Contains(logs.String(), "SASL authentication failed") {
		t.Error("failed authentications were not logged")
	}
	// The connection lines, which carry what clients sent, were checked too.
	for _, line := range []string{`"message":"connection opened"`, `"message":"connection closed"`} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("no %s line in the logs", line)
		}
	}
}

// A SASL listener refuses requests before authentication by closing the
// connection, as Kafka does.
func TestSASLListenerRequiresAuthentication(t *testing.T) {
	t.Parallel()
	c, _, _ := startSecureCluster(t)
	rc := dialRaw(t, c.Gateway.ListenerAddr(gateway.SASLPlaintext).String())
	rc.send(produceReq(9, "secure", 0, testBatch(-1, -1, -1, 1, "sneaky")))
	rc.expectClosed()
}

// TestSSLListener: franz-go over plain TLS, and kcat over SSL.
func TestSSLListener(t *testing.T) {
	t.Parallel()
	c, ca, _ := startSecureCluster(t)
	ctx := testContext(t, 30*time.Second)
	cl := secureClient(t, c, ca, gateway.SSL, nil, kgo.DefaultProduceTopic("secure"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("tls"), Value: []byte("over tls")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if !hasKcat() {
		t.Log("kcat is not installed: the kcat part is skipped")
		return
	}
	addr := c.Gateway.ListenerAddr(gateway.SSL).String()
	out := runKcat(t, "", "-b", addr, "-X", "security.protocol=SSL", "-X", "ssl.ca.location="+ca.caPath,
		"-C", "-t", "secure", "-o", "beginning", "-e", "-f", `%k=%s\n`)
	if !strings.Contains(out, "tls=over tls") {
		t.Fatalf("kcat over SSL read %q", out)
	}
	meta := runKcat(t, "", "-b", addr, "-X", "security.protocol=SSL", "-X", "ssl.ca.location="+ca.caPath, "-L")
	if !strings.Contains(meta, "broker 0 at "+addr) {
		t.Fatalf("metadata over SSL does not advertise the SSL listener:\n%s", meta)
	}
}

// TestSaramaSASL: sarama with PLAIN over SASL_PLAINTEXT with the v0
// handshake (bare SASL tokens, as Kafka clients before 1.0 send them) and
// over SASL_SSL with v1, good and bad passwords.
func TestSaramaSASL(t *testing.T) {
	t.Parallel()
	c, ca, _ := startSecureCluster(t)
	for _, proto := range []gateway.SecurityProtocol{gateway.SASLPlaintext, gateway.SASLSSL} {
		addr := c.Gateway.ListenerAddr(proto).String()
		conf := func(pass string) *sarama.Config {
			cfg := saramaConfig()
			if proto == gateway.SASLSSL {
				cfg.Net.TLS.Enable = true
				cfg.Net.TLS.Config = &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1"}
			}
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "bob", pass
			cfg.Net.SASL.Handshake = true
			if proto == gateway.SASLPlaintext {
				cfg.Net.SASL.Version = sarama.SASLHandshakeV0
				cfg.ApiVersionsRequest = false
			}
			cfg.Metadata.Retry.Max = 0
			return cfg
		}
		producer, err := sarama.NewSyncProducer([]string{addr}, conf(secureUsers["bob"]))
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "secure", Partition: 0, Value: sarama.StringEncoder("sarama over " + string(proto))}); err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		_ = producer.Close()
		if p, err := sarama.NewSyncProducer([]string{addr}, conf("nope")); err == nil {
			_ = p.Close()
			t.Fatalf("%s: sarama connected with a wrong password", proto)
		}
	}
}

// saramaSCRAM adapts xdg-go/scram to sarama's SCRAM client interface.
type saramaSCRAM struct {
	hash xdgscram.HashGeneratorFcn
	conv *xdgscram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, pass, authz string) error {
	c, err := s.hash.NewClient(user, pass, authz)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *saramaSCRAM) Done() bool                            { return s.conv.Done() }

// TestSaramaSCRAM: sarama with SCRAM-SHA-256 over SASL_PLAINTEXT and
// SCRAM-SHA-512 over SASL_SSL.
func TestSaramaSCRAM(t *testing.T) {
	t.Parallel()
	c, ca, _ := startSecureCluster(t)
	cases := []struct {
		proto gateway.SecurityProtocol
		mech  sarama.SASLMechanism
		hash  xdgscram.HashGeneratorFcn
	}{
		{gateway.SASLPlaintext, sarama.SASLTypeSCRAMSHA256, xdgscram.SHA256},
		{gateway.SASLSSL, sarama.SASLTypeSCRAMSHA512, xdgscram.SHA512},
	}
	for _, tc := range cases {
		cfg := saramaConfig()
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = tc.mech
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", secureUsers["alice"]
		hash := tc.hash
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: hash} }
		if tc.proto == gateway.SASLSSL {
			cfg.Net.TLS.Enable = true
			cfg.Net.TLS.Config = &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1"}
		}
		producer, err := sarama.NewSyncProducer([]string{c.Gateway.ListenerAddr(tc.proto).String()}, cfg)
		if err != nil {
			t.Fatalf("%s over %s: %v", tc.mech, tc.proto, err)
		}
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "secure", Partition: 0, Value: sarama.StringEncoder(string(tc.mech))}); err != nil {
			t.Fatalf("%s over %s: send: %v", tc.mech, tc.proto, err)
		}
		_ = producer.Close()

		cfg.Net.SASL.Password = "wrong"
		if p, err := sarama.NewSyncProducer([]string{c.Gateway.ListenerAddr(tc.proto).String()}, cfg); err == nil {
			_ = p.Close()
			t.Fatalf("%s over %s: connected with a wrong password", tc.mech, tc.proto)
		}
	}
}

// Before authentication a SASL listener takes no request larger than
// Kafka's sasl.server.max.receive.size (512 KiB); afterwards the usual limit.
func TestSASLPreAuthFrameLimit(t *testing.T) {
	t.Parallel()
	c, _, _ := startSecureCluster(t)
	rc := dialRaw(t, c.Gateway.ListenerAddr(gateway.SASLPlaintext).String())
	rc.write(binary.BigEndian.AppendUint32(nil, 600<<10))
	rc.expectClosed()
}
