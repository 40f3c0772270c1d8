package disclient

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// messageProto is the part of the DIS Java SDK's message.proto this package
// speaks (docs/dis-api.md §4), written out so that the reference protobuf
// runtime can check the hand-written codec.
const messageProto = `
name: "message.proto" package: "dis" syntax: "proto2"
message_type {
  name: "PutRecordsRequest"
  field { name: "streamName" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "streamId" number: 30 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "records" number: 2 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".dis.PutRecordsRequestEntry" }
}
message_type {
  name: "PutRecordsRequestEntry"
  field { name: "data" number: 3 label: LABEL_OPTIONAL type: TYPE_BYTES }
  field { name: "explicitHashKey" number: 4 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "partitionKey" number: 5 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "partitionId" number: 6 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "extendedInfo" number: 7 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".dis.PutRecordsRequestEntryExtendedInfo" }
  field { name: "timestamp" number: 29 label: LABEL_OPTIONAL type: TYPE_INT64 }
}
message_type {
  name: "PutRecordsRequestEntryExtendedInfo"
  field { name: "fileName" number: 8 label: LABEL_REQUIRED type: TYPE_STRING }
  field { name: "deliverDataId" number: 9 label: LABEL_REQUIRED type: TYPE_STRING }
  field { name: "endFlag" number: 10 label: LABEL_OPTIONAL type: TYPE_BOOL default_value: "false" }
  field { name: "seqNum" number: 11 label: LABEL_REQUIRED type: TYPE_INT64 }
}
message_type {
  name: "PutRecordsResult"
  field { name: "failedRecordCount" number: 21 label: LABEL_REQUIRED type: TYPE_INT32 }
  field { name: "records" number: 22 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".dis.PutRecordsResultEntry" }
}
message_type {
  name: "PutRecordsResultEntry"
  field { name: "shardId" number: 23 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "sequenceNumber" number: 24 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "errorCode" number: 25 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "errorMessage" number: 26 label: LABEL_OPTIONAL type: TYPE_STRING }
}
message_type {
  name: "GetRecordsResult"
  field { name: "nextShardIterator" number: 14 label: LABEL_REQUIRED type: TYPE_STRING }
  field { name: "records" number: 16 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".dis.Record" }
}
message_type {
  name: "Record"
  field { name: "partitionKey" number: 17 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "sequenceNumber" number: 18 label: LABEL_REQUIRED type: TYPE_STRING }
  field { name: "data" number: 19 label: LABEL_OPTIONAL type: TYPE_BYTES }
  field { name: "timestamp" number: 27 label: LABEL_OPTIONAL type: TYPE_INT64 }
  field { name: "timestampType" number: 28 label: LABEL_OPTIONAL type: TYPE_STRING }
}
`

