package disclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestRetriesRetriableAnswers checks that reads are retried on throttling
// and server errors until they succeed.
func TestRetriesRetriableAnswers(t *testing.T) {
	cases := []answer{
		{503, ""},
		{500, `{"errorCode":"DIS.5000","message":"System error"}`},
		{429, "slow down"},
		{400, `{"errorCode":"DIS.4303","message":"Exceeded traffic control limit"}`},
		{400, `{"errorCode":"DIS.4305","message":"Too many requests"}`},
	}
	for _, fail := range cases {
		srv := newScripted(t, fail, fail, answer{200, `{"app_name":"g1"}`})
		c := newTestClient(t, srv.URL, nil)
		app, err := c.DescribeApp(t.Context(), "g1")
		if err != nil || app.AppName != "g1" {
			t.Errorf("after %d %s: got %+v, %v; want success", fail.status, fail.body, app, err)
		}
		if n := len(srv.requests()); n != 3 {
			t.Errorf("after %d %s: %d requests, want 3", fail.status, fail.body, n)
		}
	}
}

// TestNoRetryOnRequestErrors checks that an error DIS will repeat is
// returned after one request.
func TestNoRetryOnRequestErrors(t *testing.T) {
	srv := newScripted(t, answer{400, `{"errorCode":"DIS.4301","message":"Stream does not exist"}`})
	c := newTestClient(t, srv.URL, nil)
	_, err := c.DescribeStream(t.Context(), "s1", "", 0)
	if !IsCode(err, CodeStreamNotFound) {
		t.Errorf("error %v, want %s", err, CodeStreamNotFound)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestRetryStopsAtMaxAttempts checks the attempt bound and that the final
// error is DIS's answer.
func TestRetryStopsAtMaxAttempts(t *testing.T) {
	srv := newScripted(t, answer{503, `{"errorCode":"DIS.5250","message":"unavailable"}`})
	c := newTestClient(t, srv.URL, func(cfg *Config) { cfg.Retry.MaxAttempts = 4 })
	_, err := c.ListStreams(t.Context(), 0, "")
	if !IsCode(err, CodeServiceUnavailable) {
		t.Errorf("error %v, want %s", err, CodeServiceUnavailable)
	}
	if n := len(srv.requests()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

// TestRetryNeverSleepsPastDeadline checks that a wait which would end after
// the context deadline is not started: with hour-long backoffs the call must
// give up right after the first answer instead of sleeping.
func TestRetryNeverSleepsPastDeadline(t *testing.T) {
	srv := newScripted(t, answer{503, `{"errorCode":"DIS.5250","message":"unavailable"}`})
	c := newTestClient(t, srv.URL, func(cfg *Config) {
		cfg.Retry = RetryPolicy{MaxAttempts: 10, BaseBackoff: 1000 * time.Hour, MaxBackoff: 1000 * time.Hour}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err := c.ListStreams(ctx, 0, "")
	if !IsCode(err, CodeServiceUnavailable) {
		t.Errorf("error %v, want %s", err, CodeServiceUnavailable)
	}
	if ctx.Err() != nil {
		t.Errorf("the call waited until the deadline")
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestRetryEndsWithContext checks that retrying stops when the context ends
// and that the DIS code of the last answer survives in the error.
func TestRetryEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv := newFake(t, func(w http.ResponseWriter, n int, _ seenRequest) {
		if n == 2 {
			cancel()
		}
		w.WriteHeader(500)
		_, _ = w.Write([]byte(`{"errorCode":"DIS.5000","message":"System error"}`))
	})
	c := newTestClient(t, srv.URL, func(cfg *Config) {
		cfg.Retry = RetryPolicy{MaxAttempts: 1 << 30, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	})
	_, err := c.ListStreams(ctx, 0, "")
	if !IsCode(err, CodeSystemError) {
		t.Errorf("error %v, want %s", err, CodeSystemError)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// TestRetryCancelledDuringWait checks that a cancelled context ends a
// backoff wait at once; with hour-long backoffs the test would time out.
func TestRetryCancelledDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv := newScripted(t, answer{503, ""})
	c := newTestClient(t, srv.URL, func(cfg *Config) {
		cfg.Retry = RetryPolicy{MaxAttempts: 10, BaseBackoff: time.Hour, MaxBackoff: time.Hour}
		cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			cancel() // the answer is in; the client is about to wait
			return resp, err
		})}
	})
	_, err := c.GetRecords(ctx, "cursor", 0)
	var e *Error
	if !errors.As(err, &e) || e.Status != 503 {
		t.Errorf("error %v, want the 503 answer", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRetriesBrokenConnectionsForReads checks that a read whose connection
// broke mid-request is sent again.
func TestRetriesBrokenConnectionsForReads(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, n int, _ seenRequest) {
		if n == 0 {
			hijackAndClose(t, w)
			return
		}
		_, _ = w.Write([]byte(`{"partition_cursor":"c1"}`))
	})
	c := newTestClient(t, srv.URL, nil)
	got, err := c.GetCursor(t.Context(), &GetCursorRequest{StreamName: "s1", PartitionID: "0", CursorType: CursorLatest})
	if err != nil || got.PartitionCursor != "c1" {
		t.Fatalf("got %+v, %v; want cursor c1", got, err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestBackoffBounds checks that waits stay within the doubling bound and
// the cap.
func TestBackoffBounds(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 70 * time.Millisecond}
	bounds := []time.Duration{10, 20, 40, 70, 70, 70}
	for i, b := range bounds {
		bound := b * time.Millisecond
		var longest time.Duration
		for range 200 {
			d := p.backoff(i + 1)
			if d < 0 || d > bound {
				t.Fatalf("attempt %d: wait %v outside [0, %v]", i+1, d, bound)
			}
			longest = max(longest, d)
		}
		if longest <= bound/2 {
			t.Errorf("attempt %d: longest of 200 waits %v; full jitter should reach past %v", i+1, longest, bound/2)
		}
	}
}

// TestRetryPolicyDefaults checks that zero fields get defaults and that a
// cap below the base is raised to it.
func TestRetryPolicyDefaults(t *testing.T) {
	p, err := RetryPolicy{BaseBackoff: 5 * time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := RetryPolicy{MaxAttempts: defaultMaxAttempts, BaseBackoff: 5 * time.Second, MaxBackoff: 5 * time.Second}
	if p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
}

// TestLastAnswerSurvivesLaterFailures checks that when the last attempt
// fails without an answer, the error still carries the DIS code of the
// answer before it.
func TestLastAnswerSurvivesLaterFailures(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, n int, _ seenRequest) {
		if n == 0 {
			// A fresh connection for the next request keeps the
			// transport from retrying it by itself.
			w.Header().Set("Connection", "close")
			w.WriteHeader(500)
			_, _ = w.Write([]byte(`{"errorCode":"DIS.5000","message":"System error"}`))
			return
		}
		hijackAndClose(t, w)
	})
	c := newTestClient(t, srv.URL, func(cfg *Config) { cfg.Retry.MaxAttempts = 2 })
	_, err := c.GetCheckpoint(t.Context(), &GetCheckpointRequest{AppName: "g1", StreamName: "s1", PartitionID: "0"})
	if !IsCode(err, CodeSystemError) {
		t.Errorf("error %v, want it to carry %s", err, CodeSystemError)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestTrafficControlWaitsSteadily checks that what a partition's traffic
// control refused (DIS.4303), whole requests and single records alike, is
// sent again after BaseBackoff/2 to BaseBackoff at every attempt, while
// other retriable failures wait the doubling, fully jittered backoff.
func TestTrafficControlWaitsSteadily(t *testing.T) {
	const base = 8 * time.Millisecond
	policy := RetryPolicy{MaxAttempts: 8, BaseBackoff: base, MaxBackoff: time.Second}
	for _, tc := range []struct {
		name   string
		answer answer
		steady bool
	}{
		{"records refused by traffic control", answer{200, putAnswer(failed(CodeTrafficControl))}, true},
		{"request refused by traffic control", answer{400, `{"errorCode":"DIS.4303","message":"Exceeded traffic control limit"}`}, true},
		{"records failed by DIS", answer{200, putAnswer(failed(CodeSystemError))}, false},
		{"request refused for too many requests", answer{429, "slow down"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			srv := newScripted(t, tc.answer)
			c := newTestClient(t, srv.URL, func(cfg *Config) {
				cfg.Retry = policy
				cfg.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel)
			})
			_, _ = c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: entries("a")})
			var waits []time.Duration
			for line := range strings.Lines(logs.String()) {
				var entry struct {
					Message string  `json:"message"`
					Backoff float64 `json:"backoff"`
				}
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if entry.Message == "resending failed records" || entry.Message == "retrying DIS request" {
					waits = append(waits, time.Duration(entry.Backoff*float64(time.Millisecond)))
				}
			}
			if len(waits) != policy.MaxAttempts-1 {
				t.Fatalf("%d waits logged, want %d:\n%s", len(waits), policy.MaxAttempts-1, logs.String())
			}
			longest := time.Duration(0)
			for i, d := range waits {
				if tc.steady && (d < base/2 || d > base) {
					t.Errorf("wait %d: %v, want %v to %v", i+1, d, base/2, base)
				}
				longest = max(longest, d)
			}
			// Seven doubling bounds reach 64 base; all seven full-jitter
			// draws under one base happen about once in two million runs.
			if !tc.steady && longest <= base {
				t.Errorf("waits %v: none longer than the first bound %v; want a doubling backoff", waits, base)
			}
		})
	}
}
