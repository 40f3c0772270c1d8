package dislocal

import "testing"

// Every timeout is set, and the write timeout leaves a large GetRecords
// answer longer than a request has to arrive.
func TestHTTPServerTimeouts(t *testing.T) {
	hs := (&Server{}).HTTPServer()
	if hs.ReadHeaderTimeout <= 0 || hs.ReadTimeout < hs.ReadHeaderTimeout || hs.WriteTimeout < hs.ReadTimeout || hs.IdleTimeout <= 0 {
		t.Fatalf("timeouts: header %v, read %v, write %v, idle %v", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout)
	}
	if hs.Handler == nil {
		t.Fatal("no handler")
	}
}
