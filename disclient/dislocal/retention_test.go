package dislocal

import (
	"bytes"
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

func (e *env) sweep() {
	e.tb.Helper()
	if err := e.srv.sweep(context.Background(), e.clock.Now()); err != nil {
		e.tb.Fatalf("sweep: %v", err)
	}
}

func TestRetention(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g"}, 201, nil)
	// Producer timestamps: the kept record has the highest one, so the
	// timestamp index entry that covers it belongs to an expired record.
	e.put("s",
		disclient.PutRecordsEntry{Data: []byte("old0"), PartitionID: "0", Timestamp: i64(1000)},
		disclient.PutRecordsEntry{Data: []byte("old1"), PartitionID: "0", Timestamp: i64(50)},
	)
	e.clock.Advance(time.Hour)
	e.put("s", disclient.PutRecordsEntry{Data: []byte("kept"), PartitionID: "0", Timestamp: i64(1000)})
	e.clock.Advance(23 * time.Hour)
	oldCursor := e.cursor("s", "0", disclient.CursorTrimHorizon)

	// Exactly 24 h after the first write nothing has expired yet.
	e.sweep()
	if r := e.describe("s", "").Partitions[0].SequenceNumberRange; r != "[0 : 3]" {
		t.Fatalf("range at 24h = %s", r)
	}
	e.clock.Advance(time.Second)
	e.sweep()
	d := e.describe("s", "")
	if d.Partitions[0].SequenceNumberRange != "[2 : 3]" || d.Partitions[1].SequenceNumberRange != "[0 : 0]" {
		t.Fatalf("ranges after sweep = %s %s", d.Partitions[0].SequenceNumberRange, d.Partitions[1].SequenceNumberRange)
	}
	e.fails("GET", v2("/records?partition-cursor=%s", oldCursor), nil, 400, disclient.CodeCursorPositionGone)
	if got := e.readAll("s", 0); !slices.Equal(payloads(got), []string{"kept"}) || got[0].SequenceNumber != "2" {
		t.Errorf("after sweep: %v", got)
	}
	e.fails("GET", v2("/cursors?stream-name=s&partition-id=0&starting-sequence-number=1"), nil, 400, disclient.CodeSequenceOutOfRange)
	// An expired record had a timestamp at or after 0 and 1000: those are
	// expired timestamps, as DIS answers one before its retention.
	for _, ts := range []string{"0", "1000"} {
		msg := e.fails("GET", v2("/cursors?stream-name=s&partition-id=0&cursor-type=AT_TIMESTAMP&timestamp=%s", ts), nil, 400, disclient.CodeRequestError)
		if !strings.Contains(msg, "timestamp is expired, timestamp should be larger than 1000") {
			t.Errorf("AT_TIMESTAMP %s after sweep: %s", ts, msg)
		}
	}
	_, local := e.clients(disclient.EncodingJSON)
	if _, err := local.GetCursor(context.Background(), &disclient.GetCursorRequest{StreamName: "s", PartitionID: "0",
		CursorType: disclient.CursorAtTimestamp, Timestamp: 1000}); !disclient.IsCode(err, disclient.CodeRequestError) {
		t.Errorf("AT_TIMESTAMP 1000 in process after sweep: %v, want DIS.4300", err)
	}
	if r := e.get(e.cursor("s", "0", disclient.CursorAtTimestamp, "timestamp", "1001")); len(r.Records) != 0 {
		t.Errorf("AT_TIMESTAMP after the newest record returned %v", seqs(r.Records))
	}
	var cs disclient.ConsumerStateResponse
	e.must("GET", v2("/apps/g/streams/s?checkpoint_type=LAST_READ"), nil, 200, &cs)
	if st := cs.PartitionConsumingStates[0]; st.EarliestOffset != 2 || st.LatestOffset != 3 {
		t.Errorf("consumer state after sweep = %+v", st)
	}

	// The new earliest survives a restart; sweeping again changes nothing.
	e.reopen()
	e.sweep()
	if r := e.describe("s", "").Partitions[0].SequenceNumberRange; r != "[2 : 3]" {
		t.Errorf("range after restart = %s", r)
	}

	// Once everything expired the partition is empty and numbering goes on.
	e.clock.Advance(24 * time.Hour)
	e.sweep()
	if r := e.describe("s", "").Partitions[0].SequenceNumberRange; r != "[3 : 3]" {
		t.Errorf("range when all expired = %s", r)
	}
	if got := e.putTo("s", 0, "fresh"); got[0] != "3" {
		t.Errorf("after full expiry the next record is %s, want 3", got[0])
	}
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"fresh"}) {
		t.Errorf("after full expiry: %v", got)
	}
}

func TestRetentionFollowsUpdateStream(t *testing.T) {
	e := newEnv(t)
	e.must("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1, DataDuration: i32(72)}, 201, nil)
	e.putTo("s", 0, "a")
	e.clock.Advance(48*time.Hour + time.Second)
	e.sweep()
	if got := len(e.readAll("s", 0)); got != 1 {
		t.Fatalf("72h stream lost a 48h old record")
	}
	e.must("PUT", "/v3/"+project+"/streams/s", disclient.UpdateStreamRequest{StreamName: "s", DataDuration: i32(24)}, 200, nil)
	e.sweep()
	if got := len(e.readAll("s", 0)); got != 0 {
		t.Errorf("24h stream kept a 48h old record")
	}
}

// TestClose checks that Close stops the sweeper, is idempotent, and that
// requests after it get a logged DIS error instead of touching a closed
// database.
func TestClose(t *testing.T) {
	var logs bytes.Buffer
	srv, err := Open(Config{Dir: t.TempDir(), RetentionCheckInterval: time.Millisecond, Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", v2("/streams"), nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"errorCode":"DIS.5000"`) {
		t.Errorf("after Close: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), `"code":"DIS.5000"`) {
		t.Errorf("the 5xx was not logged: %s", logs.String())
	}
}
