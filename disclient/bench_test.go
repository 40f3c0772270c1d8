package disclient

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// benchServer answers every request with reply, reading the request body so
// the client pays for sending it.
func benchServer(b *testing.B, enc BodyEncoding, reply []byte) *Client {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
		_, _ = w.Write(reply)
	}))
	b.Cleanup(srv.Close)
	c, err := New(Config{Endpoint: srv.URL, ProjectID: testProject, Encoding: enc})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// encodeReply encodes an answer the way enc sends it.
func encodeReply(b *testing.B, enc BodyEncoding, m protobufMessage) []byte {
	if enc == EncodingProtobuf {
		return m.AppendProtobuf(nil)
	}
	reply, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return reply
}

// BenchmarkPutRecords sends 100 records of 1 KiB per call, in each encoding.
func BenchmarkPutRecords(b *testing.B) {
	req := &PutRecordsRequest{StreamName: "s1", Records: make([]PutRecordsEntry, 100)}
	results := make([]PutRecordsResult, len(req.Records))
	for i := range req.Records {
		req.Records[i] = PutRecordsEntry{Data: bytes.Repeat([]byte{'x'}, 1024), PartitionID: "shardId-0000000000"}
		results[i] = PutRecordsResult{PartitionID: "shardId-0000000000", SequenceNumber: strconv.Itoa(i)}
	}
	for _, enc := range []BodyEncoding{EncodingJSON, EncodingProtobuf} {
		b.Run(string(enc), func(b *testing.B) {
			c := benchServer(b, enc, encodeReply(b, enc, &PutRecordsResponse{Records: results}))
			b.SetBytes(int64(len(req.Records) * 1024))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.PutRecords(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetRecords reads 100 records of 1 KiB per call, in each encoding.
func BenchmarkGetRecords(b *testing.B) {
	records := make([]Record, 100)
	for i := range records {
		records[i] = Record{SequenceNumber: strconv.Itoa(i), Data: bytes.Repeat([]byte{'x'}, 1024), Timestamp: 1700000000000, TimestampType: "CreateTime"}
	}
	for _, enc := range []BodyEncoding{EncodingJSON, EncodingProtobuf} {
		b.Run(string(enc), func(b *testing.B) {
			c := benchServer(b, enc, encodeReply(b, enc, &GetRecordsResponse{Records: records, NextPartitionCursor: "next"}))
			b.SetBytes(int64(len(records) * 1024))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.GetRecords(b.Context(), "cursor", 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
