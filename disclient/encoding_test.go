package disclient

import (
	"net/http"
	"reflect"
	"testing"
)

func protobufClient(t *testing.T, endpoint string) *Client {
	t.Helper()
	return newTestClient(t, endpoint, func(cfg *Config) { cfg.Encoding = EncodingProtobuf })
}

// protobufPutAnswer is putAnswer as a protobuf PutRecordsResult.
func protobufPutAnswer(results ...PutRecordsResult) []byte {
	resp := PutRecordsResponse{Records: results}
	for _, r := range results {
		if r.ErrorCode != "" {
			resp.FailedRecordCount++
		}
	}
	return resp.AppendProtobuf(nil)
}

// protobufSentData decodes the record payloads of a protobuf PutRecords body.
func protobufSentData(t *testing.T, r seenRequest) []string {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != ContentTypeProtobuf {
		t.Errorf("Content-Type %q, want %q", ct, ContentTypeProtobuf)
	}
	var req PutRecordsRequest
	if err := req.UnmarshalProtobuf(r.Body); err != nil {
		t.Fatalf("decoding PutRecords body: %v", err)
	}
	out := make([]string, len(req.Records))
	for i, rec := range req.Records {
		out[i] = string(rec.Data)
	}
	return out
}

func TestEncodingConfig(t *testing.T) {
	for enc, ok := range map[BodyEncoding]bool{"": true, EncodingJSON: true, EncodingProtobuf: true, "xml": false, "JSON": false} {
		_, err := New(Config{Endpoint: "http://127.0.0.1:1", ProjectID: testProject, Encoding: enc})
		if (err == nil) != ok {
			t.Errorf("Encoding %q: error %v", enc, err)
		}
	}
}

// TestProtobufPutRecordsPartialFailure is TestPutRecordsPartialFailure in
// protobuf mode: the same records are resent and merged the same way.
func TestProtobufPutRecordsPartialFailure(t *testing.T) {
	replies := [][]byte{
		protobufPutAnswer(ok("10"), failed(CodeTrafficControl), failed(CodeInvalidPartitionID), failed(CodeSystemError), ok("11")),
		protobufPutAnswer(ok("12"), failed(CodeTrafficControl)),
		protobufPutAnswer(ok("13")),
	}
	srv := newFake(t, func(w http.ResponseWriter, n int, _ seenRequest) {
		w.Header().Set("Content-Type", ContentTypeProtobuf)
		_, _ = w.Write(replies[min(n, len(replies)-1)])
	})
	c := protobufClient(t, srv.URL)
	resp, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("r0", "r1", "r2", "r3", "r4")})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	wantSent := [][]string{{"r0", "r1", "r2", "r3", "r4"}, {"r1", "r3"}, {"r3"}}
	if len(reqs) != len(wantSent) {
		t.Fatalf("%d requests, want %d", len(reqs), len(wantSent))
	}
	for i, want := range wantSent {
		if reqs[i].Method != http.MethodPost || reqs[i].Path != "/v2/"+testProject+"/records" {
			t.Errorf("request %d: %s %s", i, reqs[i].Method, reqs[i].Path)
		}
		if got := protobufSentData(t, reqs[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("request %d sent %v, want %v", i, got, want)
		}
	}
	want := &PutRecordsResponse{FailedRecordCount: 1, Records: []PutRecordsResult{
		ok("10"), ok("12"), failed(CodeInvalidPartitionID), ok("13"), ok("11"),
	}}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}
}

// TestProtobufGetRecords checks the request (a GET with the usual query and
// the protobuf Content-Type) and the decoding of the answer.
func TestProtobufGetRecords(t *testing.T) {
	answer := (&GetRecordsResponse{NextPartitionCursor: "next-1", Records: []Record{
		{SequenceNumber: "5", Data: []byte("v"), PartitionKey: "k", Timestamp: 42, TimestampType: "CreateTime"},
	}}).AppendProtobuf(nil)
	srv := newFake(t, func(w http.ResponseWriter, _ int, _ seenRequest) { _, _ = w.Write(answer) })
	c := protobufClient(t, srv.URL)
	resp, err := c.GetRecords(t.Context(), "cursor-0", 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := &GetRecordsResponse{NextPartitionCursor: "next-1", Records: []Record{
		{SequenceNumber: "5", Data: []byte("v"), PartitionKey: "k", Timestamp: 42, TimestampType: "CreateTime"},
	}}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("got %+v, want %+v", resp, want)
	}
	r := srv.requests()[0]
	if r.Method != http.MethodGet || r.Query.Get("partition-cursor") != "cursor-0" || r.Query.Get("max_fetch_bytes") != "1000" ||
		r.Header.Get("Content-Type") != ContentTypeProtobuf || len(r.Body) != 0 {
		t.Errorf("request %s %v, Content-Type %q, %d body bytes", r.Method, r.Query, r.Header.Get("Content-Type"), len(r.Body))
	}
}

// TestProtobufAnswers checks error answers (JSON, whatever their
// Content-Type) and success answers that are not a valid message.
func TestProtobufAnswers(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, n int, _ seenRequest) {
		w.Header().Set("Content-Type", ContentTypeProtobuf)
		switch n {
		case 0:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"errorCode":"DIS.4301","message":"Stream does not exist. [s1]"}`))
		default:
			_, _ = w.Write([]byte(`{"records":[],"next_partition_cursor":"x"}`))
		}
	})
	c := protobufClient(t, srv.URL)
	if _, err := c.GetRecords(t.Context(), "cursor-0", 0); !IsCode(err, CodeStreamNotFound) {
		t.Errorf("error answer: %v, want %s", err, CodeStreamNotFound)
	}
	if _, err := c.GetRecords(t.Context(), "cursor-0", 0); err == nil {
		t.Error("a JSON success answer decoded as protobuf")
	}
	if _, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a")}); err == nil {
		t.Error("a JSON success answer decoded as protobuf")
	}
}
