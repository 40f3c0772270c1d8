package cluster

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// PeerProofTag is the tagged field that carries a peer probe's challenge
// in an ApiVersions request and the answering gateway's proof in the
// response. Kafka defines no such tag, so clients skip it, and the proof
// is only sent to a request that carries a challenge.
const PeerProofTag = 0x4447

// peerProofLabel keeps a proof from meaning anything outside peer probes.
const peerProofLabel = "disgw peer proof v1\x00"

// PeerProof is what a gateway holding secret answers challenge with: an
// address that cannot answer it is not a peer, however Kafka-like it is
// (docs/security.md, "Threat model").
func PeerProof(secret, challenge []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(peerProofLabel))
	mac.Write(challenge)
	return mac.Sum(nil)
}

// PeerChallenge is the challenge tags carry, nil for none.
func PeerChallenge(tags *kmsg.Tags) []byte {
	var out []byte
	tags.Each(func(key uint32, val []byte) {
		if key == PeerProofTag {
			out = val
		}
	})
	return out
}
