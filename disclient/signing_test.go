package disclient_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
)

const (
	e2eAK = "AKROUNDTRIP"
	e2eSK = "round-trip-secret-key"
)

// signedServer is an embedded DIS that requires signatures with e2eAK, its
// logs going to the returned buffer; wrap, if not nil, sits in front of it.
func signedServer(t *testing.T, wrap func(http.Handler) http.Handler) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	srv, err := dislocal.Open(dislocal.Config{
		Dir:         t.TempDir(),
		Credentials: map[string]dislocal.Credential{e2eAK: {SecretKey: e2eSK}},
		Logger:      zerolog.New(&logs).Level(zerolog.DebugLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); _ = srv.Close() })
	return hs, &logs
}

// TestSignedRoundTrip runs writes, reads and checkpoints through a signing
// client against an embedded server that verifies every signature.
func TestSignedRoundTrip(t *testing.T) {
	hs, _ := signedServer(t, nil)
	c, err := disclient.New(disclient.Config{Endpoint: hs.URL, ProjectID: "p1",
		Signer: disclient.AKSKSigner{AccessKey: e2eAK, SecretKey: e2eSK}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := c.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
	put, err := c.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "s", Records: []disclient.PutRecordsEntry{
		{Data: []byte("hello"), PartitionKey: "k ey/+&="}}})
	if err != nil || put.FailedRecordCount != 0 {
		t.Fatalf("put: %+v, %v", put, err)
	}
	cur, err := c.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "s", PartitionID: "0", CursorType: "TRIM_HORIZON"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetRecords(ctx, cur.PartitionCursor, 0)
	if err != nil || len(got.Records) != 1 || string(got.Records[0].Data) != "hello" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if err := c.CreateApp(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitCheckpoint(ctx, &disclient.CommitCheckpointRequest{AppName: "g", CheckpointType: "LAST_READ",
		StreamName: "s", PartitionID: "0", SequenceNumber: "1", Metadata: "a b&c=d/é"}); err != nil {
		t.Fatal(err)
	}
	cp, err := c.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: "g", StreamName: "s", PartitionID: "0", CheckpointType: "LAST_READ"})
	if err != nil || cp.SequenceNumber != "1" {
		t.Fatalf("checkpoint: %+v, %v", cp, err)
	}
	if err := c.DeleteStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}

	unsigned, err := disclient.New(disclient.Config{Endpoint: hs.URL, ProjectID: "p1", Retry: disclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unsigned.Close)
	if _, err := unsigned.ListStreams(ctx, 10, ""); !disclient.IsCode(err, "DIS.4101") {
		t.Fatalf("unsigned call: %v, want DIS.4101", err)
	}
}

// TestFailingSignedCallLogsNoSecret makes a signed call fail after a retry
// (a 503, then the server refusing the wrong secret key) with client and
// server logging at debug level, and looks for the secret key in the logs
// and the error.
func TestFailingSignedCallLogsNoSecret(t *testing.T) {
	var first atomic.Bool
	hs, serverLogs := signedServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if first.CompareAndSwap(false, true) {
				http.Error(w, `{"errorCode":"DIS.5250","message":"busy"}`, http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	const wrongSK = "wrong-secret-key-value"
	signer := disclient.AKSKSigner{AccessKey: e2eAK, SecretKey: wrongSK}
	var clientLogs bytes.Buffer
	log := zerolog.New(&clientLogs).Level(zerolog.DebugLevel)
	c, err := disclient.New(disclient.Config{Endpoint: hs.URL, ProjectID: "p1", Signer: signer, Logger: log,
		Retry: disclient.RetryPolicy{MaxAttempts: 3, BaseBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	_, err = c.ListStreams(t.Context(), 10, "")
	if !disclient.IsCode(err, "DIS.4100") {
		t.Fatalf("error %v, want DIS.4100", err)
	}
	log.Error().Err(err).Interface("signer", signer).Msg("DIS call failed")

	all := clientLogs.String() + serverLogs.String() + err.Error()
	if !strings.Contains(clientLogs.String(), "retrying DIS request") || !strings.Contains(all, e2eAK) {
		t.Fatalf("the test logged too little to mean anything:\n%s", all)
	}
	for _, secret := range []string{wrongSK, e2eSK} {
		if strings.Contains(all, secret) {
			t.Errorf("a secret key is in the logs or the error:\n%s", all)
		}
	}
}
