package dislocal

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
)

// serveProtobuf sends a request with the protobuf Content-Type straight to
// the handler.
func (e *env) serveProtobuf(method, target string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://dis.local"+target, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", disclient.ContentTypeProtobuf)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return rec
}

// TestProtobufRecords writes with a protobuf body and reads with both
// encodings: the answers carry the same records, and a failed record and a
// bad body are reported as they are in JSON.
func TestProtobufRecords(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	ts := int64(77)
	req := &disclient.PutRecordsRequest{StreamName: "s", Records: []disclient.PutRecordsEntry{
		{Data: []byte("a"), PartitionID: "0", PartitionKey: "k", Timestamp: &ts},
		{Data: []byte("b"), PartitionID: "9"},
		{Data: []byte("c"), PartitionID: "shardId-0000000000"},
	}}
	rec := e.serveProtobuf("POST", v2("/records"), req.AppendProtobuf(nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != disclient.ContentTypeProtobuf {
		t.Fatalf("put: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var put disclient.PutRecordsResponse
	if err := put.UnmarshalProtobuf(rec.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	want := disclient.PutRecordsResponse{FailedRecordCount: 1, Records: []disclient.PutRecordsResult{
		{PartitionID: "shardId-0000000000", SequenceNumber: "0"},
		{ErrorCode: disclient.CodePartitionNotFound, ErrorMessage: "Partition does not exist. [shardId-0000000009]"},
		{PartitionID: "shardId-0000000000", SequenceNumber: "1"},
	}}
	if !reflect.DeepEqual(put, want) {
		t.Errorf("put answer %+v, want %+v", put, want)
	}

	for _, limit := range []int{1, 10} {
		c := e.cursor("s", "0", disclient.CursorTrimHorizon)
		target := v2("/records?limit=%d&partition-cursor=%s", limit, c)
		rec = e.serveProtobuf("GET", target, nil)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != disclient.ContentTypeProtobuf {
			t.Fatalf("get: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		var got disclient.GetRecordsResponse
		if err := got.UnmarshalProtobuf(rec.Body.Bytes()); err != nil {
			t.Fatal(err)
		}
		viaJSON := e.get(c, "limit", strconv.Itoa(limit))
		if len(got.Records) != min(limit, 2) || got.Records[0].Timestamp != ts || got.Records[0].PartitionKey != "k" ||
			!reflect.DeepEqual(got.Records, viaJSON.Records) {
			t.Errorf("limit %d: protobuf read %+v, JSON read %+v", limit, got.Records, viaJSON.Records)
		}
		// Cursors embed the time they were made, so only their use is compared.
		if next := e.get(got.NextPartitionCursor); len(next.Records) != 2-len(got.Records) {
			t.Errorf("limit %d: the protobuf answer's cursor reads %d more records", limit, len(next.Records))
		}
	}

	for name, body := range map[string][]byte{
		"garbage":        []byte("\xff\xff\xff"),
		"truncated":      req.AppendProtobuf(nil)[:10],
		"JSON":           []byte(`{"stream_name":"s","records":[{"data":"YQ=="}]}`),
		"no records":     (&disclient.PutRecordsRequest{StreamName: "s"}).AppendProtobuf(nil),
		"missing stream": (&disclient.PutRecordsRequest{StreamName: "nope", Records: req.Records}).AppendProtobuf(nil),
	} {
		rec := e.serveProtobuf("POST", v2("/records"), body)
		var eb disclient.ErrorBody
		if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &eb) != nil || !strings.HasPrefix(eb.ErrorCode, "DIS.4") {
			t.Errorf("%s: %d %s, want a 400 with a DIS error body", name, rec.Code, rec.Body)
		}
	}
}

// FuzzProtobufPutRecords sends arbitrary protobuf PutRecords bodies: the
// server must not panic or fail with a 5xx, and must answer every record it
// accepts a request for.
func FuzzProtobufPutRecords(f *testing.F) {
	e := newEnv(f)
	e.createStream("s", 2)
	ts := int64(5)
	f.Add((&disclient.PutRecordsRequest{StreamName: "s", Records: []disclient.PutRecordsEntry{
		{Data: []byte("a"), PartitionID: "1", Timestamp: &ts}, {PartitionKey: "k"}, {ExplicitHashKey: "99"},
	}}).AppendProtobuf(nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := e.serveProtobuf("POST", v2("/records"), body)
		if rec.Code >= 500 {
			t.Fatalf("%q: %d %s", body, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK {
			return
		}
		var req disclient.PutRecordsRequest
		var resp disclient.PutRecordsResponse
		if err := req.UnmarshalProtobuf(body); err != nil {
			t.Fatalf("accepted a body that does not decode: %v", err)
		}
		if err := resp.UnmarshalProtobuf(rec.Body.Bytes()); err != nil || len(resp.Records) != len(req.Records) {
			t.Fatalf("answer %+v, %v for %d records", resp, err, len(req.Records))
		}
	})
}
