package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServe runs serve with args until the test ends, and returns where
// it serves and a function that stops it and waits.
func startServe(t *testing.T, args ...string) (serving, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan serving, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, args, func(s serving) { up <- s }) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve %v: %v", args, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve %v not stopped 30s after its context ended", args)
		}
	}
	t.Cleanup(stop)
	select {
	case s := <-up:
		return s, stop
	case err := <-done:
		t.Fatalf("serve %v: %v", args, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve %v: not serving after 30s", args)
	}
	return serving{}, stop
}

// get is the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestReadyzFollowsDIS runs a gateway in front of a DIS (the embedded
// server alone, in its own serve): /readyz turns ready once DIS answers
// the probe, and unready with the reason once DIS is gone, while /healthz
// stays 200 throughout: it is about the process.
func TestReadyzFollowsDIS(t *testing.T) {
	dis, stopDIS := startServe(t, "--listen", "-", "--embedded-dis-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--fsync", "none", "--log-level", "warn")
	gw, _ := startServe(t, "--listen", "127.0.0.1:0", "--dis-endpoint", dis.embeddedDIS, "--dis-project-id", "disgw",
		"--admin-listen", "127.0.0.1:0", "--ready-probe-interval", "100ms", "--log-level", "error")
	readyz, healthz := "http://"+gw.admin+"/readyz", "http://"+gw.admin+"/healthz"
	waitStatus := func(want int, reason string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := get(t, readyz)
			if code == want && strings.Contains(body, reason) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz = %d %q, want %d with %q", code, body, want, reason)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStatus(http.StatusOK, "ok")
	if code, _ := get(t, healthz); code != http.StatusOK {
		t.Fatalf("/healthz = %d", code)
	}
	stopDIS()
	waitStatus(http.StatusServiceUnavailable, "DIS unreachable")
	if code, _ := get(t, healthz); code != http.StatusOK {
		t.Errorf("/healthz = %d while DIS is down, want 200: the process is fine", code)
	}
}

// TestReadyzWhenWritesStop: an embedded DIS that stopped taking writes (a
// failed fsync of its record log) makes /readyz unready with the reason,
// whatever the rest of the verdict, and a working one leaves the verdict
// as it is.
func TestReadyzWhenWritesStop(t *testing.T) {
	ctx := context.Background()
	verdict := func(ok bool, reason string) func(context.Context) (bool, string) {
		return func(context.Context) (bool, string) { return ok, reason }
	}
	cases := []struct {
		name       string
		base       func(context.Context) (bool, string)
		stopped    error
		ok         bool
		wantReason string
	}{
		{"writing, ready", verdict(true, ""), nil, true, ""},
		{"writing, draining", verdict(false, "draining"), nil, false, "draining"},
		{"stopped, otherwise ready", verdict(true, ""), errors.New("injected EIO"), false, "embedded DIS takes no writes until restarted: injected EIO"},
	}
	for _, c := range cases {
		ok, reason := checkWrites(c.base, func() error { return c.stopped }, func() []string { return nil })(ctx)
		if ok != c.ok || reason != c.wantReason {
			t.Errorf("%s: ready = %v %q, want %v %q", c.name, ok, reason, c.ok, c.wantReason)
		}
	}
	// Damage is a detail of a ready answer, not a reason to be unready.
	damaged := func() []string { return []string{"00000000000000000001.log bytes 10 to 20"} }
	for _, c := range cases {
		if c.ok {
			c.wantReason = "embedded DIS record log damaged: 00000000000000000001.log bytes 10 to 20"
		}
		ok, reason := checkWrites(c.base, func() error { return c.stopped }, damaged)(ctx)
		if ok != c.ok || reason != c.wantReason {
			t.Errorf("%s: ready = %v %q, want %v %q", c.name, ok, reason, c.ok, c.wantReason)
		}
	}
}
