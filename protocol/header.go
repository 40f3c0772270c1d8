package protocol

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestHeader is the header every Kafka request starts with. The gateway
// needs it apart from the body to answer (the correlation id), to choose the
// response version and to log who asked (the client id).
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string // nil when the client sent a null client id
}

// Request is one decoded Kafka request. Body has its version set to
// Header.Version, so the matching response can be built from it.
type Request struct {
	Header RequestHeader
	Body   kmsg.Request
}

// UnknownKeyError reports a request whose API key kmsg does not know; Kafka
// closes the connection on such a request.
type UnknownKeyError struct {
	Header RequestHeader
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("protocol: unknown api key %d (version %d, correlation id %d)",
		e.Header.Key, e.Header.Version, e.Header.CorrelationID)
}

// UnsupportedVersionError reports a known API key at a version outside
// [0, MaxVersion]. Header holds everything the header carried, because a
// client probing with a newer ApiVersions request must still get an
// ApiVersions v0 response with UNSUPPORTED_VERSION and this correlation id.
type UnsupportedVersionError struct {
	Header     RequestHeader
	MaxVersion int16
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("protocol: %s version %d not supported (max %d, correlation id %d)",
		kmsg.NameForKey(e.Header.Key), e.Header.Version, e.MaxVersion, e.Header.CorrelationID)
}

// MalformedRequestError reports a request that cannot be decoded: a truncated
// header or a truncated or garbled body. The stream may be out of step with
// the client, so the gateway logs it and closes the connection. Header holds
// the fields read before the problem; Key, Version and CorrelationID are set
// whenever the frame had at least 8 bytes.
type MalformedRequestError struct {
	Header RequestHeader
	Reason string
	Err    error // the decoder's error, if one caused this
}

func (e *MalformedRequestError) Error() string {
	msg := fmt.Sprintf("protocol: malformed %s v%d request (correlation id %d): %s",
		kmsg.NameForKey(e.Header.Key), e.Header.Version, e.Header.CorrelationID, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *MalformedRequestError) Unwrap() error { return e.Err }

// controlledShutdownKey is the one API whose v0 request uses header v0,
// which has no client id.
const controlledShutdownKey = 7

// ParseRequest decodes the header and body of one frame, as NextFrame returns
// it. Errors are *UnknownKeyError, *UnsupportedVersionError or
// *MalformedRequestError. Byte fields of the body (such as produce records)
// alias frame, so frame must stay untouched while the body is in use. Bytes
// after the body are ignored, as kmsg and Kafka's own parser do.
func ParseRequest(frame []byte) (*Request, error) {
	var hdr RequestHeader
	if len(frame) < 8 {
		if len(frame) >= 2 {
			hdr.Key = int16(binary.BigEndian.Uint16(frame))
		}
		if len(frame) >= 4 {
			hdr.Version = int16(binary.BigEndian.Uint16(frame[2:]))
		}
		return nil, &MalformedRequestError{Header: hdr, Reason: fmt.Sprintf("%d-byte frame is shorter than a request header", len(frame))}
	}
	hdr.Key = int16(binary.BigEndian.Uint16(frame))
	hdr.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	hdr.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]

	var clientIDErr string
	if hdr.Key != controlledShutdownKey || hdr.Version != 0 {
		hdr.ClientID, rest, clientIDErr = readClientID(rest)
	}

	body := kmsg.RequestForKey(hdr.Key)
	if body == nil {
		return nil, &UnknownKeyError{Header: hdr}
	}
	if hdr.Version < 0 || hdr.Version > body.MaxVersion() {
		return nil, &UnsupportedVersionError{Header: hdr, MaxVersion: body.MaxVersion()}
	}
	if clientIDErr != "" {
		return nil, &MalformedRequestError{Header: hdr, Reason: clientIDErr}
	}
	body.SetVersion(hdr.Version)
	if body.IsFlexible() {
		var reason string
		if rest, reason = skipTaggedFields(rest); reason != "" {
			return nil, &MalformedRequestError{Header: hdr, Reason: reason}
		}
	}
	if err := body.ReadFrom(rest); err != nil {
		return nil, &MalformedRequestError{Header: hdr, Reason: "decoding body", Err: err}
	}
	return &Request{Header: hdr, Body: body}, nil
}

// readClientID reads the header's nullable string (int16 length, -1 = null).
// Header v2 keeps this non-compact encoding so that a broker of any version
// can read the client id of a request it does not understand.
func readClientID(b []byte) (id *string, rest []byte, problem string) {
	if len(b) < 2 {
		return nil, b, "truncated client id length"
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	switch {
	case n == -1:
		return nil, b, ""
	case n < 0:
		return nil, b, fmt.Sprintf("invalid client id length %d", n)
	case n > len(b):
		return nil, b, fmt.Sprintf("client id length %d exceeds the %d bytes left", n, len(b))
	}
	s := string(b[:n])
	return &s, b[n:], ""
}

// skipTaggedFields skips the tagged fields that end a flexible (v2) request
// header. Kafka defines none there yet; unknown tags must be ignored.
func skipTaggedFields(b []byte) (rest []byte, problem string) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return b, "truncated header tagged-field count"
	}
	b = b[n:]
	if count > uint64(len(b)) {
		return b, fmt.Sprintf("%d header tagged fields in %d bytes", count, len(b))
	}
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return b, "truncated header tag"
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 {
			return b, "truncated header tag size"
		}
		b = b[n:]
		if size > uint64(len(b)) {
			return b, fmt.Sprintf("header tag size %d exceeds the %d bytes left", size, len(b))
		}
		b = b[size:]
	}
	return b, ""
}
