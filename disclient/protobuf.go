package disclient

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf bodies of PutRecords and GetRecords (docs/dis-api.md §4, the DIS
// Java SDK's message.proto, proto2). They carry record data as raw bytes
// instead of base64 inside JSON, which is most of the cost of the JSON
// bodies. The messages are encoded by hand with protowire into and out of
// the same model types the JSON bodies use, so the client and the embedded
// server share one codec and no generated code. Decoding follows proto2:
// unknown fields (and known fields with an unexpected wire type) are
// skipped, a missing required field is an error, and malformed input is an
// error, never a panic.

// Field numbers of message.proto.
const (
	// PutRecordsRequest
	fieldPutStreamName protowire.Number = 1
	fieldPutStreamID   protowire.Number = 30
	fieldPutRecords    protowire.Number = 2
	// PutRecordsRequestEntry; extendedInfo (7) is not modelled and is
	// skipped on decode.
	fieldEntryData            protowire.Number = 3
	fieldEntryExplicitHashKey protowire.Number = 4
	fieldEntryPartitionKey    protowire.Number = 5
	fieldEntryPartitionID     protowire.Number = 6
	fieldEntryTimestamp       protowire.Number = 29
	// PutRecordsResult
	fieldPutResultFailed  protowire.Number = 21
	fieldPutResultRecords protowire.Number = 22
	// PutRecordsResultEntry
	fieldResultShardID        protowire.Number = 23
	fieldResultSequenceNumber protowire.Number = 24
	fieldResultErrorCode      protowire.Number = 25
	fieldResultErrorMessage   protowire.Number = 26
	// GetRecordsResult
	fieldGetNextShardIterator protowire.Number = 14
	fieldGetRecords           protowire.Number = 16
	// Record
	fieldRecordPartitionKey   protowire.Number = 17
	fieldRecordSequenceNumber protowire.Number = 18
	fieldRecordData           protowire.Number = 19
	fieldRecordTimestamp      protowire.Number = 27
	fieldRecordTimestampType  protowire.Number = 28
)

// errProtobufRequired reports a proto2 required field missing from a
// message; proto2 parsers reject such a message.
var errProtobufRequired = errors.New("required field missing")

// protoError wraps a decoding failure of message msg.
func protoError(msg string, err error) error {
	return fmt.Errorf("disclient: protobuf %s: %w", msg, err)
}

// protoField is one decoded field: its number, wire type and value. Varint
// fields have v set, length-delimited ones b; other wire types are skipped
// by the decoder and never reach a message's switch.
type protoField struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// forEachField calls fn for every varint and length-delimited field of
// message b in order, and skips fields of other wire types. It stops at the
// first error, from the wire format or from fn.
func forEachField(b []byte, fn func(f protoField) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		f := protoField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.VarintType && typ != protowire.BytesType {
			continue
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// countField counts the length-delimited occurrences of field num in
// message b, to size a repeated field before decoding it. Malformed input
// stops the count; decoding then reports the error.
func countField(b []byte, num protowire.Number) int {
	count := 0
	_ = forEachField(b, func(f protoField) error {
		if f.num == num && f.typ == protowire.BytesType {
			count++
		}
		return nil
	})
	return count
}

// arenaChunk is the most memory one copied record can keep alive besides
// its own bytes. A reader that keeps some records of an answer and drops
// the rest (a read cache trimming its oldest records) would otherwise keep
// the whole answer, up to max_fetch_bytes, for one record of it.
const arenaChunk = 64 << 10

// arena hands out copies of decoded bytes, so that none of them aliases
// the caller's buffer. Small values share chunks of arenaChunk bytes (the
// records of an answer cost a few allocations instead of one each); a
// value larger than a quarter chunk gets an allocation of its own. A
// shared arena copies nothing and hands out the message's own bytes.
type arena struct {
	buf    []byte
	size   int // bytes of the message not yet handed out, to size the last chunk
	shared bool
}

func (a *arena) clone(b []byte) []byte {
	if a.shared {
		return b[:len(b):len(b)]
	}
	a.size -= len(b)
	if len(b) > arenaChunk/4 {
		// append to nil allocates without zeroing what it copies over;
		// make would clear the whole record first.
		return append([]byte(nil), b...)
	}
	if a.buf == nil || len(a.buf)+len(b) > cap(a.buf) {
		a.buf = make([]byte, 0, max(len(b), min(arenaChunk, a.size+len(b))))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// lastString turns bytes into a string, reusing the previous one when they
// are equal: the partition ids of a PutRecords answer and the timestamp
// types of a GetRecords answer are mostly one value repeated.
type lastString string

func (l *lastString) get(b []byte) string {
	if string(b) != string(*l) {
		*l = lastString(b)
	}
	return string(*l)
}

// appendStringField appends a length-delimited field; empty values of
// optional fields are left out by the callers.
func appendStringField[S ~string | ~[]byte](b []byte, num protowire.Number, s S) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(s)))
	return append(b, s...)
}

// sizeStringField is the encoded size of appendStringField's output.
func sizeStringField(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func sizeVarintField(num protowire.Number, v uint64) int {
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// AppendProtobuf appends r as a protobuf PutRecordsRequest, the body of a
// PutRecords call in protobuf mode.
func (r *PutRecordsRequest) AppendProtobuf(b []byte) []byte {
	if r.StreamName != "" {
		b = appendStringField(b, fieldPutStreamName, r.StreamName)
	}
	if r.StreamID != "" {
		b = appendStringField(b, fieldPutStreamID, r.StreamID)
	}
	for i := range r.Records {
		e := &r.Records[i]
		b = protowire.AppendTag(b, fieldPutRecords, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(e.sizeProtobuf()))
		b = e.appendProtobuf(b)
	}
	return b
}

// appendProtobuf appends e as a PutRecordsRequestEntry. Data is always sent,
// even empty, as the JSON body always sends it.
func (e *PutRecordsEntry) appendProtobuf(b []byte) []byte {
	b = appendStringField(b, fieldEntryData, e.Data)
	if e.ExplicitHashKey != "" {
		b = appendStringField(b, fieldEntryExplicitHashKey, e.ExplicitHashKey)
	}
	if e.PartitionKey != "" {
		b = appendStringField(b, fieldEntryPartitionKey, e.PartitionKey)
	}
	if e.PartitionID != "" {
		b = appendStringField(b, fieldEntryPartitionID, e.PartitionID)
	}
	if e.Timestamp != nil {
		b = appendVarintField(b, fieldEntryTimestamp, uint64(*e.Timestamp))
	}
	return b
}

func (e *PutRecordsEntry) sizeProtobuf() int {
	n := sizeStringField(fieldEntryData, len(e.Data))
	if e.ExplicitHashKey != "" {
		n += sizeStringField(fieldEntryExplicitHashKey, len(e.ExplicitHashKey))
	}
	if e.PartitionKey != "" {
		n += sizeStringField(fieldEntryPartitionKey, len(e.PartitionKey))
	}
	if e.PartitionID != "" {
		n += sizeStringField(fieldEntryPartitionID, len(e.PartitionID))
	}
	if e.Timestamp != nil {
		n += sizeVarintField(fieldEntryTimestamp, uint64(*e.Timestamp))
	}
	return n
}

// ProtobufPutRecordsCount counts the records of a protobuf
// PutRecordsRequest without decoding them, so that a server can refuse an
// over-long request before it spends a struct on every record.
func ProtobufPutRecordsCount(b []byte) int { return countField(b, fieldPutRecords) }

// UnmarshalProtobuf decodes a protobuf PutRecordsRequest into r, replacing
// its contents. Record data is copied out of b.
func (r *PutRecordsRequest) UnmarshalProtobuf(b []byte) error {
	return r.unmarshalProtobuf(b, &arena{size: len(b)})
}

// UnmarshalProtobufShared is UnmarshalProtobuf with every record's Data
// aliasing b instead of a copy of it: for a server that keeps the body
// until it is done with the request, and so need not allocate the body's
// size again per call.
func (r *PutRecordsRequest) UnmarshalProtobufShared(b []byte) error {
	return r.unmarshalProtobuf(b, &arena{shared: true})
}

func (r *PutRecordsRequest) unmarshalProtobuf(b []byte, data *arena) error {
	*r = PutRecordsRequest{}
	if n := countField(b, fieldPutRecords); n > 0 {
		r.Records = make([]PutRecordsEntry, 0, n)
	}
	err := forEachField(b, func(f protoField) error {
		switch {
		case f.typ != protowire.BytesType:
		case f.num == fieldPutStreamName:
			r.StreamName = string(f.b)
		case f.num == fieldPutStreamID:
			r.StreamID = string(f.b)
		case f.num == fieldPutRecords:
			var e PutRecordsEntry
			if err := e.unmarshalProtobuf(f.b, data); err != nil {
				return err
			}
			r.Records = append(r.Records, e)
		}
		return nil
	})
	if err != nil {
		return protoError("PutRecordsRequest", err)
	}
	return nil
}

func (e *PutRecordsEntry) unmarshalProtobuf(b []byte, data *arena) error {
	return forEachField(b, func(f protoField) error {
		switch {
		case f.num == fieldEntryTimestamp && f.typ == protowire.VarintType:
			ts := int64(f.v)
			e.Timestamp = &ts
		case f.typ != protowire.BytesType:
		case f.num == fieldEntryData:
			e.Data = data.clone(f.b)
		case f.num == fieldEntryExplicitHashKey:
			e.ExplicitHashKey = string(f.b)
		case f.num == fieldEntryPartitionKey:
			e.PartitionKey = string(f.b)
		case f.num == fieldEntryPartitionID:
			e.PartitionID = string(f.b)
		}
		return nil
	})
}

// AppendProtobuf appends r as a protobuf PutRecordsResult, the answer to a
// PutRecords call in protobuf mode. A result's PartitionID travels as
// shardId, the Java SDK's name for it.
func (r *PutRecordsResponse) AppendProtobuf(b []byte) []byte {
	b = appendVarintField(b, fieldPutResultFailed, uint64(int64(r.FailedRecordCount)))
	for i := range r.Records {
		e := &r.Records[i]
		b = protowire.AppendTag(b, fieldPutResultRecords, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(e.sizeProtobuf()))
		b = e.appendProtobuf(b)
	}
	return b
}

func (e *PutRecordsResult) appendProtobuf(b []byte) []byte {
	if e.PartitionID != "" {
		b = appendStringField(b, fieldResultShardID, e.PartitionID)
	}
	if e.SequenceNumber != "" {
		b = appendStringField(b, fieldResultSequenceNumber, e.SequenceNumber)
	}
	if e.ErrorCode != "" {
		b = appendStringField(b, fieldResultErrorCode, e.ErrorCode)
	}
	if e.ErrorMessage != "" {
		b = appendStringField(b, fieldResultErrorMessage, e.ErrorMessage)
	}
	return b
}

func (e *PutRecordsResult) sizeProtobuf() int {
	n := 0
	for _, f := range [...]struct {
		num protowire.Number
		s   string
	}{
		{fieldResultShardID, e.PartitionID},
		{fieldResultSequenceNumber, e.SequenceNumber},
		{fieldResultErrorCode, e.ErrorCode},
		{fieldResultErrorMessage, e.ErrorMessage},
	} {
		if f.s != "" {
			n += sizeStringField(f.num, len(f.s))
		}
	}
	return n
}

// UnmarshalProtobuf decodes a protobuf PutRecordsResult into r, replacing
// its contents.
func (r *PutRecordsResponse) UnmarshalProtobuf(b []byte) error {
	*r = PutRecordsResponse{}
	if n := countField(b, fieldPutResultRecords); n > 0 {
		r.Records = make([]PutRecordsResult, 0, n)
	}
	seenFailed := false
	var shardID lastString
	err := forEachField(b, func(f protoField) error {
		switch {
		case f.num == fieldPutResultFailed && f.typ == protowire.VarintType:
			r.FailedRecordCount = int32(f.v)
			seenFailed = true
		case f.num == fieldPutResultRecords && f.typ == protowire.BytesType:
			var e PutRecordsResult
			if err := e.unmarshalProtobuf(f.b, &shardID); err != nil {
				return err
			}
			r.Records = append(r.Records, e)
		}
		return nil
	})
	if err == nil && !seenFailed {
		err = fmt.Errorf("%w: failedRecordCount", errProtobufRequired)
	}
	if err != nil {
		return protoError("PutRecordsResult", err)
	}
	return nil
}

func (e *PutRecordsResult) unmarshalProtobuf(b []byte, shardID *lastString) error {
	return forEachField(b, func(f protoField) error {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case fieldResultShardID:
			e.PartitionID = shardID.get(f.b)
		case fieldResultSequenceNumber:
			e.SequenceNumber = string(f.b)
		case fieldResultErrorCode:
			e.ErrorCode = string(f.b)
		case fieldResultErrorMessage:
			e.ErrorMessage = string(f.b)
		}
		return nil
	})
}

// AppendProtobuf appends r as a protobuf GetRecordsResult, the answer to a
// GetRecords call in protobuf mode: its records, then the cursor.
func (r *GetRecordsResponse) AppendProtobuf(b []byte) []byte {
	for i := range r.Records {
		rec := &r.Records[i]
		b = appendRecord(b, rec.PartitionKey, rec.SequenceNumber, rec.Data, rec.Timestamp, rec.TimestampType)
	}
	return AppendGetRecordsCursor(b, r.NextPartitionCursor)
}

// AppendGetRecordsRecord appends one record to a GetRecordsResult being
// built piece by piece, from the parts a store keeps, so that a server can
// encode records straight from storage without building a Record each.
// Protobuf fields may come in any order, so records and the cursor
// (AppendGetRecordsCursor) can be appended as they become known.
func AppendGetRecordsRecord(b, partitionKey []byte, sequenceNumber int64, data []byte, timestamp int64, timestampType string) []byte {
	var seq [20]byte
	return appendRecord(b, partitionKey, strconv.AppendInt(seq[:0], sequenceNumber, 10), data, timestamp, timestampType)
}

// AppendGetRecordsCursor appends the cursor to read next to a
// GetRecordsResult; every GetRecordsResult needs exactly one.
func AppendGetRecordsCursor(b []byte, cursor string) []byte {
	return appendStringField(b, fieldGetNextShardIterator, cursor)
}

// appendRecord appends field 16 of a GetRecordsResult: one Record. The
// required sequence number, the data and the timestamp are always written,
// the optional key and timestamp type only when set.
func appendRecord[S ~string | ~[]byte](b []byte, key, seq S, data []byte, ts int64, tsType string) []byte {
	size := sizeStringField(fieldRecordSequenceNumber, len(seq)) +
		sizeStringField(fieldRecordData, len(data)) +
		sizeVarintField(fieldRecordTimestamp, uint64(ts))
	if len(key) > 0 {
		size += sizeStringField(fieldRecordPartitionKey, len(key))
	}
	if tsType != "" {
		size += sizeStringField(fieldRecordTimestampType, len(tsType))
	}
	b = protowire.AppendTag(b, fieldGetRecords, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if len(key) > 0 {
		b = appendStringField(b, fieldRecordPartitionKey, key)
	}
	b = appendStringField(b, fieldRecordSequenceNumber, seq)
	b = appendStringField(b, fieldRecordData, data)
	b = appendVarintField(b, fieldRecordTimestamp, uint64(ts))
	if tsType != "" {
		b = appendStringField(b, fieldRecordTimestampType, tsType)
	}
	return b
}

// UnmarshalProtobuf decodes a protobuf GetRecordsResult into r, replacing
// its contents. Record data is copied out of b.
func (r *GetRecordsResponse) UnmarshalProtobuf(b []byte) error {
	*r = GetRecordsResponse{}
	if n := countField(b, fieldGetRecords); n > 0 {
		r.Records = make([]Record, 0, n)
	}
	data := arena{size: len(b)}
	var tsType lastString
	seenCursor := false
	err := forEachField(b, func(f protoField) error {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case fieldGetNextShardIterator:
			r.NextPartitionCursor = string(f.b)
			seenCursor = true
		case fieldGetRecords:
			var rec Record
			if err := rec.unmarshalProtobuf(f.b, &data, &tsType); err != nil {
				return err
			}
			r.Records = append(r.Records, rec)
		}
		return nil
	})
	if err == nil && !seenCursor {
		err = fmt.Errorf("%w: nextShardIterator", errProtobufRequired)
	}
	if err != nil {
		return protoError("GetRecordsResult", err)
	}
	return nil
}

func (r *Record) unmarshalProtobuf(b []byte, data *arena, tsType *lastString) error {
	seenSeq := false
	err := forEachField(b, func(f protoField) error {
		switch {
		case f.num == fieldRecordTimestamp && f.typ == protowire.VarintType:
			r.Timestamp = int64(f.v)
		case f.typ != protowire.BytesType:
		case f.num == fieldRecordPartitionKey:
			r.PartitionKey = string(f.b)
		case f.num == fieldRecordSequenceNumber:
			r.SequenceNumber = string(f.b)
			seenSeq = true
		case f.num == fieldRecordData:
			r.Data = data.clone(f.b)
		case f.num == fieldRecordTimestampType:
			r.TimestampType = tsType.get(f.b)
		}
		return nil
	})
	if err == nil && !seenSeq {
		err = fmt.Errorf("%w: Record.sequenceNumber", errProtobufRequired)
	}
	return err
}
