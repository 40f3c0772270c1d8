package dislocal

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
)

func i64(v int64) *int64 { return &v }

func TestHashRouting(t *testing.T) {
	// Test vectors of the Java SDK's PartitionKeyUtils (docs/dis-api.md §2).
	if h := hashKey("0"); h != 5750288053043553775 {
		t.Errorf(`hashKey("0") = %d`, h)
	}
	if h := hashKey("user-1"); h != 6257593711501015798 {
		t.Errorf(`hashKey("user-1") = %d`, h)
	}
	for _, tc := range []struct {
		h    int64
		n    int32
		want int32
	}{
		{5750288053043553775, 2, 1},
		{5750288053043553775, 4, 2},
		{6257593711501015798, 3, 2},
		{0, 5, 0},
		{math.MaxInt64, 3, 2},
		{math.MaxInt64, 1, 0},
		{3074457345618258601, 3, 0},
		{3074457345618258602, 3, 1},
	} {
		if got := partitionForHash(tc.h, tc.n); got != tc.want {
			t.Errorf("partitionForHash(%d, %d) = %d, want %d", tc.h, tc.n, got, tc.want)
		}
	}
}

func TestPutRecords(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 3)
	now := e.clock.Now().UnixMilli()
	recs := []disclient.PutRecordsEntry{
		{Data: []byte("a"), PartitionID: "shardId-0000000002"},
		{Data: []byte("b"), PartitionID: "2", PartitionKey: "0"},     // partition_id beats the key
		{Data: []byte("c"), PartitionKey: "user-1"},                  // hashes to 2 of 3
		{Data: []byte("d"), ExplicitHashKey: "0", PartitionKey: "0"}, // explicit_hash_key beats the key
		{Data: bytes.Repeat([]byte("x"), maxRecordBytes+1)},          // too large
		{Data: []byte("e"), PartitionID: "7"},                        // no such partition
		{Data: []byte("f"), PartitionID: "shard-1"},                  // malformed partition id
		{Data: []byte("g"), ExplicitHashKey: "-5"},                   // malformed hash key
		{Data: []byte("h"), PartitionID: "1", Timestamp: i64(1234)},  // producer timestamp
		{Data: []byte{}, PartitionID: "1"},                           // empty data is a record
		{Data: []byte("i"), PartitionID: "1", Timestamp: i64(-1)},    // negative timestamp
	}
	raw := e.must("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "s", Records: recs}, 200, nil)
	m := jsonKinds(t, raw)
	wantTypes(t, m, map[string]string{"failed_record_count": "number", "records": "array"})
	results := m["records"].([]any)
	wantOK := []bool{true, true, true, true, false, false, false, false, true, true, false}
	for i, r := range results {
		if wantOK[i] {
			wantTypes(t, r, map[string]string{"partition_id": "string", "sequence_number": "string", "error_code": "missing"})
		} else {
			wantTypes(t, r, map[string]string{"partition_id": "missing", "sequence_number": "missing", "error_code": "string", "error_message": "string"})
		}
	}

	resp := e.put("s", recs...)
	if resp.FailedRecordCount != 5 {
		t.Errorf("failed_record_count = %d, want 5", resp.FailedRecordCount)
	}
	// The second put repeats the first, so sequence numbers continue.
	want := []disclient.PutRecordsResult{
		{PartitionID: "shardId-0000000002", SequenceNumber: "3"},
		{PartitionID: "shardId-0000000002", SequenceNumber: "4"},
		{PartitionID: "shardId-0000000002", SequenceNumber: "5"},
		{PartitionID: "shardId-0000000000", SequenceNumber: "1"},
		{ErrorCode: disclient.CodeInvalidRequest},
		{ErrorCode: disclient.CodePartitionNotFound},
		{ErrorCode: disclient.CodeInvalidPartitionID},
		{ErrorCode: disclient.CodeInvalidRequest},
		{PartitionID: "shardId-0000000001", SequenceNumber: "2"},
		{PartitionID: "shardId-0000000001", SequenceNumber: "3"},
		{ErrorCode: disclient.CodeInvalidRequest},
	}
	for i, r := range resp.Records {
		if r.ErrorCode != "" && r.ErrorMessage == "" {
			t.Errorf("record %d: error without message", i)
		}
		r.ErrorMessage = ""
		if r != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, r, want[i])
		}
	}

	got := e.readAll("s", 2)
	if !slices.Equal(payloads(got), []string{"a", "b", "c", "a", "b", "c"}) || !slices.Equal(seqs(got), []string{"0", "1", "2", "3", "4", "5"}) {
		t.Fatalf("partition 2 = %v %v", payloads(got), seqs(got))
	}
	for _, r := range got {
		if r.Timestamp != now || r.TimestampType != "CreateTime" {
			t.Errorf("record %s: timestamp %d %q, want %d CreateTime", r.SequenceNumber, r.Timestamp, r.TimestampType, now)
		}
	}
	if got[0].PartitionKey != "" || got[1].PartitionKey != "0" || got[2].PartitionKey != "user-1" {
		t.Errorf("partition keys = %q %q %q", got[0].PartitionKey, got[1].PartitionKey, got[2].PartitionKey)
	}
	p1 := e.readAll("s", 1)
	if len(p1) != 4 || p1[0].Timestamp != 1234 || p1[1].Timestamp != now || len(p1[1].Data) != 0 {
		t.Errorf("partition 1 = %+v", p1)
	}

	c := e.cursor("s", "2", disclient.CursorTrimHorizon)
	raw = e.must("GET", v2("/records?partition-cursor=%s&limit=2", c), nil, 200, nil)
	m = jsonKinds(t, raw)
	wantTypes(t, m, map[string]string{"records": "array", "next_partition_cursor": "string"})
	for i, r := range m["records"].([]any) {
		kinds := map[string]string{"sequence_number": "string", "data": "string", "timestamp": "number", "timestamp_type": "string", "partition_key": "string"}
		if i == 0 {
			kinds["partition_key"] = "missing"
		}
		wantTypes(t, r, kinds)
	}

	e.fails("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "s"}, 400, disclient.CodeEmptyRequest)
	e.fails("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "nope", Records: recs[:1]}, 400, disclient.CodeStreamNotFound)
	e.fails("POST", v2("/records"), disclient.PutRecordsRequest{Records: recs[:1]}, 400, disclient.CodeInvalidRequest)
	e.fails("POST", v2("/records"), `{"stream_name":"s","records":[{"data":"not base64!"}]}`, 400, disclient.CodeInvalidRequest)

	// stream_id is the fallback when stream_name is absent.
	id := e.describe("s", "").StreamID
	var byID disclient.PutRecordsResponse
	e.must("POST", v2("/records"), disclient.PutRecordsRequest{StreamID: id, Records: recs[:1]}, 200, &byID)
	if byID.Records[0].SequenceNumber != "6" {
		t.Errorf("put by stream_id = %+v", byID)
	}
}

func TestPutRecordsRoundRobinAndKeys(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	var recs []disclient.PutRecordsEntry
	for range 6 {
		recs = append(recs, disclient.PutRecordsEntry{Data: []byte("x")})
	}
	count := map[string]int{}
	for _, r := range e.put("s", recs...).Records {
		count[r.PartitionID]++
	}
	if count["shardId-0000000000"] != 3 || count["shardId-0000000001"] != 3 {
		t.Errorf("round robin spread = %v", count)
	}
	// The same key always lands on the same partition; "0" hashes to 1 of 2.
	for range 3 {
		if r := e.put("s", disclient.PutRecordsEntry{Data: []byte("k"), PartitionKey: "0"}).Records[0]; r.PartitionID != "shardId-0000000001" {
			t.Fatalf(`key "0" went to %s`, r.PartitionID)
		}
	}
}

func TestPutRecordsSequenceNumbersUnderConcurrency(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	const writers, puts = 4, 10
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range puts {
				body := disclient.PutRecordsRequest{StreamName: "s", Records: []disclient.PutRecordsEntry{
					{Data: fmt.Appendf(nil, "%d-%d-a", w, i), PartitionID: "0"},
					{Data: fmt.Appendf(nil, "%d-%d-b", w, i), PartitionID: "1"},
					{Data: fmt.Appendf(nil, "%d-%d-c", w, i), PartitionID: "0"},
				}}
				status, raw := e.do("POST", v2("/records"), body)
				if status != 200 {
					errs <- fmt.Errorf("put: %d %s", status, raw)
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for part, n := range map[int32]int{0: 2 * writers * puts, 1: writers * puts} {
		got := e.readAll("s", part)
		if len(got) != n {
			t.Fatalf("partition %d has %d records, want %d", part, len(got), n)
		}
		for i, r := range got {
			if r.SequenceNumber != fmt.Sprint(i) {
				t.Fatalf("partition %d record %d has sequence number %s", part, i, r.SequenceNumber)
			}
		}
		// Records of one request stay in request order within a partition.
		if part == 0 {
			for i := 0; i < len(got); i += 2 {
				a, c := string(got[i].Data), string(got[i+1].Data)
				if !strings.HasSuffix(a, "-a") || c != strings.TrimSuffix(a, "a")+"c" {
					t.Fatalf("records %d,%d = %s,%s: a request's records were split", i, i+1, a, c)
				}
			}
		}
	}
}

func TestGetRecordsLimits(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	var data []string
	for i := range 10 {
		data = append(data, fmt.Sprintf("%03d", i)+strings.Repeat("x", 97))
	}
	e.putTo("s", 0, data...)
	start := e.cursor("s", "0", disclient.CursorTrimHorizon)

	r := e.get(start, "limit", "3")
	if !slices.Equal(seqs(r.Records), []string{"0", "1", "2"}) {
		t.Errorf("limit=3: %v", seqs(r.Records))
	}
	r = e.get(r.NextPartitionCursor, "max_fetch_bytes", "250")
	if !slices.Equal(seqs(r.Records), []string{"3", "4"}) {
		t.Errorf("max_fetch_bytes=250: %v", seqs(r.Records))
	}
	// As DIS: a record larger than max_fetch_bytes is not returned, and the
	// next cursor stays in front of it.
	r = e.get(r.NextPartitionCursor, "max_fetch_bytes", "99")
	if len(r.Records) != 0 {
		t.Errorf("max_fetch_bytes=99 returned %v; a 100-byte record must not be", seqs(r.Records))
	}
	r = e.get(r.NextPartitionCursor, "max_fetch_bytes", "100")
	if !slices.Equal(seqs(r.Records), []string{"5"}) {
		t.Errorf("max_fetch_bytes=100: %v", seqs(r.Records))
	}
	r = e.get(r.NextPartitionCursor)
	if !slices.Equal(payloads(r.Records), data[6:]) {
		t.Errorf("rest = %v", seqs(r.Records))
	}
	// At the end: no records, and a cursor that picks up later writes.
	end := e.get(r.NextPartitionCursor)
	if len(end.Records) != 0 || end.NextPartitionCursor == "" {
		t.Fatalf("at end: %+v", end)
	}
	e.putTo("s", 0, "later")
	if got := e.get(end.NextPartitionCursor); !slices.Equal(payloads(got.Records), []string{"later"}) || got.Records[0].SequenceNumber != "10" {
		t.Errorf("after a later write: %+v", got.Records)
	}

	raw := e.must("GET", v2("/records?partition-cursor=%s", e.cursor("s", "1", disclient.CursorTrimHorizon)), nil, 200, nil)
	if !strings.HasPrefix(string(raw), `{"records":[],"next_partition_cursor":"`) {
		t.Errorf("empty partition answer = %s", raw)
	}
	e.fails("GET", v2("/records?partition-cursor=%s&limit=10001", start), nil, 400, disclient.CodeInvalidRequest)
	e.fails("GET", v2("/records?partition-cursor=%s&max_fetch_bytes=lots", start), nil, 400, disclient.CodeInvalidRequest)
}

func TestGetRecordsEscapesKeys(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	keys := []string{`quote"back\slash`, "ctl\x01\n\ttab", "ünïcødé 🙂", "a\u2028b"}
	for _, k := range keys {
		e.put("s", disclient.PutRecordsEntry{Data: []byte(k), PartitionKey: k})
	}
	for i, r := range e.readAll("s", 0) {
		if r.PartitionKey != keys[i] || string(r.Data) != keys[i] {
			t.Errorf("record %d: key %q data %q, want %q", i, r.PartitionKey, r.Data, keys[i])
		}
	}
	if got := string(appendJSONString(nil, []byte{'a', 0xff, 'b'})); got != `"a\ufffdb"` {
		t.Errorf("invalid UTF-8 encodes as %s", got)
	}
}

func decodeCursorJSON(t *testing.T, c string) string {
	t.Helper()
	if strings.ContainsAny(c, "=+/") {
		t.Errorf("cursor %q is not unpadded base64url", c)
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		t.Fatalf("cursor %q: %v", c, err)
	}
	return string(raw)
}

func TestCursorTypes(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	// Producer timestamps are not monotonic.
	stamps := []int64{100, 300, 200, 400, 250}
	for i, ts := range stamps {
		e.put("s", disclient.PutRecordsEntry{Data: fmt.Append(nil, i), PartitionID: "0", Timestamp: i64(ts)})
	}
	now := e.clock.Now().UnixMilli()
	firstSeq := func(c string) string {
		t.Helper()
		r := e.get(c)
		if len(r.Records) == 0 {
			return "none"
		}
		return r.Records[0].SequenceNumber
	}

	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	want := fmt.Sprintf(`{"getIteratorParam":{"stream-name":"s","partition-id":"0","cursor-type":"TRIM_HORIZON","starting-sequence-number":"0"},"generateTimestamp":%d}`, now)
	if got := decodeCursorJSON(t, c); got != want {
		t.Errorf("cursor = %s\nwant    %s", got, want)
	}
	if got := firstSeq(c); got != "0" {
		t.Errorf("TRIM_HORIZON starts at %s", got)
	}

	c = e.cursor("s", "shardId-0000000000", disclient.CursorAtSequenceNumber, "starting-sequence-number", "2")
	if got := decodeCursorJSON(t, c); !strings.Contains(got, `"partition-id":"shardId-0000000000","cursor-type":"AT_SEQUENCE_NUMBER","starting-sequence-number":"2"`) {
		t.Errorf("AT_SEQUENCE_NUMBER cursor = %s", got)
	}
	if got := firstSeq(c); got != "2" {
		t.Errorf("AT_SEQUENCE_NUMBER 2 starts at %s", got)
	}
	c = e.cursor("s", "0", disclient.CursorAfterSequenceNumber, "starting-sequence-number", "2")
	if got := decodeCursorJSON(t, c); !strings.Contains(got, `"starting-sequence-number":"3"`) {
		t.Errorf("AFTER_SEQUENCE_NUMBER cursor holds %s, want the resolved 3", got)
	}
	if got := firstSeq(c); got != "3" {
		t.Errorf("AFTER_SEQUENCE_NUMBER 2 starts at %s", got)
	}
	// No cursor type means AT_SEQUENCE_NUMBER, and next (5) is accepted.
	c = e.cursor("s", "0", "", "starting-sequence-number", "5")
	if got := firstSeq(c); got != "none" {
		t.Errorf("AT_SEQUENCE_NUMBER next returned records from %s", got)
	}
	latest := e.cursor("s", "0", disclient.CursorLatest)
	if got := decodeCursorJSON(t, latest); !strings.Contains(got, `"starting-sequence-number":"5"`) {
		t.Errorf("LATEST cursor = %s", got)
	}

	for _, tc := range []struct {
		ts   string
		want string
	}{
		{"0", "0"}, {"100", "0"}, {"101", "1"}, {"200", "1"}, {"250", "1"}, {"300", "1"}, {"301", "3"}, {"400", "3"}, {"401", "none"},
	} {
		c := e.cursor("s", "0", disclient.CursorAtTimestamp, "timestamp", tc.ts)
		if got := firstSeq(c); got != tc.want {
			t.Errorf("AT_TIMESTAMP %s starts at %s, want %s", tc.ts, got, tc.want)
		}
	}

	e.putTo("s", 0, "new")
	if r := e.get(latest); !slices.Equal(payloads(r.Records), []string{"new"}) {
		t.Errorf("LATEST read %v, want only the later record", payloads(r.Records))
	}

	q := func(s string) string { return v2("/cursors?stream-name=s&%s", s) }
	for _, bad := range []string{
		"partition-id=0&starting-sequence-number=7",
		"partition-id=0&cursor-type=AT_SEQUENCE_NUMBER&starting-sequence-number=7",
		"partition-id=0&cursor-type=AFTER_SEQUENCE_NUMBER&starting-sequence-number=6",
		"partition-id=0&cursor-type=AFTER_SEQUENCE_NUMBER&starting-sequence-number=9223372036854775807",
	} {
		msg := e.fails("GET", q(bad), nil, 400, disclient.CodeSequenceOutOfRange)
		if !strings.HasPrefix(msg, "Sequence_number out of range") {
			t.Errorf("DIS.4224 message %q", msg)
		}
	}
	e.fails("GET", q("partition-id=0&cursor-type=SOMEWHERE"), nil, 400, disclient.CodeInvalidCursorType)
	e.fails("GET", q("partition-id=0&starting-sequence-number=abc"), nil, 400, disclient.CodeInvalidSequence)
	e.fails("GET", q("partition-id=0"), nil, 400, disclient.CodeInvalidSequence)
	e.fails("GET", q("partition-id=0&cursor-type=AT_TIMESTAMP"), nil, 400, disclient.CodeInvalidRequest)
	e.fails("GET", q("partition-id=3&cursor-type=LATEST"), nil, 400, disclient.CodePartitionNotFound)
	e.fails("GET", q("partition-id=x&cursor-type=LATEST"), nil, 400, disclient.CodeInvalidPartitionID)
	e.fails("GET", v2("/cursors?stream-name=nope&partition-id=0&cursor-type=LATEST"), nil, 400, disclient.CodeStreamNotFound)
	e.fails("GET", v2("/cursors?partition-id=0&cursor-type=LATEST"), nil, 400, disclient.CodeInvalidRequest)
}

func TestCursorExpiry(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	e.putTo("s", 0, "a", "b")
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	e.clock.Advance(5 * time.Minute)
	r := e.get(c, "limit", "1")
	if !slices.Equal(payloads(r.Records), []string{"a"}) {
		t.Fatalf("cursor at exactly its TTL: %v", payloads(r.Records))
	}
	e.clock.Advance(time.Millisecond)
	e.fails("GET", v2("/records?partition-cursor=%s", c), nil, 400, disclient.CodeCursorExpired)
	// The next cursor was made later and is still valid.
	if r := e.get(r.NextPartitionCursor); !slices.Equal(payloads(r.Records), []string{"b"}) {
		t.Errorf("next cursor read %v", payloads(r.Records))
	}

	for _, bad := range []string{
		"",
		"!!!",
		base64.RawURLEncoding.EncodeToString([]byte("not json")),
		base64.RawURLEncoding.EncodeToString([]byte(`{"getIteratorParam":{"stream-name":"s","partition-id":"0","starting-sequence-number":"x"},"generateTimestamp":1}`)),
		base64.RawURLEncoding.EncodeToString([]byte(`{"getIteratorParam":{"stream-name":"s","partition-id":"0","starting-sequence-number":"0"}}`)),
		strings.Repeat("A", 2000),
	} {
		e.fails("GET", v2("/records?partition-cursor=%s", bad), nil, 400, disclient.CodeInvalidCursor)
	}
	bogusPartition := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil,
		`{"getIteratorParam":{"stream-name":"s","partition-id":"zz","cursor-type":"LATEST","starting-sequence-number":"0"},"generateTimestamp":%d}`, e.clock.Now().UnixMilli()))
	e.fails("GET", v2("/records?partition-cursor=%s", bogusPartition), nil, 400, disclient.CodeInvalidCursor)
	// Padded cursors are tolerated.
	padded := base64.URLEncoding.EncodeToString([]byte(decodeCursorJSON(t, e.cursor("s", "0", disclient.CursorTrimHorizon))))
	if r := e.get(padded); len(r.Records) != 2 {
		t.Errorf("padded cursor read %d records", len(r.Records))
	}
}
