package gateway

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

func TestAuthorizerConfigRefused(t *testing.T) {
	for name, cfg := range map[string]Config{
		"unknown authorizer": {Authorizer: "kafka"},
		"super user no type": {Authorizer: AuthorizerACL, SuperUsers: []string{"admin"}, ACLKey: []byte("k")},
		"super user no name": {Authorizer: AuthorizerACL, SuperUsers: []string{"User:"}, ACLKey: []byte("k")},
		"ACLs without a key": {Authorizer: AuthorizerACL, SuperUsers: []string{"User:admin"}},
	} {
		if _, err := New(cfg, localDIS(t)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// syncBuffer is a log sink the gateway's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Without an authorizer, a listener other hosts can reach is warned about
// at start, and a loopback one is not.
func TestNoAuthorizerWarnsOffLoopback(t *testing.T) {
	for addr, warn := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		logs := &syncBuffer{}
		startGateway(t, Config{Listen: addr, Logger: zerolog.New(logs)}, localDIS(t))
		if got := strings.Contains(logs.String(), "no authorizer"); got != warn {
			t.Errorf("listener %s: warned %v, want %v:\n%s", addr, got, warn, logs.String())
		}
	}
}