// referenceMessage parses text (protobuf text format, field names as in
// message.proto) into a dynamic message of the named type.
func referenceMessage(t *testing.T, name, text string) *dynamicpb.Message {
	t.Helper()
	var fdp descriptorpb.FileDescriptorProto
	if err := prototext.Unmarshal([]byte(messageProto), &fdp); err != nil {
		t.Fatal(err)
	}
	fd, err := protodesc.NewFile(&fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().ByName(protoreflect.Name(name))
	if md == nil {
		t.Fatalf("no message %s", name)
	}
	m := dynamicpb.NewMessage(md)
	if err := prototext.Unmarshal([]byte(text), m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProtobufAgainstReference checks the codec against the reference
// runtime both ways, for messages written with message.proto's field names:
// what this package encodes parses there (required fields included) into
// the same message, and what the reference encodes decodes here as
// expected.
func TestProtobufAgainstReference(t *testing.T) {
	ts, zero := int64(1_700_000_000_123), int64(0)
	cases := []struct {
		name, text string
		model      protobufMessage
	}{
		{"PutRecordsRequest", `streamName: "s1" streamId: "id"
			records { data: "a\x00b" explicitHashKey: "42" partitionKey: "k" partitionId: "shardId-0000000001" timestamp: 1700000000123 }
			records { data: "" timestamp: 0 }`,
			&PutRecordsRequest{StreamName: "s1", StreamID: "id", Records: []PutRecordsEntry{
				{Data: []byte("a\x00b"), ExplicitHashKey: "42", PartitionKey: "k", PartitionID: "shardId-0000000001", Timestamp: &ts},
				{Data: []byte{}, Timestamp: &zero},
			}}},
		{"PutRecordsResult", `failedRecordCount: 1
			records { shardId: "shardId-0000000000" sequenceNumber: "7" }
			records { errorCode: "DIS.4303" errorMessage: "throttled" }`,
			&PutRecordsResponse{FailedRecordCount: 1, Records: []PutRecordsResult{
				{PartitionID: "shardId-0000000000", SequenceNumber: "7"},
				{ErrorCode: "DIS.4303", ErrorMessage: "throttled"},
			}}},
		{"GetRecordsResult", `nextShardIterator: "cursor"
			records { partitionKey: "k" sequenceNumber: "3" data: "v" timestamp: 1700000000123 timestampType: "CreateTime" }
			records { sequenceNumber: "4" data: "" timestamp: -5 }`,
			&GetRecordsResponse{NextPartitionCursor: "cursor", Records: []Record{
				{PartitionKey: "k", SequenceNumber: "3", Data: []byte("v"), Timestamp: ts, TimestampType: "CreateTime"},
				{SequenceNumber: "4", Data: []byte{}, Timestamp: -5},
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := referenceMessage(t, tc.name, tc.text)
			got := dynamicpb.NewMessage(want.Descriptor())
			if err := proto.Unmarshal(tc.model.AppendProtobuf(nil), got); err != nil {
				t.Fatalf("reference runtime rejects our encoding: %v", err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("our encoding parses as\n%v\nwant\n%v", prototext.Format(got), prototext.Format(want))
			}
			ref, err := proto.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			decoded := reflect.New(reflect.TypeOf(tc.model).Elem()).Interface().(protobufMessage)
			if err := decoded.UnmarshalProtobuf(ref); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(decoded, tc.model) {
				t.Errorf("reference encoding decodes as\n%+v\nwant\n%+v", decoded, tc.model)
			}
		})
	}
}

// TestProtobufWireBytes pins the encoding of small messages to bytes worked
// out by hand from the field numbers and wire types.
func TestProtobufWireBytes(t *testing.T) {
	one := int64(1)
	cases := []struct {
		name  string
		model protobufMessage
		want  []byte
	}{
		{"PutRecordsRequest", &PutRecordsRequest{StreamName: "s", Records: []PutRecordsEntry{{Data: []byte("hi"), PartitionID: "0", Timestamp: &one}}},
			[]byte{
				0x0a, 0x01, 's', // 1: streamName
				0x12, 0x0a, // 2: records, 10 bytes
				0x1a, 0x02, 'h', 'i', // 3: data
				0x32, 0x01, '0', // 6: partitionId
				0xe8, 0x01, 0x01, // 29: timestamp (tag 232 as a two-byte varint)
			}},
		{"PutRecordsResult", &PutRecordsResponse{FailedRecordCount: 1, Records: []PutRecordsResult{{ErrorCode: "E"}}},
			[]byte{
				0xa8, 0x01, 0x01, // 21: failedRecordCount
				0xb2, 0x01, 0x04, // 22: records, 4 bytes
				0xca, 0x01, 0x01, 'E', // 25: errorCode
			}},
		{"GetRecordsResult", &GetRecordsResponse{NextPartitionCursor: "c", Records: []Record{{SequenceNumber: "7", Data: []byte("x"), Timestamp: 5}}},
			[]byte{
				0x82, 0x01, 0x0b, // 16: records, 11 bytes
				0x92, 0x01, 0x01, '7', // 18: sequenceNumber
				0x9a, 0x01, 0x01, 'x', // 19: data
				0xd8, 0x01, 0x05, // 27: timestamp
				0x72, 0x01, 'c', // 14: nextShardIterator
			}},
	}
	for _, tc := range cases {
		if got := tc.model.AppendProtobuf(nil); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: encoded % x\nwant % x", tc.name, got, tc.want)
		}
	}
}

// normalizeData makes absent data empty: protobuf cannot tell them apart
// once data is always sent, and neither can DIS.
func normalizeData(m protobufMessage) {
	switch m := m.(type) {
	case *PutRecordsRequest:
		for i := range m.Records {
			if m.Records[i].Data == nil {
				m.Records[i].Data = []byte{}
			}
		}
	case *GetRecordsResponse:
		for i := range m.Records {
			if m.Records[i].Data == nil {
				m.Records[i].Data = []byte{}
			}
		}
	}
}

// roundTripCases are messages of every type: empty, with absent and zero
// values, and with large data.
func roundTripCases() map[string]protobufMessage {
	large := bytes.Repeat([]byte{0, 1, 2, 0xff}, 512<<10)
	neg, zero := int64(-1), int64(0)
	return map[string]protobufMessage{
		"put request empty":       &PutRecordsRequest{},
		"put request stream id":   &PutRecordsRequest{StreamID: "sid", Records: []PutRecordsEntry{{}}},
		"put request nil data":    &PutRecordsRequest{StreamName: "s", Records: []PutRecordsEntry{{Data: nil, PartitionKey: "ключ"}, {Data: []byte{}, Timestamp: &zero}}},
		"put request large":       &PutRecordsRequest{StreamName: "s", Records: []PutRecordsEntry{{Data: large, Timestamp: &neg}, {Data: []byte("small"), ExplicitHashKey: "9"}}},
		"put result empty":        &PutRecordsResponse{},
		"put result negative":     &PutRecordsResponse{FailedRecordCount: -1, Records: []PutRecordsResult{{}}},
		"put result mixed":        &PutRecordsResponse{FailedRecordCount: 1, Records: []PutRecordsResult{{PartitionID: "shardId-0000000000", SequenceNumber: "0"}, {ErrorCode: "DIS.4319", ErrorMessage: "bad"}}},
		"get result empty":        &GetRecordsResponse{},
		"get result empty record": &GetRecordsResponse{NextPartitionCursor: "c", Records: []Record{{}}},
		"get result large":        &GetRecordsResponse{NextPartitionCursor: "c", Records: []Record{{PartitionKey: "k", SequenceNumber: "1", Data: large, Timestamp: -1, TimestampType: "CreateTime"}, {SequenceNumber: "2"}}},
	}
}

// decodeLike decodes b into a new message of m's type.
func decodeLike(m protobufMessage, b []byte) (protobufMessage, error) {
	out := reflect.New(reflect.TypeOf(m).Elem()).Interface().(protobufMessage)
	return out, out.UnmarshalProtobuf(b)
}

func TestProtobufRoundTrip(t *testing.T) {
	for name, m := range roundTripCases() {
		b := m.AppendProtobuf(nil)
		got, err := decodeLike(m, b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		normalizeData(m)
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%s: decoded %+v, want %+v", name, got, m)
		}
	}
}

// TestProtobufDataIsCopied checks that decoded data does not alias the
// input, which the client returns to a buffer pool.
func TestProtobufDataIsCopied(t *testing.T) {
	b := (&GetRecordsResponse{NextPartitionCursor: "c", Records: []Record{{SequenceNumber: "1", Data: []byte("abc")}}}).AppendProtobuf(nil)
	var got GetRecordsResponse
	if err := got.UnmarshalProtobuf(b); err != nil {
		t.Fatal(err)
	}
	clear(b)
	if string(got.Records[0].Data) != "abc" {
		t.Fatalf("data %q changed with the input", got.Records[0].Data)
	}
}

// TestPutRecordsShared checks that UnmarshalProtobufShared decodes what
// UnmarshalProtobuf does, with record data aliasing the body, and that
// UnmarshalProtobuf's does not.
func TestPutRecordsShared(t *testing.T) {
	ts := int64(5)
	req := PutRecordsRequest{StreamName: "s", Records: []PutRecordsEntry{
		{Data: []byte("abc"), PartitionKey: "k", Timestamp: &ts},
		{Data: []byte("defg"), PartitionID: "shardId-0000000001"},
	}}
	b := req.AppendProtobuf(nil)
	var copied, shared PutRecordsRequest
	if err := copied.UnmarshalProtobuf(b); err != nil {
		t.Fatal(err)
	}
	if err := shared.UnmarshalProtobufShared(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(copied, shared) || !reflect.DeepEqual(shared, req) {
		t.Fatalf("shared %+v, copied %+v, want %+v", shared, copied, req)
	}
	if d := shared.Records[1].Data; cap(d) != len(d) {
		t.Fatalf("shared data has spare capacity %d: an append would overwrite the body", cap(d)-len(d))
	}
	clear(b)
	if string(copied.Records[0].Data) != "abc" || string(shared.Records[0].Data) != "\x00\x00\x00" {
		t.Fatalf("after clearing the body: copied %q, shared %q", copied.Records[0].Data, shared.Records[0].Data)
	}
}

// unknownFields holds one field of every wire type under numbers message.proto
// does not use, a known number with the wrong wire type, and the Java SDK's
// extendedInfo (7), which this package does not model.
func unknownFields() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1000, protowire.VarintType)
	b = protowire.AppendVarint(b, 123456789)
	b = protowire.AppendTag(b, 1001, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 7)
	b = protowire.AppendTag(b, 1002, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 8)
	b = protowire.AppendTag(b, 1003, protowire.BytesType)
	b = protowire.AppendString(b, "ignored")
	b = protowire.AppendTag(b, 1004, protowire.StartGroupType)
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 1004, protowire.EndGroupType)
	b = protowire.AppendTag(b, fieldRecordTimestamp, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 99)
	b = protowire.AppendTag(b, 7, protowire.BytesType)
	return protowire.AppendString(b, "\x42\x01x")
}

// TestProtobufSkipsUnknownFields adds unknown fields to messages and to the
// records inside them and expects the same decoding as without.
func TestProtobufSkipsUnknownFields(t *testing.T) {
	unknown := unknownFields()
	ts := int64(3)
	put := &PutRecordsRequest{StreamName: "s", Records: []PutRecordsEntry{{Data: []byte("d"), Timestamp: &ts}}}
	get := &GetRecordsResponse{NextPartitionCursor: "c", Records: []Record{{SequenceNumber: "1", Data: []byte("d"), Timestamp: 3}}}
	res := &PutRecordsResponse{FailedRecordCount: 0, Records: []PutRecordsResult{{SequenceNumber: "1"}}}

	var b []byte
	b = append(b, unknown...)
	b = put.AppendProtobuf(b)
	// The same record again with unknown fields inside; the first record
	// is then checked against the second.
	entry := append(put.Records[0].appendProtobuf(nil), unknown...)
	b = protowire.AppendTag(b, fieldPutRecords, protowire.BytesType)
	b = protowire.AppendBytes(b, entry)
	var gotPut PutRecordsRequest
	if err := gotPut.UnmarshalProtobuf(b); err != nil {
		t.Fatal(err)
	}
	if len(gotPut.Records) != 2 || !reflect.DeepEqual(gotPut.Records[0], gotPut.Records[1]) || *gotPut.Records[1].Timestamp != 3 || gotPut.StreamName != "s" {
		t.Errorf("PutRecordsRequest with unknown fields: %+v", gotPut)
	}

	b = append(get.AppendProtobuf(nil), unknown...)
	rec := appendRecord(nil, "", "1", []byte("d"), 3, "")
	_, _, n := protowire.ConsumeTag(rec)
	inner, _ := protowire.ConsumeBytes(rec[n:])
	b = protowire.AppendTag(b, fieldGetRecords, protowire.BytesType)
	b = protowire.AppendBytes(b, append(append([]byte(nil), inner...), unknown...))
	var gotGet GetRecordsResponse
	if err := gotGet.UnmarshalProtobuf(b); err != nil {
		t.Fatal(err)
	}
	if len(gotGet.Records) != 2 || !reflect.DeepEqual(gotGet.Records[0], gotGet.Records[1]) || gotGet.Records[1].Timestamp != 3 {
		t.Errorf("GetRecordsResult with unknown fields: %+v", gotGet)
	}

	b = append(res.AppendProtobuf(nil), unknown...)
	var gotRes PutRecordsResponse
	if err := gotRes.UnmarshalProtobuf(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&gotRes, res) {
		t.Errorf("PutRecordsResult with unknown fields: %+v", gotRes)
	}
}

// TestProtobufRequiredFields checks that messages without a proto2 required
// field are rejected.
func TestProtobufRequiredFields(t *testing.T) {
	noCount := protowire.AppendTag(nil, fieldPutResultRecords, protowire.BytesType)
	noCount = protowire.AppendBytes(noCount, nil)
	noCursor := appendRecord(nil, "", "1", nil, 0, "")
	noSeq := protowire.AppendTag(nil, fieldGetRecords, protowire.BytesType)
	noSeq = protowire.AppendBytes(noSeq, appendStringField(nil, fieldRecordData, "x"))
	noSeq = AppendGetRecordsCursor(noSeq, "c")
	for name, tc := range map[string]struct {
		m protobufMessage
		b []byte
	}{
		"PutRecordsResult without failedRecordCount": {&PutRecordsResponse{}, noCount},
		"empty PutRecordsResult":                     {&PutRecordsResponse{}, nil},
		"GetRecordsResult without nextShardIterator": {&GetRecordsResponse{}, noCursor},
		"Record without sequenceNumber":              {&GetRecordsResponse{}, noSeq},
	} {
		if err := tc.m.UnmarshalProtobuf(tc.b); !errors.Is(err, errProtobufRequired) {
			t.Errorf("%s: error %v, want a missing required field", name, err)
		}
	}
}

// TestProtobufTruncated cuts every message short at every length: no cut
// may panic, and a cut inside the last field is an error.
func TestProtobufTruncated(t *testing.T) {
	for name, m := range roundTripCases() {
		b := m.AppendProtobuf(nil)
		for n := range len(b) {
			_, _ = decodeLike(m, b[:n])
		}
		if len(b) == 0 {
			continue
		}
		if _, err := decodeLike(m, b[:len(b)-1]); err == nil {
			t.Errorf("%s: cut by one byte decoded without error", name)
		}
	}
}

// FuzzProtobufDecode feeds garbage to every decoder: none may panic, and
// whatever decodes must encode and decode to the same message.
func FuzzProtobufDecode(f *testing.F) {
	for _, m := range roundTripCases() {
		b := m.AppendProtobuf(nil)
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Add(unknownFields())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []protobufMessage{&PutRecordsRequest{}, &PutRecordsResponse{}, &GetRecordsResponse{}} {
			if m.UnmarshalProtobuf(b) != nil {
				continue
			}
			again, err := decodeLike(m, m.AppendProtobuf(nil))
			normalizeData(m)
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Errorf("%T: re-encoding %+v decodes as %+v, %v", m, m, again, err)
			}
		}
	})
}

