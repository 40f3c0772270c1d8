package protocol

import (
	"encoding/binary"
	"slices"

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
	dst = slices.Grow(dst, sizeHint(resp))
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

// sizeHint is about the encoded size of a Fetch response, which is mostly
// its record batches, so that it is encoded into one allocation: grown by
// appends, a response of n bytes would allocate about 2n on the way. Other
// responses are small and get 0.
func sizeHint(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	const topicBytes, partitionBytes = 32, 64 // ids, codes, offsets, tags
	n := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		n += topicBytes + len(t.Topic)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += partitionBytes + len(p.RecordBatches) + 32*len(p.AbortedTransactions)
		}
	}
	return n
}
