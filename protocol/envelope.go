package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The kafka record envelope stores one whole Kafka record (key and value with
// their null-ness, headers, timestamp) in the data of one DIS record, for
// streams whose record format is "kafka". docs/record-envelope.md describes
// it byte by byte for decoders in other languages.
//
// Version 1: the magic "\xF9KR", the version byte 1, the timestamp (int64),
// the key, the value, the header count (int32), then per header its key and
// value. All integers are big-endian; every byte string is an int32 length
// then the bytes, with length -1 for null (header keys are never null).

// envelopeMagic starts every envelope. 0xF9 never begins valid UTF-8 (so no
// text or JSON payload), nor Confluent's schema-registry framing (0x00), nor
// a gzip, zstd, lz4 or snappy-framed stream.
const envelopeMagic = "\xF9KR"

// envelopeVersion is the version this package writes and reads.
const envelopeVersion = 1

// envelopeFixedSize is the size of an envelope with null key and value and
// no headers: magic, version, timestamp, key and value lengths, header count.
const envelopeFixedSize = len(envelopeMagic) + 1 + 8 + 4 + 4 + 4

// Errors of DecodeEnvelope, to tell apart data that never was an envelope
// (a DIS-native producer wrote it), an envelope from a newer gateway, and a
// damaged envelope.
var (
	ErrNotEnvelope                = errors.New("protocol: data is not a kafka record envelope")
	ErrUnsupportedEnvelopeVersion = errors.New("protocol: unsupported kafka record envelope version")
	ErrCorruptEnvelope            = errors.New("protocol: corrupt kafka record envelope")
)

// AppendEnvelope appends r (all but its offset) as a version 1 envelope.
func AppendEnvelope(dst []byte, r *Record) []byte {
	dst = append(dst, envelopeMagic...)
	dst = append(dst, envelopeVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Timestamp))
	dst = appendEnvelopeBytes(dst, r.Key)
	dst = appendEnvelopeBytes(dst, r.Value)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendEnvelopeBytes(dst, h.Value)
	}
	return dst
}

func appendEnvelopeBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// EnvelopeSize is len(AppendEnvelope(nil, r)), to check a record against
// DIS's record size limit before encoding it.
func EnvelopeSize(r *Record) int {
	n := envelopeFixedSize + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += 4 + len(h.Key) + 4 + len(h.Value)
	}
	return n
}

// DecodeEnvelope decodes an envelope that fills data exactly. The record's
// Offset is 0: the offset is where DIS stored it, not part of the data. Key,
// Value and header values alias data.
func DecodeEnvelope(data []byte) (Record, error) {
	if len(data) < len(envelopeMagic)+1 || string(data[:len(envelopeMagic)]) != envelopeMagic {
		return Record{}, ErrNotEnvelope
	}
	if v := data[len(envelopeMagic)]; v != envelopeVersion {
		return Record{}, fmt.Errorf("%w %d", ErrUnsupportedEnvelopeVersion, v)
	}
	if len(data) < envelopeFixedSize {
		return Record{}, fmt.Errorf("%w: %d bytes are too few", ErrCorruptEnvelope, len(data))
	}
	d := envelopeDecoder{src: data[len(envelopeMagic)+1:]}
	var r Record
	r.Timestamp = int64(binary.BigEndian.Uint64(d.src))
	d.src = d.src[8:]
	r.Key = d.bytes("key")
	r.Value = d.bytes("value")
	numHeaders := d.length("header count")
	// Each header takes at least its two lengths.
	if d.err == nil && numHeaders > len(d.src)/8 {
		d.fail("%d headers cannot fit in %d bytes", numHeaders, len(d.src))
	}
	if d.err == nil && numHeaders > 0 {
		r.Headers = make([]Header, numHeaders)
		for i := range r.Headers {
			r.Headers[i].Key = string(d.take(d.length("header key length"), "header key"))
			r.Headers[i].Value = d.bytes("header value")
		}
	}
	if d.err == nil && len(d.src) != 0 {
		d.fail("%d bytes after the last header", len(d.src))
	}
	if d.err != nil {
		return Record{}, d.err
	}
	return r, nil
}

// envelopeDecoder reads the fields of an envelope; after the first failure
// every read returns zero values and err keeps the first problem.
type envelopeDecoder struct {
	src []byte
	err error
}

func (d *envelopeDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorruptEnvelope, fmt.Sprintf(format, args...))
	}
}

// readInt32 reads a big-endian int32.
func (d *envelopeDecoder) readInt32(field string) int32 {
	if d.err != nil {
		return 0
	}
	if len(d.src) < 4 {
		d.fail("truncated %s", field)
		return 0
	}
	n := int32(binary.BigEndian.Uint32(d.src))
	d.src = d.src[4:]
	return n
}

// length reads a non-negative int32.
func (d *envelopeDecoder) length(field string) int {
	n := d.readInt32(field)
	if n < 0 {
		d.fail("negative %s %d", field, n)
		return 0
	}
	return int(n)
}

// bytes reads a nullable byte string (length -1 = null).
func (d *envelopeDecoder) bytes(field string) []byte {
	n := d.readInt32(field + " length")
	switch {
	case d.err != nil || n == -1:
		return nil
	case n < 0:
		d.fail("negative %s length %d", field, n)
		return nil
	}
	return d.take(int(n), field)
}

// take returns the next n bytes, aliasing the source.
func (d *envelopeDecoder) take(n int, field string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.src) {
		d.fail("%s of %d bytes exceeds the %d bytes left", field, n, len(d.src))
		return nil
	}
	b := d.src[:n:n]
	d.src = d.src[n:]
	return b
}
