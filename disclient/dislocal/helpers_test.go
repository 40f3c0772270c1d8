package dislocal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// fakeClock is the injected Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a server on a loopback httptest listener, with a fake clock.
type env struct {
	tb    testing.TB
	dir   string
	clock *fakeClock
	sync  SyncMode
	// quotas is the Config.Quotas the server opens with.
	quotas QuotaMode
	// limits is the Config.Limits the server opens with.
	limits Limits
	// segmentBytes, when set, is the record log's Config.segmentBytes.
	segmentBytes int64
	// logFS and pebbleFS, when set, are the record log's and pebble's
	// file systems.
	logFS    logfs.FS
	pebbleFS vfs.FS
	srv      *Server
	hs       *httptest.Server
}

const project = "proj1"

func newEnv(tb testing.TB) *env {
	tb.Helper()
	return newLogEnv(tb, SyncAlways, 0)
}

// newLogEnv is newEnv with the sync mode and the record log's segment size
// (0 for the default) chosen.
func newLogEnv(tb testing.TB, sync SyncMode, segmentBytes int64) *env {
	tb.Helper()
	e := &env{tb: tb, dir: tb.TempDir(), clock: newFakeClock(), sync: sync, segmentBytes: segmentBytes}
	e.open()
	tb.Cleanup(e.close)
	return e
}

func (e *env) open() {
	e.tb.Helper()
	srv, err := Open(Config{
		Dir:                    e.dir,
		Sync:                   e.sync,
		Now:                    e.clock.Now,
		RetentionCheckInterval: time.Hour,
		Quotas:                 e.quotas,
		Limits:                 e.limits,
		segmentBytes:           e.segmentBytes,
		logFS:                  e.logFS,
		pebbleFS:               e.pebbleFS,
	})
	if err != nil {
		e.tb.Fatalf("Open: %v", err)
	}
	e.srv = srv
	e.hs = httptest.NewServer(srv)
}

func (e *env) close() {
	if e.srv == nil {
		return
	}
	e.hs.Close()
	if err := e.srv.Close(); err != nil {
		e.tb.Errorf("Close: %v", err)
	}
	e.srv = nil
}

func (e *env) reopen() {
	e.tb.Helper()
	e.close()
	e.open()
}

// do sends a request the way the Huawei Go SDK does: Content-Type
// application/json on every method. body is nil, a string (sent raw) or a
// value to marshal.
func (e *env) do(method, path string, body any) (int, []byte) {
	e.tb.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.tb.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.hs.URL+path, r)
	if err != nil {
		e.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hs.Client().Do(req)
	if err != nil {
		e.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.tb.Fatal(err)
	}
	return resp.StatusCode, raw
}

