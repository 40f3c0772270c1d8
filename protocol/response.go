package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsKey is the API whose response header stays v0 even at flexible
// versions: a client reads it before it knows which versions the broker
// speaks (KIP-511).
const apiVersionsKey = 18

// AppendResponse appends one whole response frame for the request with
// header hdr: the 4-byte size, the correlation id, the response header's
// tagged fields when the response version is flexible (header v1) except for
// ApiVersions, whose response header is always v0, then the body. It sets
// resp's version to hdr.Version; to answer an unsupported ApiVersions request
// with a v0 response, pass a copy of the header with Version 0.
func AppendResponse(dst []byte, hdr RequestHeader, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(hdr.CorrelationID))
	resp.SetVersion(hdr.Version)
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
