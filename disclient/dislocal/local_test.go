package dislocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
)

// clients returns an HTTP client of e's server, with retries off so that
// each call is one exchange, and the LocalClient wrapping it.
func (e *env) clients(enc disclient.BodyEncoding) (http, local disclient.API) {
	e.tb.Helper()
	c, err := disclient.New(disclient.Config{
		Endpoint:  e.hs.URL,
		ProjectID: project,
		Encoding:  enc,
		Retry:     disclient.RetryPolicy{MaxAttempts: 1},
	})
	if err != nil {
		e.tb.Fatal(err)
	}
	e.tb.Cleanup(c.Close)
	return c, e.srv.LocalClient(project, c)
}

// renderOutcome renders what a call returned, for comparing the two clients:
// a DIS error by its status, code and message, any other error by its
// text, an answer by its fields.
func renderOutcome(v any, err error) string {
	var de *disclient.Error
	switch {
	case errors.As(err, &de):
		return fmt.Sprintf("DIS error %d %s %q", de.Status, de.Code, de.Message)
	case err != nil:
		return "error " + err.Error()
	}
	switch r := v.(type) {
	case *disclient.GetRecordsResponse:
		var b strings.Builder
		fmt.Fprintf(&b, "next %s;", r.NextPartitionCursor)
		for _, rec := range r.Records {
			fmt.Fprintf(&b, " {%q %s %q %d %s}", rec.PartitionKey, rec.SequenceNumber, rec.Data, rec.Timestamp, rec.TimestampType)
		}
		return b.String()
	default:
		return fmt.Sprintf("%+v", v)
	}
}

// TestLocalClientSameAsHTTP runs each call through the HTTP client (both
// body encodings) and through the LocalClient on one server and wants the
// same answer or the same error from both.
func TestLocalClientSameAsHTTP(t *testing.T) {
	for _, enc := range []disclient.BodyEncoding{disclient.EncodingJSON, disclient.EncodingProtobuf} {
		t.Run(string(enc), func(t *testing.T) { testLocalClientSameAsHTTP(t, enc) })
	}
}

