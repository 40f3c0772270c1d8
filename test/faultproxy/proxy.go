// Package faultproxy stands in front of a DIS server's HTTP handler and
// misbehaves on demand: it adds latency, answers with DIS errors or 5xx,
// drops connections, hangs, or cuts a response body halfway. The tests for a failing DIS drive it
// to show that the gateway answers within its timeouts, keeps its queues
// bounded, loses nothing it acknowledged, and recovers without a restart.
package faultproxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is one way to misbehave. The zero Fault forwards unchanged.
type Fault struct {
	// Latency is added before the request is handled (forwarded or failed).
	Latency time.Duration
	// Status answers with this HTTP status and a DIS error body carrying
	// Code, without forwarding.
	Status int
	// Code is the DIS error code of the body sent with Status.
	Code string
	// Drop closes the connection without answering, as a crashed server or
	// a broken network would.
	Drop bool
	// Hang never answers: the request waits until the client gives up or
	// the proxy is closed.
	Hang bool
	// CutBody forwards the request, then sends the response headers and
	// only half of the body, and resets the connection.
	CutBody bool
}

// Rule applies Fault to the requests Match selects (all when Match is nil).
type Rule struct {
	Match func(*http.Request) bool
	Fault Fault
}

// Op selects the requests of one DIS operation by method and the last
// path element of its URL: Op("POST", "records") is PutRecords,
// Op("GET", "records") GetRecords, Op("GET", "cursors") GetCursor.
func Op(method, lastPathElem string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		p := strings.TrimSuffix(r.URL.Path, "/")
		return r.Method == method && p[strings.LastIndexByte(p, '/')+1:] == lastPathElem
	}
}

// PutRecords selects PutRecords calls.
var PutRecords = Op(http.MethodPost, "records")

// BodyContains selects requests whose body holds s, such as a stream name
// in a PutRecords body (JSON and protobuf alike). It reads the body and
// puts it back for forwarding.
func BodyContains(s string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if r.Body == nil {
			return false
		}
		b, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(b))
		return err == nil && bytes.Contains(b, []byte(s))
	}
}

// All selects the requests every matcher selects.
func All(match ...func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool {
		for _, m := range match {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// Proxy injects faults in front of the handler it wraps.
type Proxy struct {
	next   http.Handler
	closed chan struct{}
	once   sync.Once

	mu    sync.Mutex
	rules []Rule

	requests, faulted atomic.Int64
}

// New returns a proxy that forwards everything until rules are Set.
func New() *Proxy { return &Proxy{closed: make(chan struct{})} }

// Wrap makes next the handler the proxy forwards to, and returns the
// proxy as the handler to serve.
func (p *Proxy) Wrap(next http.Handler) http.Handler {
	p.next = next
	return p
}

// Set replaces the rules; the first rule that matches a request decides.
func (p *Proxy) Set(rules ...Rule) {
	p.mu.Lock()
	p.rules = append([]Rule(nil), rules...)
	p.mu.Unlock()
}

// Clear makes the proxy forward everything unchanged again.
func (p *Proxy) Clear() { p.Set() }

// Requests is how many requests reached the proxy; Faulted how many of them
// a rule changed.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Faulted is how many requests a rule changed.
func (p *Proxy) Faulted() int64 { return p.faulted.Load() }

// Close ends hanging requests; later requests are forwarded unchanged.
func (p *Proxy) Close() {
	p.once.Do(func() { close(p.closed) })
	p.Clear()
}

func (p *Proxy) fault(r *http.Request) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rule := range p.rules {
		if rule.Match == nil || rule.Match(r) {
			return rule.Fault, true
		}
	}
	return Fault{}, false
}

// ServeHTTP applies the first matching rule to r.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	f, ok := p.fault(r)
	if !ok {
		p.next.ServeHTTP(w, r)
		return
	}
	p.faulted.Add(1)
	if f.Latency > 0 {
		select {
		case <-time.After(f.Latency):
		case <-r.Context().Done():
			return
		case <-p.closed:
			return
		}
	}
	switch {
	case f.Hang:
		select {
		case <-r.Context().Done():
		case <-p.closed:
		}
	case f.Drop:
		hijackAndClose(w, nil)
	case f.Status != 0:
		body := fmt.Sprintf(`{"errorCode":%q,"message":"injected by faultproxy"}`, f.Code)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, body)
	case f.CutBody:
		p.cutBody(w, r)
	default:
		p.next.ServeHTTP(w, r)
	}
}

// cutBody forwards r, then writes the answer's status line, headers and
// half its body to the raw connection and resets it.
func (p *Proxy) cutBody(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", rec.Code, http.StatusText(rec.Code))
	h := rec.Header().Clone()
	h.Del("Transfer-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	_ = h.Write(&head)
	head.WriteString("\r\n")
	head.Write(body[:len(body)/2])
	hijackAndClose(w, head.Bytes())
}

// hijackAndClose writes raw to the client's connection and resets it.
func hijackAndClose(w http.ResponseWriter, raw []byte) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "faultproxy: connection cannot be hijacked", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if len(raw) > 0 {
		_, _ = buf.Write(raw)
		_ = buf.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST rather than FIN
	}
	_ = conn.Close()
}
