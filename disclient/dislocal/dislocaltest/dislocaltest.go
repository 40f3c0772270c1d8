// Package dislocaltest starts an embedded DIS server (dislocal) on a
// loopback port with a disclient.Client for it, as net/http/httptest does
// for handlers: the one set-up every test that talks to DIS over HTTP uses,
// so that none of them writes out opening, serving and closing again.
package dislocaltest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
)

// ProjectID is the project the client uses unless an option changes it.
const ProjectID = "p1"

// Server is an embedded DIS server listening on loopback and a client for it.
type Server struct {
	// DIS is the embedded server itself, for tests that reach past HTTP.
	DIS *dislocal.Server
	// URL is the server's base URL, http://127.0.0.1:port.
	URL string
	// Client calls the server with the options' client configuration.
	Client *disclient.Client
	// HTTP is the listener, for tests that send hand-made requests
	// (HTTP.Client() reuses its connections).
	HTTP *httptest.Server

	closeOnce sync.Once
	closeErr  error
}

// Option adjusts how New and Start set the server or its client up.
type Option func(*setup)

type setup struct {
	dis    dislocal.Config
	client disclient.Config
	wrap   func(http.Handler) http.Handler
}

// WithDIS adjusts the embedded server's configuration: Dir (Start defaults
// it to t.TempDir()), Sync, Credentials, Tokens, Logger, Now.
func WithDIS(f func(*dislocal.Config)) Option {
	return func(s *setup) { f(&s.dis) }
}

// WithClient adjusts the client's configuration: ProjectID, Signer,
// Encoding, Retry, Logger, HTTPClient. Endpoint is always the server's URL.
func WithClient(f func(*disclient.Config)) Option {
	return func(s *setup) { f(&s.client) }
}

// WithHandler puts wrap in front of the server, for tests that watch or
// alter the HTTP traffic on the server's side.
func WithHandler(wrap func(http.Handler) http.Handler) Option {
	return func(s *setup) { s.wrap = wrap }
}

// New opens the embedded server in the configured Dir (required) and
// serves it. It is for programs that have no testing.TB, such as the bench
// command; tests call Start. The caller must Close the server.
func New(opts ...Option) (*Server, error) {
	s := setup{client: disclient.Config{ProjectID: ProjectID}}
	for _, o := range opts {
		o(&s)
	}
	dis, err := dislocal.Open(s.dis)
	if err != nil {
		return nil, err
	}
	var h http.Handler = dis
	if s.wrap != nil {
		h = s.wrap(dis)
	}
	srv := &Server{DIS: dis, HTTP: httptest.NewServer(h)}
	srv.URL = srv.HTTP.URL
	s.client.Endpoint = srv.URL
	if srv.Client, err = disclient.New(s.client); err != nil {
		srv.HTTP.Close()
		return nil, errors.Join(err, dis.Close())
	}
	return srv, nil
}

// Start is New for a test: Dir defaults to t.TempDir(), a failure ends the
// test, and the server is closed when the test and its subtests are done,
// failing the test if the store does not close cleanly.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	dir := t.TempDir()
	srv, err := New(append([]Option{WithDIS(func(c *dislocal.Config) { c.Dir = dir })}, opts...)...)
	if err != nil {
		t.Fatalf("dislocaltest: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("dislocaltest: close: %v", err)
		}
	})
	return srv
}

// Close stops serving, waiting for requests in flight, and closes the
// store. Calls after the first return its result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.Client.Close()
		s.HTTP.Close()
		s.closeErr = s.DIS.Close()
	})
	return s.closeErr
}