func testLocalClientSameAsHTTP(t *testing.T, enc disclient.BodyEncoding) {
	e := newQuotaEnv(t, QuotasCommon)
	httpc, local := e.clients(enc)
	ctx := context.Background()
	ts := int64(1_700_000_000_000)
	big := bytes.Repeat([]byte{'x'}, maxRecordBytes+1)
	tooMany := make([]disclient.PutRecordsEntry, maxRecordsPerPut+1)

	// PutRecords changes the stream it writes to, so each client writes
	// to a stream of its own, created alike; name is the one to use.
	puts := []struct {
		name string
		req  func(stream string) *disclient.PutRecordsRequest
	}{
		{"routed", func(s string) *disclient.PutRecordsRequest {
			return &disclient.PutRecordsRequest{StreamName: s, Records: []disclient.PutRecordsEntry{
				{Data: []byte("a"), PartitionID: "1"},
				{Data: []byte("b"), PartitionKey: "key", Timestamp: &ts},
				{Data: []byte("c"), ExplicitHashKey: "9000000000000000000"},
				{Data: []byte("d")},
				{Data: nil, PartitionID: "shardId-0000000000"},
			}}
		}},
		{"per-record failures", func(s string) *disclient.PutRecordsRequest {
			neg := int64(-1)
			return &disclient.PutRecordsRequest{StreamName: s, Records: []disclient.PutRecordsEntry{
				{Data: big, PartitionID: "0"},
				{Data: []byte("a"), PartitionID: "x"},
				{Data: []byte("a"), PartitionID: "7"},
				{Data: []byte("a"), ExplicitHashKey: "-3"},
				{Data: []byte("a"), Timestamp: &neg},
				{Data: []byte("ok"), PartitionID: "1"},
			}}
		}},
		{"throttled", func(s string) *disclient.PutRecordsRequest {
			return &disclient.PutRecordsRequest{StreamName: s, Records: recordsTo(0, 1200, 10)}
		}},
		{"stream not found", func(string) *disclient.PutRecordsRequest {
			return &disclient.PutRecordsRequest{StreamName: "nosuch", Records: recordsTo(0, 1, 1)}
		}},
		{"stream id not found", func(string) *disclient.PutRecordsRequest {
			return &disclient.PutRecordsRequest{StreamID: "nosuch-id", Records: recordsTo(0, 1, 1)}
		}},
		{"no records", func(s string) *disclient.PutRecordsRequest {
			return &disclient.PutRecordsRequest{StreamName: s}
		}},
		{"too many records", func(s string) *disclient.PutRecordsRequest {
			return &disclient.PutRecordsRequest{StreamName: s, Records: tooMany}
		}},
		{"no stream name", func(string) *disclient.PutRecordsRequest {
			return &disclient.PutRecordsRequest{Records: recordsTo(0, 1, 1)}
		}},
	}
	for i, c := range puts {
		hs, ls := fmt.Sprintf("h%d", i), fmt.Sprintf("l%d", i)
		e.createStream(hs, 3)
		e.createStream(ls, 3)
		hr, herr := httpc.PutRecords(ctx, c.req(hs))
		lr, lerr := local.PutRecords(ctx, c.req(ls))
		if h, l := renderOutcome(hr, herr), renderOutcome(lr, lerr); h != l {
			t.Errorf("PutRecords %s:\n http  %s\n local %s", c.name, h, l)
		}
		for p := range int32(3) {
			if h, l := payloads(e.readAll(hs, p)), payloads(e.readAll(ls, p)); strings.Join(h, ",") != strings.Join(l, ",") {
				t.Errorf("PutRecords %s: partition %d holds %q over HTTP, %q locally", c.name, p, h, l)
			}
		}
	}
	if lr, _ := local.PutRecords(ctx, puts[2].req("l2")); lr == nil || lr.FailedRecordCount == 0 || lr.Records[0].ErrorCode != disclient.CodeTrafficControl {
		t.Errorf("a PutRecords over the write quota is not refused with DIS.4303 by the local client: %+v", lr)
	}

	// Reads change nothing but the read quota: both clients read one stream.
	e.createStream("r", 2)
	e.clock.Advance(time.Second)
	e.put("r", recordsTo(0, 5, 3)...)
	e.put("r", disclient.PutRecordsEntry{Data: []byte("keyed"), PartitionKey: "k\x01\"é", PartitionID: "0", Timestamp: &ts})
	e.put("r", recordsTo(0, 4, 3000)...)
	cursors := []struct {
		name string
		req  *disclient.GetCursorRequest
	}{
		{"trim horizon", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", CursorType: disclient.CursorTrimHorizon}},
		{"latest", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "shardId-0000000000", CursorType: disclient.CursorLatest}},
		{"default type", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", StartingSequenceNumber: "3"}},
		{"after", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", CursorType: disclient.CursorAfterSequenceNumber, StartingSequenceNumber: "2"}},
		{"at timestamp", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", CursorType: disclient.CursorAtTimestamp, Timestamp: ts}},
		{"at timestamp 0", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", CursorType: disclient.CursorAtTimestamp}},
		{"empty partition", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "1", CursorType: disclient.CursorTrimHorizon}},
		{"no sequence number", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", CursorType: disclient.CursorAtSequenceNumber}},
		{"bad sequence number", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", StartingSequenceNumber: "-2"}},
		{"out of range", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", StartingSequenceNumber: "99"}},
		{"bad cursor type", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "0", CursorType: "SOMEWHERE"}},
		{"bad partition", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "shard-x", CursorType: disclient.CursorLatest}},
		{"partition not found", &disclient.GetCursorRequest{StreamName: "r", PartitionID: "5", CursorType: disclient.CursorLatest}},
		{"stream not found", &disclient.GetCursorRequest{StreamName: "nosuch", PartitionID: "0", CursorType: disclient.CursorLatest}},
		{"no partition", &disclient.GetCursorRequest{StreamName: "r"}},
	}
	for _, c := range cursors {
		hr, herr := httpc.GetCursor(ctx, c.req)
		lr, lerr := local.GetCursor(ctx, c.req)
		if h, l := renderOutcome(hr, herr), renderOutcome(lr, lerr); h != l {
			t.Errorf("GetCursor %s:\n http  %s\n local %s", c.name, h, l)
		}
	}

	expired := e.cursor("r", "0", disclient.CursorTrimHorizon)
	e.clock.Advance(6 * time.Minute)
	start := e.cursor("r", "0", disclient.CursorTrimHorizon)
	atEnd := e.cursor("r", "0", disclient.CursorLatest)
	gets := []struct {
		name     string
		cursor   string
		maxBytes int
	}{
		{"all", start, 0},
		{"small max_fetch_bytes", start, 7},
		{"one large record", start, 1},
		{"at the end", atEnd, 0},
		{"expired", expired, 0},
		{"invalid", "not-a-cursor", 0},
		{"no cursor", "", 0},
	}
	for _, c := range gets {
		hr, herr := httpc.GetRecords(ctx, c.cursor, c.maxBytes)
		lr, lerr := local.GetRecords(ctx, c.cursor, c.maxBytes)
		if h, l := renderOutcome(hr, herr), renderOutcome(lr, lerr); h != l {
			t.Errorf("GetRecords %s:\n http  %s\n local %s", c.name, h, l)
		}
	}

	// The read quota (2 MiB/s on a COMMON partition) runs out for both.
	e.clock.Advance(time.Second)
	e.createStream("big", 1)
	for range 3 {
		e.put("big", recordsTo(0, 1000, 1000)...)
		e.clock.Advance(time.Second)
	}
	for _, c := range []disclient.API{httpc, local} {
		cur := e.cursor("big", "0", disclient.CursorTrimHorizon)
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			_, err = c.GetRecords(ctx, cur, 0)
		}
		if de := (*disclient.Error)(nil); !errors.As(err, &de) || de.Code != disclient.CodeTrafficControl || de.Status != 400 {
			t.Errorf("reading past the read quota: %v, want DIS.4303 (HTTP 400)", err)
		}
		e.clock.Advance(2 * time.Second)
	}
}

// TestLocalClientRecordsAreOwned checks that the records of a local
// GetRecords answer belong to the caller: later reads do not change them,
// and changing them changes nothing else.
func TestLocalClientRecordsAreOwned(t *testing.T) {
	e := newEnv(t)
	_, local := e.clients(disclient.EncodingProtobuf)
	ctx := context.Background()
	e.createStream("s", 1)
	e.putTo("s", 0, "one", "two")
	e.putTo("s", 0, "three")
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	first, err := local.GetRecords(ctx, c, 6)
	if err != nil || len(first.Records) != 2 {
		t.Fatalf("GetRecords: %+v, %v", first, err)
	}
	second, err := local.GetRecords(ctx, first.NextPartitionCursor, 0)
	if err != nil || len(second.Records) != 1 {
		t.Fatalf("GetRecords: %+v, %v", second, err)
	}
	if got := payloads(first.Records); got[0] != "one" || got[1] != "two" {
		t.Errorf("an answer changed after the next read: %q", got)
	}
	first.Records[0].Data = append(first.Records[0].Data, "!!!"...)
	first.Records[1].Data[0] = 'T'
	again, err := local.GetRecords(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := payloads(again.Records); strings.Join(got, ",") != "one,two,three" {
		t.Errorf("records read again after changing an answer: %q", got)
	}
	if got := string(first.Records[1].Data); got != "Two" {
		t.Errorf("appending to one record's data changed the next: %q", got)
	}
}

// TestLocalClientContextAndClose checks that a done context stops a call
// before it writes, and that a closed server answers DIS.5000 in process as
// over HTTP.
func TestLocalClientContextAndClose(t *testing.T) {
	e := newEnv(t)
	httpc, local := e.clients(disclient.EncodingProtobuf)
	e.createStream("s", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := &disclient.PutRecordsRequest{StreamName: "s", Records: recordsTo(0, 1, 1)}
	if _, err := local.PutRecords(ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("PutRecords with a cancelled context: %v", err)
	}
	if _, err := local.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "s", PartitionID: "0", CursorType: disclient.CursorLatest}); !errors.Is(err, context.Canceled) {
		t.Errorf("GetCursor with a cancelled context: %v", err)
	}
	if got := e.readAll("s", 0); len(got) != 0 {
		t.Errorf("a cancelled PutRecords wrote %d records", len(got))
	}

	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	_, herr := httpc.PutRecords(bg, req)
	_, lerr := local.PutRecords(bg, req)
	if h, l := renderOutcome(nil, herr), renderOutcome(nil, lerr); h != l || !strings.Contains(l, disclient.CodeSystemError) {
		t.Errorf("PutRecords on a closed server:\n http  %s\n local %s", h, l)
	}
	// ListStreams is not served in process: it still goes over HTTP.
	_, herr = httpc.ListStreams(bg, 10, "")
	_, lerr = local.ListStreams(bg, 10, "")
	if h, l := renderOutcome(nil, herr), renderOutcome(nil, lerr); h != l {
		t.Errorf("ListStreams on a closed server:\n http  %s\n local %s", h, l)
	}
}

// TestLocalClientReadsPieces reads a partition of small and large records,
// more than one piece of a fresh read, and wants what HTTP reads.
func TestLocalClientReadsPieces(t *testing.T) {
	e := newEnv(t)
	httpc, local := e.clients(disclient.EncodingProtobuf)
	ctx := context.Background()
	e.createStream("s", 1)
	distinct := func(from, count, size int) []disclient.PutRecordsEntry {
		recs := make([]disclient.PutRecordsEntry, count)
		for i := range recs {
			d := fmt.Appendf(nil, "%06d", from+i)
			recs[i] = disclient.PutRecordsEntry{Data: append(d, bytes.Repeat([]byte{byte('a' + i%26)}, size)...), PartitionID: "0"}
		}
		return recs
	}
	e.put("s", distinct(0, 300, 1000)...)
	e.put("s", distinct(300, 2, 64<<10+1)...)
	e.put("s", distinct(302, 50, 7)...)
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	hr, herr := httpc.GetRecords(ctx, c, 8<<20)
	lr, lerr := local.GetRecords(ctx, c, 8<<20)
	if herr != nil || lerr != nil || len(lr.Records) != 352 {
		t.Fatalf("GetRecords: HTTP %v, local %d records, %v", herr, len(lr.Records), lerr)
	}
	if h, l := renderOutcome(hr, herr), renderOutcome(lr, lerr); h != l {
		t.Errorf("GetRecords differ:\n http  %.300s\n local %.300s", h, l)
	}
}

// sizedRecords is a record of each size for partition 0, each starting
// with its index and otherwise a letter of its own.
func sizedRecords(sizes ...int) []disclient.PutRecordsEntry {
	var recs []disclient.PutRecordsEntry
	for i, size := range sizes {
		d := append(fmt.Appendf(nil, "%06d", i), bytes.Repeat([]byte{byte('a' + i)}, size-6)...)
		recs = append(recs, disclient.PutRecordsEntry{Data: d, PartitionID: "0"})
	}
	return recs
}

// TestLocalClientSpans reads records of several sizes and key lengths with
// GetRecordsSpans: each record's data, its head joined to the span read
// from the file and the range Whole gives, is what HTTP reads; records of no more than spanMin bytes
// and one whose key is longer than a span read looks past come whole; and
// a span stays readable after retention has deleted its segment.
func TestLocalClientSpans(t *testing.T) {
	e := newLogEnv(t, SyncAlways, 1<<20)
	httpc, local := e.clients(disclient.EncodingProtobuf)
	ctx := context.Background()
	e.createStream("s", 1)
	const head, spanMin = 61, 4096
	// The keyed record keeps them all in frames of their own (a run has
	// no room for keys; TestRunRecordsAsSpans reads a run).
	recs := append(sizedRecords(100, spanMin, spanMin+1, 70000, 5000, 300000),
		disclient.PutRecordsEntry{Data: bytes.Repeat([]byte{'k'}, 9000), PartitionID: "0", PartitionKey: strings.Repeat("key", 64)})
	e.put("s", recs...)
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	hr, herr := httpc.GetRecords(ctx, c, 8<<20)
	sr, serr := local.(disclient.SpanGetter).GetRecordsSpans(ctx, c, 8<<20, head, spanMin)
	if herr != nil || serr != nil || len(sr.Records) != len(recs) {
		t.Fatalf("GetRecords: HTTP %v, spans %v, %v", herr, sr, serr)
	}
	whole := *sr
	whole.Records = slices.Clone(sr.Records)
	for i := range whole.Records {
		r := &whole.Records[i]
		data := len(recs[i].Data)
		switch spanned := r.Rest.Len > 0; {
		case spanned != (data > spanMin && recs[i].PartitionKey == ""):
			t.Errorf("record %d of %d bytes: spanned %v", i, data, spanned)
		case spanned && (len(r.Data) != head || r.Rest.Len != data-head):
			t.Errorf("record %d of %d bytes: %d bytes and a span of %d", i, data, len(r.Data), r.Rest.Len)
		}
		if r.Rest.Len > 0 {
			b, err := r.Rest.AppendTo(slices.Clone(r.Data))
			if err != nil {
				t.Fatal(err)
			}
			if w, err := r.Whole().AppendTo(nil); err != nil || !bytes.Equal(w, b) {
				t.Errorf("record %d: its whole range reads %d bytes, %v; want its %d", i, len(w), err, len(b))
			}
			r.Data, r.Rest = b, disclient.FileSpan{}
		}
	}
	if h, l := renderOutcome(hr, herr), renderOutcome(&whole, nil); h != l {
		t.Errorf("GetRecords differ:\n http  %.300s\n spans %.300s", h, l)
	}

	// Enough records after them to fill more segments; then the first
	// segment goes while a span of it is held.
	span := sr.Records[3].Rest
	for range 4 {
		e.put("s", disclient.PutRecordsEntry{Data: bytes.Repeat([]byte{'z'}, 600000), PartitionID: "0"})
	}
	if err := e.srv.records.RemoveBefore(e.srv.records.ActiveSegment()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(span.File.Name()); !os.IsNotExist(err) {
		t.Fatalf("segment %s not deleted: %v", span.File.Name(), err)
	}
	b, err := span.AppendTo(nil)
	if err != nil || !bytes.Equal(b, recs[3].Data[head:]) {
		t.Fatalf("span of a deleted segment reads %d bytes, %v", len(b), err)
	}
}
