package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaProber probes a peer with a Kafka ApiVersions request on a
// connection it keeps open between probes and opens again after a failure.
// ApiVersions is answered before SASL authentication, so it works on every
// listener type. A peer proves itself with the shared Secret: the probe
// carries a fresh challenge (PeerProofTag) and only an answer with its
// PeerProof counts, so an address that merely speaks Kafka (found through
// DNS, or taken over) never becomes a peer that clients are sent to. With
// TLS the certificate is not verified: the proof is what is trusted, and
// the probe sends nothing secret. The zero value probes plaintext listeners
// with no proof, for tests of the probing alone.
type KafkaProber struct {
	// TLS is set when the peers' first listener is SSL or SASL_SSL.
	TLS bool
	// Secret is the peers' shared secret; nil asks for no proof.
	Secret []byte
	// From is this gateway's node id, sent with every probe (PeerFromTag)
	// so that the probed gateway knows whether this one counts it alive.
	From int32

	mu     sync.Mutex
	conns  map[int32]*probeConn
	closed bool
}

// probeConn is the kept-open connection to one peer. One Probe uses it at
// a time: Probe takes it out of KafkaProber.conns under mu and puts it
// back when done, so its round trip holds no lock.
type probeConn struct {
	addr string
	conn net.Conn
	corr int32
}

// maxProbeResponse bounds the ApiVersions answer read; a gateway's is well
// under 1 KiB.
const maxProbeResponse = 1 << 20

var probeFormatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("disgw-peer-probe"))

// Probe sends ApiVersions v3 to p, telling it whether this gateway counts
// it live, and waits for the answer until ctx's deadline. An
// UNSUPPORTED_VERSION answer counts: a Kafka listener answered.
func (k *KafkaProber) Probe(ctx context.Context, p Peer, live bool) error {
	addr := net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port)))
	k.mu.Lock()
	pc := k.conns[p.ID]
	delete(k.conns, p.ID)
	k.mu.Unlock()
	if pc != nil && pc.addr != addr {
		_ = pc.conn.Close()
		pc = nil
	}
	if pc == nil {
		conn, err := k.dial(ctx, addr)
		if err != nil {
			return err
		}
		pc = &probeConn{addr: addr, conn: conn}
	}
	if err := pc.roundTrip(ctx, k.Secret, k.From, live); err != nil {
		_ = pc.conn.Close()
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return pc.conn.Close()
	}
	if k.conns == nil {
		k.conns = map[int32]*probeConn{}
	}
	k.conns[p.ID] = pc
	return nil
}

func (k *KafkaProber) dial(ctx context.Context, addr string) (net.Conn, error) {
	if k.TLS {
		// Not verified on purpose: the peer proof is (see KafkaProber).
		d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
		return d.DialContext(ctx, "tcp", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// Close closes the kept-open connections.
func (k *KafkaProber) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	for id, pc := range k.conns {
		_ = pc.conn.Close()
		delete(k.conns, id)
	}
	return nil
}

// roundTrip sends one ApiVersions request and checks the answer and, with
// a secret, the peer's proof.
func (pc *probeConn) roundTrip(ctx context.Context, secret []byte, from int32, live bool) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Second)
	}
	if err := pc.conn.SetDeadline(deadline); err != nil {
		return err
	}
	pc.corr++
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "disgw-peer-probe"
	req.ClientSoftwareVersion = "1"
	var challenge []byte
	if secret != nil {
		challenge = make([]byte, 16)
		_, _ = rand.Read(challenge)
		req.UnknownTags.Set(PeerProofTag, challenge)
	}
	req.UnknownTags.Set(PeerFromTag, peerFrom(from, live))
	if _, err := pc.conn.Write(probeFormatter.AppendRequest(nil, req, pc.corr)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(pc.conn, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 6 || n > maxProbeResponse {
		return fmt.Errorf("ApiVersions answer of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(pc.conn, buf); err != nil {
		return err
	}
	// The ApiVersions response header is the correlation id alone, at
	// every version, and the body starts with the error code.
	if corr := int32(binary.BigEndian.Uint32(buf)); corr != pc.corr {
		return fmt.Errorf("ApiVersions answer to correlation id %d, want %d", corr, pc.corr)
	}
	if code := int16(binary.BigEndian.Uint16(buf[4:])); code != 0 && (secret != nil || code != kerr.UnsupportedVersion.Code) {
		return fmt.Errorf("ApiVersions answered: %w", kerr.ErrorForCode(code))
	}
	if secret == nil {
		return nil
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = req.Version
	if err := resp.ReadFrom(buf[4:]); err != nil {
		return fmt.Errorf("ApiVersions answer: %w", err)
	}
	if !hmac.Equal(PeerChallenge(&resp.UnknownTags), PeerProof(secret, challenge)) {
		return errNoPeerProof
	}
	return nil
}

// errNoPeerProof is a probe's failure when a Kafka listener answered
// without proving it holds the peers' secret.
var errNoPeerProof = errors.New("the listener answered without proof that it holds the peers' secret (--peer-secret): not a peer")