func TestIsProtobuf(t *testing.T) {
	for ct, want := range map[string]bool{
		ContentTypeProtobuf:               true,
		"application/x-protobuf":          true,
		" Application/X-Protobuf ;q=1":    true,
		"application/json":                false,
		"application/json; charset=utf-8": false,
		"":                                false,
	} {
		if got := IsProtobuf(ct); got != want {
			t.Errorf("IsProtobuf(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestArenaChunks checks that a decoded answer's values come from chunks
// of at most arenaChunk bytes, and large values from allocations of their
// own, so that a kept record cannot keep the whole answer alive.
func TestArenaChunks(t *testing.T) {
	small := bytes.Repeat([]byte{1}, 1000)
	large := bytes.Repeat([]byte{2}, arenaChunk/4+1)
	a := arena{size: 300*len(small) + len(large)}
	var chunks int
	var prev []byte
	for i := range 300 {
		v := a.clone(small)
		if !bytes.Equal(v, small) || cap(v) != len(v) {
			t.Fatalf("value %d: %d bytes, cap %d", i, len(v), cap(v))
		}
		if cap(a.buf) > arenaChunk {
			t.Fatalf("chunk of %d bytes", cap(a.buf))
		}
		if len(a.buf) == len(small) {
			chunks++
		}
		if i == 150 {
			prev = a.buf
			if v := a.clone(large); !bytes.Equal(v, large) || len(a.buf) != len(prev) {
				t.Fatalf("a large value went into the chunk (%d bytes, was %d)", len(a.buf), len(prev))
			}
		}
	}
	if want := (300*len(small) + arenaChunk - 1) / arenaChunk; chunks < want {
		t.Fatalf("%d chunks, want at least %d", chunks, want)
	}
}
