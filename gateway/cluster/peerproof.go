package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"

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

// PeerFromTag is the tagged field of a peer probe's ApiVersions request
// that names the probing gateway's node id (4 bytes, big endian) and
// whether it counts the probed gateway live (1 byte, 1 or 0): the probed
// gateway learns which peers have seen it alive since it started
// (docs/design.md §6, "Handing groups over"). It proves nothing; a forged
// one can only end that wait early.
const PeerFromTag = 0x4448

// peerFrom is PeerFromTag's value.
func peerFrom(id int32, live bool) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(id))
	if live {
		return append(b, 1)
	}
	return append(b, 0)
}

// ProbeFrom is what a peer probe's tags say: the sender's node id and
// whether it counts this gateway live; ok=false for none.
func ProbeFrom(tags *kmsg.Tags) (id int32, live, ok bool) {
	tags.Each(func(key uint32, val []byte) {
		if key == PeerFromTag && len(val) == 5 {
			id, live, ok = int32(binary.BigEndian.Uint32(val)), val[4] == 1, true
		}
	})
	return id, live, ok
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
