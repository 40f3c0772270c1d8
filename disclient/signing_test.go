package disclient_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

const (
	e2eAK = "AKROUNDTRIP"
	e2eSK = "round-trip-secret-key"
)

// signedServer is an embedded DIS that requires signatures with e2eAK, its
// logs going to the returned buffer; opts set up its client or wrap it.
func signedServer(t *testing.T, opts ...dislocaltest.Option) (*dislocaltest.Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	srv := dislocaltest.Start(t, append([]dislocaltest.Option{dislocaltest.WithDIS(func(c *dislocal.Config) {
		c.Credentials = map[string]dislocal.Credential{e2eAK: {SecretKey: e2eSK}}
		c.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel)
	})}, opts...)...)
	return srv, &logs
}

// TestSignedRoundTrip runs writes, reads and checkpoints through a signing
// client against an embedded server that verifies every signature.
func TestSignedRoundTrip(t *testing.T) {
	hs, _ := signedServer(t, dislocaltest.WithClient(func(c *disclient.Config) {
		c.Signer = disclient.AKSKSigner{AccessKey: e2eAK, SecretKey: e2eSK}
	}))
	c := hs.Client
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
	const wrongSK = "wrong-secret-key-value"
	signer := disclient.AKSKSigner{AccessKey: e2eAK, SecretKey: wrongSK}
	var clientLogs bytes.Buffer
	log := zerolog.New(&clientLogs).Level(zerolog.DebugLevel)
	var first atomic.Bool
	hs, serverLogs := signedServer(t, dislocaltest.WithHandler(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if first.CompareAndSwap(false, true) {
				http.Error(w, `{"errorCode":"DIS.5250","message":"busy"}`, http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}), dislocaltest.WithClient(func(c *disclient.Config) {
		c.Signer, c.Logger = signer, log
		c.Retry = disclient.RetryPolicy{MaxAttempts: 3, BaseBackoff: time.Millisecond}
	}))
	_, err := hs.Client.ListStreams(t.Context(), 10, "")
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
