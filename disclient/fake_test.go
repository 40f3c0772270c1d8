package disclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

const testProject = "0a1b2c3d"

// seenRequest is what the fake server received.
type seenRequest struct {
	Method string
	Path   string // escaped, as sent
	Query  url.Values
	Header http.Header
	Body   []byte
}

// answer is one canned reply.
type answer struct {
	status int
	body   string
}

// fakeDIS is a loopback server that records every request and lets each
// test decide the reply.
type fakeDIS struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

// newFake starts a server whose handler gets the request number (0-based)
// and the recorded request.
func newFake(t *testing.T, handle func(w http.ResponseWriter, n int, r seenRequest)) *fakeDIS {
	t.Helper()
	f := &fakeDIS{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading request body: %v", err)
		}
		s := seenRequest{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}
		f.mu.Lock()
		n := len(f.seen)
		f.seen = append(f.seen, s)
		f.mu.Unlock()
		handle(w, n, s)
	}))
	t.Cleanup(f.Close)
	return f
}

// newScripted starts a server that gives the answers in order and then
// repeats the last one.
func newScripted(t *testing.T, answers ...answer) *fakeDIS {
	t.Helper()
	return newFake(t, func(w http.ResponseWriter, n int, _ seenRequest) {
		a := answers[min(n, len(answers)-1)]
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	})
}

func (f *fakeDIS) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// fastRetry retries quickly so that tests of the retry loop stay fast.
var fastRetry = RetryPolicy{MaxAttempts: 5, BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}

// newTestClient returns a client for endpoint with fast retries; edit
// adjusts the config first.
func newTestClient(t *testing.T, endpoint string, edit func(*Config)) *Client {
	t.Helper()
	cfg := Config{Endpoint: endpoint, ProjectID: testProject, Retry: fastRetry, UserAgent: "disclient-test"}
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// hijackAndClose drops the connection without answering.
func hijackAndClose(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	_ = conn.Close()
}