// must sends a request, checks the status and decodes a JSON answer into
// out (if not nil).
func (e *env) must(method, path string, body any, status int, out any) []byte {
	e.tb.Helper()
	got, raw := e.do(method, path, body)
	if got != status {
		e.tb.Fatalf("%s %s: status %d, want %d; body %s", method, path, got, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.tb.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	return raw
}

// fails sends a request and checks that it fails with status and a DIS
// error body carrying code; it returns the message.
func (e *env) fails(method, path string, body any, status int, code string) string {
	e.tb.Helper()
	got, raw := e.do(method, path, body)
	var eb map[string]any
	if err := json.Unmarshal(raw, &eb); err != nil {
		e.tb.Fatalf("%s %s: error body %q is not JSON: %v", method, path, raw, err)
	}
	if got != status || eb["errorCode"] != code {
		e.tb.Fatalf("%s %s: got %d %s, want %d %s", method, path, got, raw, status, code)
	}
	msg, ok := eb["message"].(string)
	if !ok || msg == "" || len(eb) != 2 {
		e.tb.Fatalf("%s %s: error body %s is not {errorCode, message}", method, path, raw)
	}
	return msg
}

func v2(format string, args ...any) string {
	return "/v2/" + project + fmt.Sprintf(format, args...)
}

func (e *env) createStream(name string, partitions int32) {
	e.tb.Helper()
	e.must("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: name, PartitionCount: partitions}, 201, nil)
}

func (e *env) put(stream string, recs ...disclient.PutRecordsEntry) disclient.PutRecordsResponse {
	e.tb.Helper()
	var resp disclient.PutRecordsResponse
	e.must("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: stream, Records: recs}, 200, &resp)
	if len(resp.Records) != len(recs) {
		e.tb.Fatalf("put: %d results for %d records", len(resp.Records), len(recs))
	}
	return resp
}

// putTo writes records with the given payloads to one partition and
// returns their sequence numbers.
func (e *env) putTo(stream string, part int32, payloads ...string) []string {
	e.tb.Helper()
	recs := make([]disclient.PutRecordsEntry, len(payloads))
	for i, d := range payloads {
		recs[i] = disclient.PutRecordsEntry{Data: []byte(d), PartitionID: disclient.PartitionID(part)}
	}
	resp := e.put(stream, recs...)
	if resp.FailedRecordCount != 0 {
		e.tb.Fatalf("putTo: %d failed: %+v", resp.FailedRecordCount, resp.Records)
	}
	seqs := make([]string, len(resp.Records))
	for i, r := range resp.Records {
		seqs[i] = r.SequenceNumber
	}
	return seqs
}

func (e *env) cursor(stream, partition, cursorType string, extra ...string) string {
	e.tb.Helper()
	q := url.Values{"stream-name": {stream}, "partition-id": {partition}}
	if cursorType != "" {
		q.Set("cursor-type", cursorType)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	var resp disclient.GetCursorResponse
	e.must("GET", v2("/cursors?%s", q.Encode()), nil, 200, &resp)
	if resp.PartitionCursor == "" {
		e.tb.Fatal("empty cursor")
	}
	return resp.PartitionCursor
}

func (e *env) get(cursor string, extra ...string) disclient.GetRecordsResponse {
	e.tb.Helper()
	q := url.Values{"partition-cursor": {cursor}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	var resp disclient.GetRecordsResponse
	e.must("GET", v2("/records?%s", q.Encode()), nil, 200, &resp)
	return resp
}

// readAll reads a partition from TRIM_HORIZON to the end.
func (e *env) readAll(stream string, part int32) []disclient.Record {
	e.tb.Helper()
	c := e.cursor(stream, disclient.PartitionID(part), disclient.CursorTrimHorizon)
	var all []disclient.Record
	for {
		resp := e.get(c)
		if len(resp.Records) == 0 {
			return all
		}
		all = append(all, resp.Records...)
		c = resp.NextPartitionCursor
	}
}

func (e *env) describe(stream string, query string) disclient.DescribeStreamResponse {
	e.tb.Helper()
	var resp disclient.DescribeStreamResponse
	e.must("GET", v2("/streams/%s%s", stream, query), nil, 200, &resp)
	return resp
}

func payloads(rs []disclient.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Data)
	}
	return out
}

func seqs(rs []disclient.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.SequenceNumber
	}
	return out
}

// jsonKinds decodes raw into generic JSON for type checks.
func jsonKinds(tb testing.TB, raw []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

// wantTypes checks that each named field of obj has the JSON kind given:
// "string", "number", "bool", "array" or "object".
func wantTypes(tb testing.TB, obj any, kinds map[string]string) {
	tb.Helper()
	m, ok := obj.(map[string]any)
	if !ok {
		tb.Fatalf("%v is not an object", obj)
	}
	for field, kind := range kinds {
		var got string
		switch m[field].(type) {
		case string:
			got = "string"
		case float64:
			got = "number"
		case bool:
			got = "bool"
		case []any:
			got = "array"
		case map[string]any:
			got = "object"
		case nil:
			got = "missing"
		}
		if got != kind {
			tb.Errorf("field %q is %s (%v), want %s", field, got, m[field], kind)
		}
	}
}
