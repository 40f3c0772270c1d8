package disclient

import (
	"fmt"
	"strings"

	json "github.com/goccy/go-json"
)

// BodyEncoding selects how PutRecords and GetRecords bodies travel. Every
// other operation, and every error answer, is JSON either way.
type BodyEncoding string

const (
	// EncodingJSON is the REST API's documented encoding and the default:
	// record data goes base64-encoded inside JSON.
	EncodingJSON BodyEncoding = "json"
	// EncodingProtobuf sends PutRecords and GetRecords as the protobuf
	// messages of the DIS Java SDK (docs/dis-api.md §4), with raw record data:
	// smaller bodies and much cheaper to encode and decode. The embedded
	// server supports it; that DIS does is known only from its Java SDK.
	EncodingProtobuf BodyEncoding = "protobuf"
)

// ContentTypeProtobuf is the Content-Type that asks DIS for protobuf bodies,
// spelled as the Java SDK sends it.
const ContentTypeProtobuf = "application/x-protobuf; charset=utf-8"

const contentTypeJSON = "application/json"

// IsProtobuf reports whether a Content-Type header names the protobuf media
// type, whatever its parameters and case.
func IsProtobuf(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "application/x-protobuf")
}

// check accepts the known encodings; "" means JSON.
func (e BodyEncoding) check() (BodyEncoding, error) {
	switch e {
	case "":
		return EncodingJSON, nil
	case EncodingJSON, EncodingProtobuf:
		return e, nil
	default:
		return "", fmt.Errorf("disclient: Config.Encoding %q is neither %q nor %q", e, EncodingJSON, EncodingProtobuf)
	}
}

// protobufMessage is a body that has a protobuf form (protobuf.go).
type protobufMessage interface {
	AppendProtobuf(b []byte) []byte
	UnmarshalProtobuf(b []byte) error
}

// contentType is the Content-Type a call is sent with: it also tells DIS
// which encoding to answer in.
func (cl *call) contentType() string {
	if cl.protobuf {
		return ContentTypeProtobuf
	}
	return contentTypeJSON
}

// encode encodes the call's body into a pooled buffer; see encodeBody.
func (cl *call) encode() (*requestBody, error) {
	if !cl.protobuf {
		return encodeBody(cl.in)
	}
	m, ok := cl.in.(protobufMessage)
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf form", cl.in)
	}
	buf := getBuffer()
	buf.Write(m.AppendProtobuf(buf.AvailableBuffer()))
	return newRequestBody(buf), nil
}

// decode decodes a success answer into the call's out.
func (cl *call) decode(body []byte) error {
	if !cl.protobuf {
		return json.Unmarshal(body, cl.out)
	}
	m, ok := cl.out.(protobufMessage)
	if !ok {
		return fmt.Errorf("%T has no protobuf form", cl.out)
	}
	return m.UnmarshalProtobuf(body)
}
