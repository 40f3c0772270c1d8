package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/sasl"
)

// MechPeer is the SASL mechanism gateways sign in to each other with, on
// any listener, for the calls between them (docs/security.md, "Other
// gateways"). A session signed in with it runs as a peer: it may do what
// only brokers do (WriteTxnMarkers, AddPartitionsToTxn's verification).
//
// The exchange proves to each side that the other holds the peers' shared
// secret, with a fresh nonce from each, so a recorded exchange proves
// nothing later:
//
//	client: node id (4 bytes) | client nonce (32)
//	server: server nonce (32) | HMAC(secret, "server" | both nonces | node id)
//	client: HMAC(secret, "client" | both nonces | node id)
//	server: (empty), signed in
const MechPeer = "DISGW-PEER"

// peerNonceBytes is the length of each side's nonce.
const peerNonceBytes = 32

// peerAuthLabel keeps a peer sign-in's proofs from meaning anything
// elsewhere, a probe's proof included.
const peerAuthLabel = "disgw peer sign-in v1\x00"

var errPeerAuth = errors.New("peer sign-in failed: the other side does not hold the peers' secret")

// peerAuthProof is one side's proof over the exchange.
func peerAuthProof(secret []byte, side string, clientFirst, serverNonce []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(peerAuthLabel))
	mac.Write([]byte(side))
	mac.Write(serverNonce)
	mac.Write(clientFirst)
	return mac.Sum(nil)
}

// PeerSignIn is the server's side of a MechPeer exchange on one connection.
type PeerSignIn struct {
	secret      []byte
	clientFirst []byte
	serverNonce []byte
	from        int32
	done        bool
}

// NewPeerSignIn starts the server's side of a sign-in with secret.
func NewPeerSignIn(secret []byte) *PeerSignIn { return &PeerSignIn{secret: secret} }

// Step takes the client's next message and returns the answer and
// whether the client is signed in; an error ends the exchange.
func (s *PeerSignIn) Step(msg []byte) ([]byte, bool, error) {
	switch {
	case s.done:
		return nil, false, errPeerAuth
	case s.clientFirst == nil:
		if len(msg) != 4+peerNonceBytes {
			return nil, false, errPeerAuth
		}
		s.clientFirst = append([]byte(nil), msg...)
		s.from = int32(binary.BigEndian.Uint32(msg))
		s.serverNonce = make([]byte, peerNonceBytes)
		_, _ = rand.Read(s.serverNonce)
		out := append(append([]byte(nil), s.serverNonce...), peerAuthProof(s.secret, "server", s.clientFirst, s.serverNonce)...)
		return out, false, nil
	}
	s.done = true
	if !hmac.Equal(msg, peerAuthProof(s.secret, "client", s.clientFirst, s.serverNonce)) {
		return nil, false, errPeerAuth
	}
	return nil, true, nil
}

// From is the node id the signed-in peer gave.
func (s *PeerSignIn) From() int32 { return s.from }

// peerMechanism is the client's side of MechPeer, for franz-go.
type peerMechanism struct {
	secret []byte
	from   int32
}

// Name is MechPeer.
func (m peerMechanism) Name() string { return MechPeer }

// Authenticate sends the client's first message.
func (m peerMechanism) Authenticate(context.Context, string) (sasl.Session, []byte, error) {
	first := binary.BigEndian.AppendUint32(make([]byte, 0, 4+peerNonceBytes), uint32(m.from))
	nonce := make([]byte, peerNonceBytes)
	_, _ = rand.Read(nonce)
	first = append(first, nonce...)
	return &peerSession{secret: m.secret, first: first}, first, nil
}

// peerSession is one client sign-in in progress.
type peerSession struct {
	secret []byte
	first  []byte
	proved bool
}

// Challenge checks the server's proof and answers with the client's; the
// server's last, empty answer ends the exchange.
func (s *peerSession) Challenge(msg []byte) (bool, []byte, error) {
	if s.proved {
		return true, nil, nil
	}
	if len(msg) != peerNonceBytes+sha256.Size {
		return false, nil, errPeerAuth
	}
	nonce, proof := msg[:peerNonceBytes], msg[peerNonceBytes:]
	if !hmac.Equal(proof, peerAuthProof(s.secret, "server", s.first, nonce)) {
		return false, nil, errPeerAuth
	}
	s.proved = true
	return false, peerAuthProof(s.secret, "client", s.first, nonce), nil
}
