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
func benchServer(b *testing.B, reply []byte) *Client {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
		_, _ = w.Write(reply)
	}))
	b.Cleanup(srv.Close)
	c, err := New(Config{Endpoint: srv.URL, ProjectID: testProject})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// BenchmarkPutRecords sends 100 records of 1 KiB per call.
func BenchmarkPutRecords(b *testing.B) {
	req := &PutRecordsRequest{StreamName: "s1", Records: make([]PutRecordsEntry, 100)}
	results := make([]PutRecordsResult, len(req.Records))
	for i := range req.Records {
		req.Records[i] = PutRecordsEntry{Data: bytes.Repeat([]byte{'x'}, 1024), PartitionID: "shardId-0000000000"}
		results[i] = PutRecordsResult{PartitionID: "shardId-0000000000", SequenceNumber: strconv.Itoa(i)}
	}
	reply, _ := json.Marshal(PutRecordsResponse{Records: results})
	c := benchServer(b, reply)
	b.SetBytes(int64(len(req.Records) * 1024))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.PutRecords(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetRecords reads 100 records of 1 KiB per call.
func BenchmarkGetRecords(b *testing.B) {
	records := make([]Record, 100)
	for i := range records {
		records[i] = Record{SequenceNumber: strconv.Itoa(i), Data: bytes.Repeat([]byte{'x'}, 1024), Timestamp: 1700000000000, TimestampType: "CreateTime"}
	}
	reply, _ := json.Marshal(GetRecordsResponse{Records: records, NextPartitionCursor: "next"})
	c := benchServer(b, reply)
	b.SetBytes(int64(len(records) * 1024))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetRecords(b.Context(), "cursor", 0); err != nil {
			b.Fatal(err)
		}
	}
}
