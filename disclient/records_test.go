package disclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"sync/atomic"
	"syscall"
	"testing"
)

// putAnswer is a PutRecords answer with one result per record.
func putAnswer(results ...PutRecordsResult) string {
	resp := PutRecordsResponse{Records: results}
	for _, r := range results {
		if r.ErrorCode != "" {
			resp.FailedRecordCount++
		}
	}
	b, _ := json.Marshal(resp)
	return string(b)
}

func ok(seq string) PutRecordsResult {
	return PutRecordsResult{PartitionID: "shardId-0000000000", SequenceNumber: seq}
}

func failed(code string) PutRecordsResult {
	return PutRecordsResult{ErrorCode: code, ErrorMessage: "failed with " + code}
}

func entries(data ...string) []PutRecordsEntry {
	out := make([]PutRecordsEntry, len(data))
	for i, d := range data {
		out[i] = PutRecordsEntry{Data: []byte(d), PartitionID: "0"}
	}
	return out
}

// sentData decodes the record payloads of a PutRecords request.
func sentData(t *testing.T, body []byte) []string {
	t.Helper()
	var req PutRecordsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("decoding PutRecords body: %v", err)
	}
	out := make([]string, len(req.Records))
	for i, r := range req.Records {
		out[i] = string(r.Data)
	}
	return out
}

// TestPutRecordsWholeRequestRetry checks which whole-request failures are
// retried: only those where DIS surely wrote nothing.
func TestPutRecordsWholeRequestRetry(t *testing.T) {
	cases := []struct {
		fail  answer
		retry bool
	}{
		{answer{429, ""}, true},
		{answer{503, `{"errorCode":"DIS.5250","message":"unavailable"}`}, true},
		{answer{400, `{"errorCode":"DIS.4303","message":"traffic control"}`}, true},
		{answer{400, `{"errorCode":"DIS.4305","message":"too many requests"}`}, true},
		{answer{500, `{"errorCode":"DIS.5000","message":"System error"}`}, false},
		{answer{502, "bad gateway"}, false},
		{answer{400, `{"errorCode":"DIS.4301","message":"Stream does not exist"}`}, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.fail.status, " ", tc.fail.body), func(t *testing.T) {
			srv := newScripted(t, tc.fail, answer{200, putAnswer(ok("0"))})
			c := newTestClient(t, srv.URL, nil)
			resp, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a")})
			n := len(srv.requests())
			if tc.retry {
				if err != nil || resp.Records[0].SequenceNumber != "0" || n != 2 {
					t.Errorf("got %+v, %v after %d requests; want success after 2", resp, err, n)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != tc.fail.status || n != 1 {
				t.Errorf("got %+v, %v after %d requests; want the HTTP %d answer after 1", resp, err, n, tc.fail.status)
			}
		})
	}
}

// TestPutRecordsNoRetryAfterSend checks that a connection lost after the
// request reached the server is not retried: DIS may have written it.
func TestPutRecordsNoRetryAfterSend(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ int, _ seenRequest) { hijackAndClose(t, w) })
	c := newTestClient(t, srv.URL, nil)
	_, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a")})
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestPutRecordsRetriesDialErrors checks that a request whose connection
// could not be opened is retried: nothing reached DIS.
func TestPutRecordsRetriesDialErrors(t *testing.T) {
	srv := newScripted(t, answer{200, putAnswer(ok("0"))})
	var dials atomic.Int32
	c := newTestClient(t, srv.URL, func(cfg *Config) {
		var d net.Dialer
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if dials.Add(1) <= 2 {
					return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
				}
				return d.DialContext(ctx, network, addr)
			},
		}}
	})
	resp, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a")})
	if err != nil || resp.FailedRecordCount != 0 {
		t.Fatalf("got %+v, %v; want success", resp, err)
	}
	if d, n := dials.Load(), len(srv.requests()); d != 3 || n != 1 {
		t.Errorf("%d dials and %d requests, want 3 and 1", d, n)
	}
}

// TestPutRecordsPartialFailure checks that only failed records with a
// retriable code are resent, and that their results land in their original
// positions.
func TestPutRecordsPartialFailure(t *testing.T) {
	replies := []string{
		putAnswer(ok("10"), failed(CodeTrafficControl), failed(CodeInvalidPartitionID), failed(CodeSystemError), ok("11")),
		putAnswer(ok("12"), failed(CodeTrafficControl)),
		putAnswer(ok("13")),
	}
	srv := newFake(t, func(w http.ResponseWriter, n int, _ seenRequest) {
		_, _ = w.Write([]byte(replies[min(n, len(replies)-1)]))
	})
	c := newTestClient(t, srv.URL, nil)
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
		if got := sentData(t, reqs[i].Body); !reflect.DeepEqual(got, want) {
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

// TestPutRecordsPartialFailureGivesUp checks that resending stops after
// MaxAttempts sends and reports the records that still failed.
func TestPutRecordsPartialFailureGivesUp(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, n int, r seenRequest) {
		if n == 0 {
			_, _ = w.Write([]byte(putAnswer(ok("0"), failed(CodeTrafficControl))))
			return
		}
		_, _ = w.Write([]byte(putAnswer(failed(CodeTrafficControl))))
	})
	c := newTestClient(t, srv.URL, func(cfg *Config) { cfg.Retry.MaxAttempts = 3 })
	resp, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if resp.FailedRecordCount != 1 || resp.Records[0] != ok("0") || resp.Records[1].ErrorCode != CodeTrafficControl {
		t.Errorf("response %+v, want record 0 written and record 1 throttled", resp)
	}
}

// TestPutRecordsResendFails checks that a resend failing as a whole does not
// hide the records the first request wrote.
func TestPutRecordsResendFails(t *testing.T) {
	srv := newScripted(t,
		answer{200, putAnswer(ok("0"), failed(CodeSystemError))},
		answer{500, `{"errorCode":"DIS.5000","message":"System error"}`},
	)
	c := newTestClient(t, srv.URL, nil)
	resp, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (no retry of the 500)", n)
	}
	if resp.FailedRecordCount != 1 || resp.Records[0] != ok("0") || resp.Records[1].ErrorCode != CodeSystemError {
		t.Errorf("response %+v, want record 0 written and record 1 failed", resp)
	}
}

// TestPutRecordsResultCount checks that an answer that does not match the
// request record for record is an error, not a silent misattribution.
func TestPutRecordsResultCount(t *testing.T) {
	srv := newScripted(t, answer{200, putAnswer(ok("0"))})
	c := newTestClient(t, srv.URL, nil)
	if _, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a", "b")}); err == nil {
		t.Error("no error for 1 result to 2 records")
	}
}

// TestGetRecordsEmpty checks that an answer without records still gives the
// cursor to poll next.
func TestGetRecordsEmpty(t *testing.T) {
	srv := newScripted(t, answer{200, `{"records":[],"next_partition_cursor":"next-1"}`})
	c := newTestClient(t, srv.URL, nil)
	resp, err := c.GetRecords(t.Context(), "cursor-0", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Records) != 0 || resp.NextPartitionCursor != "next-1" {
		t.Errorf("got %+v, want no records and cursor next-1", resp)
	}
	if q := srv.requests()[0].Query; q.Has("max_fetch_bytes") {
		t.Errorf("query %v sends max_fetch_bytes though it was left to the server", q)
	}
}
