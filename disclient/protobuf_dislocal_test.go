package disclient_test

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

// contentTypes records the Content-Type of every records request and
// answer, to show which encoding really travelled.
type contentTypes struct {
	mu        sync.Mutex
	requests  []string
	responses []string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.URL.Path == "/v2/p1/records" {
		c.mu.Lock()
		c.requests = append(c.requests, r.Header.Get("Content-Type"))
		c.responses = append(c.responses, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

// seen returns the request and answer Content-Types so far, repeats in a
// row collapsed.
func (c *contentTypes) seen() (requests, responses []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	collapse := func(in []string) []string {
		var out []string
		for _, s := range in {
			if len(out) == 0 || out[len(out)-1] != s {
				out = append(out, s)
			}
		}
		return out
	}
	return collapse(c.requests), collapse(c.responses)
}

// TestProtobufAgainstEmbeddedServer writes and reads records with protobuf
// bodies against the embedded server, and reads them again with JSON:
// values, sequence numbers, timestamps, keys and a record failed for a bad
// partition must come out the same either way.
func TestProtobufAgainstEmbeddedServer(t *testing.T) {
	hs := dislocaltest.Start(t)
	newClient := func(enc disclient.BodyEncoding, rt http.RoundTripper) *disclient.Client {
		c, err := disclient.New(disclient.Config{Endpoint: hs.URL, ProjectID: "p1", Encoding: enc,
			HTTPClient: &http.Client{Transport: rt}, Retry: disclient.RetryPolicy{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	pbTypes, jsonTypes := &contentTypes{}, &contentTypes{}
	pb, js := newClient(disclient.EncodingProtobuf, pbTypes), newClient(disclient.EncodingJSON, jsonTypes)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pb.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 2}); err != nil {
		t.Fatal(err)
	}

	ts, early := int64(1_700_000_000_000), int64(5)
	large := bytes.Repeat([]byte{0, 0xff, '"', '\\'}, 256<<10)
	put, err := pb.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "s", Records: []disclient.PutRecordsEntry{
		{Data: []byte("a"), PartitionID: "1", Timestamp: &ts},
		{Data: []byte("bad"), PartitionID: "7"},
		{Data: large, PartitionID: "shardId-0000000001", PartitionKey: "ключ", Timestamp: &early},
		{Data: []byte{}, PartitionID: "1", PartitionKey: "k"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if put.FailedRecordCount != 1 || put.Records[1].ErrorCode != disclient.CodePartitionNotFound || put.Records[1].PartitionID != "" {
		t.Fatalf("put: failed %d, record 1 %+v; want only record 1 failed with %s", put.FailedRecordCount, put.Records[1], disclient.CodePartitionNotFound)
	}
	for i, seq := range map[int]string{0: "0", 2: "1", 3: "2"} {
		if r := put.Records[i]; r.SequenceNumber != seq || r.PartitionID != "shardId-0000000001" || r.ErrorCode != "" {
			t.Errorf("put result %d: %+v, want sequence number %s in shardId-0000000001", i, r, seq)
		}
	}
	// A record put with JSON shows up among the protobuf ones.
	if _, err := js.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "s", Records: []disclient.PutRecordsEntry{{Data: []byte("json"), PartitionID: "1"}}}); err != nil {
		t.Fatal(err)
	}

	cursor := func(c *disclient.Client) string {
		cur, err := c.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "s", PartitionID: "1", CursorType: disclient.CursorTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		return cur.PartitionCursor
	}
	got, err := pb.GetRecords(ctx, cursor(pb), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 4 || got.NextPartitionCursor == "" {
		t.Fatalf("protobuf read: %d records, cursor %q; want 4 and a cursor", len(got.Records), got.NextPartitionCursor)
	}
	want := []disclient.Record{
		{SequenceNumber: "0", Data: []byte("a"), Timestamp: ts, TimestampType: "CreateTime"},
		{SequenceNumber: "1", Data: large, PartitionKey: "ключ", Timestamp: early, TimestampType: "CreateTime"},
		{SequenceNumber: "2", Data: []byte{}, PartitionKey: "k", Timestamp: got.Records[2].Timestamp, TimestampType: "CreateTime"},
		{SequenceNumber: "3", Data: []byte("json"), Timestamp: got.Records[3].Timestamp, TimestampType: "CreateTime"},
	}
	if !reflect.DeepEqual(got.Records, want) {
		t.Errorf("protobuf read differs from what was written")
	}
	if got.Records[2].Timestamp < ts {
		t.Errorf("record without a timestamp got %d, want the time it was received", got.Records[2].Timestamp)
	}
	viaJSON, err := js.GetRecords(ctx, cursor(js), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(viaJSON.Records, got.Records) {
		t.Errorf("JSON and protobuf reads differ")
	}
	empty, err := pb.GetRecords(ctx, got.NextPartitionCursor, 0)
	if err != nil || len(empty.Records) != 0 || empty.NextPartitionCursor == "" {
		t.Errorf("protobuf read at the end: %+v, %v; want no records and a cursor", empty, err)
	}

	// Errors come back as JSON documents in protobuf mode too.
	_, err = pb.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "missing", Records: []disclient.PutRecordsEntry{{Data: []byte("x")}}})
	if !disclient.IsCode(err, disclient.CodeStreamNotFound) {
		t.Errorf("put to a missing stream: %v, want %s", err, disclient.CodeStreamNotFound)
	}
	if _, err := pb.GetRecords(ctx, "garbage", 0); !disclient.IsCode(err, disclient.CodeInvalidCursor) {
		t.Errorf("read with a bad cursor: %v, want %s", err, disclient.CodeInvalidCursor)
	}

	pbReq, pbResp := pbTypes.seen()
	if !reflect.DeepEqual(pbReq, []string{disclient.ContentTypeProtobuf}) || !reflect.DeepEqual(pbResp, []string{disclient.ContentTypeProtobuf, "application/json"}) {
		t.Errorf("protobuf client sent %q and got %q", pbReq, pbResp)
	}
	jsReq, jsResp := jsonTypes.seen()
	if !reflect.DeepEqual(jsReq, []string{"application/json"}) || !reflect.DeepEqual(jsResp, []string{"application/json"}) {
		t.Errorf("JSON client sent %q and got %q", jsReq, jsResp)
	}
}
