package dislocal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog"
)

// lastSegment is the path of the newest record log segment that holds data.
func (e *env) lastSegment() string {
	e.tb.Helper()
	ids := e.srv.records.Segments()
	for i := len(ids) - 1; i >= 0; i-- {
		p := e.srv.records.SegmentPath(ids[i])
		if st, err := os.Stat(p); err == nil && st.Size() > 0 {
			return p
		}
	}
	e.tb.Fatal("no record log segment holds data")
	return ""
}

// forgetDurable deletes the record log's marker of how far it is durable,
// as a crash before the fsync of a tail the test then cuts leaves it:
// with the marker, a cut into what it calls durable is damage, not a torn
// tail (recordlog's recovery.go).
func (e *env) forgetDurable() {
	e.tb.Helper()
	if err := os.Remove(filepath.Join(e.dir, logDirName, "synced")); err != nil {
		e.tb.Fatal(err)
	}
}

// A frame that reached the log without its reference in pebble (pebble's
// unsynced write lost in a power loss) is indexed again when the store is
// opened: the record log is the durable copy. A frame that does not
// continue its partition is not.
func TestRecordLogFrameWithoutReference(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t)
			e.sync = mode
			e.reopen()
			e.createStream("s", 1)
			e.putTo("s", 0, "a", "b")
			st := e.srv.streams[catalogKey(project, "s")]
			lost := recordlog.AppendFrame(nil, st.meta.Key, 0, 2, 1, "", []byte("lost"))
			lost = recordlog.AppendFrame(lost, st.meta.Key, 0, 9, 1, "", []byte("stray"))
			noIndex := func(uint64, int64) error { return nil }
			if _, _, err := e.srv.records.Append(lost, noIndex); err != nil {
				t.Fatal(err)
			}
			e.reopen()
			if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a", "b", "lost"}) {
				t.Fatalf("after restart: %v", got)
			}
			if got := e.putTo("s", 0, "c"); got[0] != "3" {
				t.Fatalf("next sequence number %s, want 3", got[0])
			}
			e.reopen()
			if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a", "b", "lost", "c"}) {
				t.Errorf("after restart and write: %v", got)
			}
		})
	}
}

// References whose frames did not reach the disk whole (pebble's WAL made
// it, the log's tail did not: a power loss) are dropped on open with their
// index entries, and the partition goes on from the last whole record.
func TestRecordLogTornTailRecovery(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	e.put("s",
		disclient.PutRecordsEntry{Data: []byte("a"), PartitionID: "0", Timestamp: i64(100)},
		disclient.PutRecordsEntry{Data: []byte("x"), PartitionID: "1", Timestamp: i64(100)},
	)
	e.clock.Advance(time.Second)
	// Two calls: in one, b and c would share a run frame, torn as one.
	e.put("s", disclient.PutRecordsEntry{Data: []byte("b"), PartitionID: "0", Timestamp: i64(200)})
	e.put("s", disclient.PutRecordsEntry{Data: []byte("c"), PartitionID: "0", Timestamp: i64(300)})
	seg := e.lastSegment()
	e.close()
	// Cut into the frame of "c", the last record written.
	e.forgetDurable()
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, st.Size()-3); err != nil {
		t.Fatal(err)
	}
	e.open()

	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("partition 0 after recovery: %v", got)
	}
	if got := payloads(e.readAll("s", 1)); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("partition 1 after recovery: %v", got)
	}
	if r := e.describe("s", "").Partitions[0].SequenceNumberRange; r != "[0 : 2]" {
		t.Errorf("range after recovery %s", r)
	}
	// The timestamp index lost c's entry: AT_TIMESTAMP 250 is past the end.
	c := e.cursor("s", "0", disclient.CursorAtTimestamp, "timestamp", "250")
	if r := e.get(c); len(r.Records) != 0 {
		t.Errorf("AT_TIMESTAMP 250 after recovery: %v", seqs(r.Records))
	}
	if got := e.putTo("s", 0, "d"); got[0] != "2" {
		t.Errorf("next sequence number %s, want 2", got[0])
	}
	c = e.cursor("s", "0", disclient.CursorAtTimestamp, "timestamp", "150")
	if r := e.get(c); !slices.Equal(payloads(r.Records), []string{"b", "d"}) {
		t.Errorf("AT_TIMESTAMP 150 after recovery and write: %v", payloads(r.Records))
	}
	// Recovery is durable: another restart changes nothing.
	e.reopen()
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Errorf("partition 0 after second restart: %v", got)
	}
}

// Retention deletes whole segments once no partition's earliest record is
// in or before them, and keeps every segment a retained record is in.
func TestRecordLogRetentionDropsSegments(t *testing.T) {
	e := newLogEnv(t, SyncAlways, 4096)
	e.createStream("s", 2)
	payload := strings.Repeat("x", 1000)
	for i := range 20 {
		e.putTo("s", int32(i%2), fmt.Sprint(i, payload))
	}
	e.clock.Advance(time.Hour)
	for i := range 10 {
		e.putTo("s", 1, fmt.Sprint("kept", i, payload))
	}
	before := len(e.srv.records.Segments())
	if before < 6 {
		t.Fatalf("%d segments, want records spread over many", before)
	}
	e.clock.Advance(23*time.Hour + time.Second)
	e.sweep()
	after := len(e.srv.records.Segments())
	if after >= before-2 {
		t.Errorf("%d segments after the sweep, %d before: expired ones not deleted", after, before)
	}
	if got := e.readAll("s", 1); len(got) != 10 || !strings.HasPrefix(string(got[0].Data), "kept0") {
		t.Fatalf("partition 1 after sweep: %d records", len(got))
	}
	if got := e.readAll("s", 0); len(got) != 0 {
		t.Errorf("partition 0 after sweep: %v", seqs(got))
	}
	e.reopen()
	if got := e.readAll("s", 1); len(got) != 10 {
		t.Errorf("partition 1 after restart: %d records", len(got))
	}
	e.clock.Advance(time.Hour)
	e.sweep()
	if got := e.srv.records.Segments(); len(got) != 1 {
		t.Errorf("segments after everything expired: %v, want only the active one", got)
	}
}

// A data directory of the older format, record data inside pebble and no
// format key, is refused rather than misread.
func TestOpenRefusesOlderFormat(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(namedKey(kindStream, project, "s"), []byte("{}"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	srv, err := Open(Config{Dir: dir})
	if err == nil {
		_ = srv.Close()
		t.Fatal("Open accepted a data directory of the older format")
	}
	if !strings.Contains(err.Error(), "older version") {
		t.Errorf("error %q does not say why", err)
	}
}
