package dislocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// The tests of what the record log's recovery keeps, cuts and reports
// (docs/dis-embedded.md, "What the tests prove").

// readSeq reads record seq of a partition: its data, or the HTTP status
// and body of the failure.
func (e *env) readSeq(stream string, part int32, seq int64) (data string, status int, body string) {
	e.tb.Helper()
	c := e.cursor(stream, disclient.PartitionID(part), disclient.CursorAtSequenceNumber, "starting-sequence-number", fmt.Sprint(seq))
	status, raw := e.do("GET", v2("/records?limit=1&partition-cursor=%s", c), nil)
	if status != 200 {
		return "", status, string(raw)
	}
	var resp disclient.GetRecordsResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		e.tb.Fatal(err)
	}
	if len(resp.Records) != 1 || resp.Records[0].SequenceNumber != fmt.Sprint(seq) {
		return "", 404, string(raw)
	}
	return string(resp.Records[0].Data), 200, ""
}

// flipByte changes one byte of the record log file path at off.
func flipByte(tb testing.TB, path string, off int64) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		tb.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off); err != nil {
		tb.Fatal(err)
	}
}

// One flipped byte in an acknowledged record of the newest segment, found
// after a clean stop, is damage: the record is quarantined (a read of it
// fails naming the file), every other record stays readable, and no
// sequence number is used again.
func TestFlippedByteQuarantined(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	for i := range 10 {
		e.putTo("s", 0, fmt.Sprint("record-", i))
	}
	st := e.srv.streams[catalogKey(project, "s")]
	ref, err := e.srv.recordRefAt(st.meta.Key, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	path := e.srv.records.SegmentPath(ref.Seg)
	e.close()
	flipByte(t, path, ref.Off+2)
	e.open()
	for i := range int64(10) {
		data, status, body := e.readSeq("s", 0, i)
		if i == 5 {
			if status != 500 || !strings.Contains(body, path) {
				t.Errorf("record 5: %q, status %d %s; want DIS.5000 naming %s", data, status, body, path)
			}
			continue
		}
		if data != fmt.Sprint("record-", i) {
			t.Errorf("record %d: %q, status %d %s", i, data, status, body)
		}
	}
	if got := e.putTo("s", 0, "next"); got[0] != "10" {
		t.Errorf("next sequence number %s, want 10", got[0])
	}
	if found, known := e.srv.LogDamage(); found != 1 || len(known) != 1 || !strings.Contains(known[0], path) {
		t.Errorf("LogDamage = %d, %q", found, known)
	}
}

// A record whose fsync failed (answered DIS.5000) is not readable after a
// restart even though the page cache still holds it: the failure marked
// where to cut the segment. Without that mark (its write failed too) open
// drops the page cache of what was not known durable, with the same
// result.
func TestFailedFsyncCutOnRestart(t *testing.T) {
	for _, markFails := range []bool{false, true} {
		t.Run(fmt.Sprint("markFails=", markFails), func(t *testing.T) {
			mem := logfs.NewMemFS()
			e := &env{tb: t, dir: t.TempDir(), clock: newFakeClock(), sync: SyncAlways, logFS: mem, segmentBytes: 1 << 30}
			e.open()
			t.Cleanup(e.close)
			e.createStream("s", 1)
			e.putTo("s", 0, "acked")
			var failing atomic.Bool
			failing.Store(true)
			mem.Inject(func(op logfs.Op, name string) error {
				switch {
				case !failing.Load():
				case op == logfs.OpSync && strings.HasSuffix(name, ".log"):
					return errors.New("injected EIO")
				case markFails && strings.HasSuffix(name, "synced"):
					return errors.New("injected EIO")
				}
				return nil
			})
			e.fails("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "s",
				Records: []disclient.PutRecordsEntry{{Data: []byte("failed"), PartitionID: "0"}}}, 500, disclient.CodeSystemError)
			failing.Store(false)
			e.reopen()
			if got := payloads(e.readAll("s", 0)); len(got) != 1 || got[0] != "acked" {
				t.Fatalf("after restart: %q, want only the acknowledged record", got)
			}
			if got := e.putTo("s", 0, "next"); got[0] != "1" {
				t.Errorf("next sequence number %s, want 1", got[0])
			}
		})
	}
}

// Damage in an older segment is found by the scan at open before any
// read, reported, and a read that meets it names it; readers are moved
// past it with a cursor after it.
func TestOlderSegmentDamageFound(t *testing.T) {
	e := newLogEnv(t, SyncAlways, 4096)
	e.createStream("s", 1)
	payload := strings.Repeat("x", 1000)
	for i := range 12 {
		e.putTo("s", 0, fmt.Sprint(i, payload))
	}
	st := e.srv.streams[catalogKey(project, "s")]
	ref, err := e.srv.recordRefAt(st.meta.Key, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := e.srv.recordRefAt(st.meta.Key, 0, 11); last.Seg == ref.Seg {
		t.Fatal("the records did not roll onto several segments")
	}
	path := e.srv.records.SegmentPath(ref.Seg)
	e.close()
	flipByte(t, path, ref.Off+10)
	e.open()
	e.srv.records.ScanDone()
	if found, known := e.srv.LogDamage(); found != 1 || len(known) != 1 || !strings.Contains(known[0], path) {
		t.Fatalf("LogDamage after the scan = %d, %q", found, known)
	}
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	if msg := e.fails("GET", v2("/records?partition-cursor=%s", c), nil, 500, disclient.CodeSystemError); !strings.Contains(msg, path) {
		t.Errorf("read from TRIM_HORIZON: %s, want the damaged file named", msg)
	}
	for i := int64(2); i < 12; i++ {
		if data, status, body := e.readSeq("s", 0, i); data != fmt.Sprint(i, payload) {
			t.Errorf("record %d: status %d %s", i, status, body)
		}
	}
}

// A failed directory fsync when a segment rolls stops writes (and so
// readiness) instead of failing every later roll; the file it left is
// recovered at the next open, and nothing acknowledged is lost.
func TestRollFailureStopsWrites(t *testing.T) {
	mem := logfs.NewMemFS()
	e := &env{tb: t, dir: t.TempDir(), clock: newFakeClock(), sync: SyncAlways, logFS: mem, segmentBytes: 4096}
	e.open()
	t.Cleanup(e.close)
	e.createStream("s", 1)
	var failing atomic.Bool
	failing.Store(true)
	mem.Inject(func(op logfs.Op, _ string) error {
		if failing.Load() && op == logfs.OpSyncDir {
			return errors.New("injected EIO")
		}
		return nil
	})
	payload := strings.Repeat("x", 1000)
	var acked []string
	for i := 0; ; i++ {
		v := fmt.Sprint(i, payload)
		status, _ := e.do("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "s",
			Records: []disclient.PutRecordsEntry{{Data: []byte(v), PartitionID: "0"}}})
		if status != 200 {
			break
		}
		acked = append(acked, v)
		if i == 20 {
			t.Fatal("no roll failed")
		}
	}
	if e.srv.WritesStopped() == nil {
		t.Fatal("writes not stopped after a failed roll")
	}
	e.fails("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "s",
		Records: []disclient.PutRecordsEntry{{Data: []byte("after"), PartitionID: "0"}}}, 500, disclient.CodeSystemError)
	failing.Store(false)
	e.reopen()
	if got := payloads(e.readAll("s", 0)); strings.Join(got, ",") != strings.Join(acked, ",") {
		t.Fatalf("after restart %d records, want the %d acknowledged", len(got), len(acked))
	}
	e.putTo("s", 0, "next", "and", "more", payload, payload, payload, payload, payload)
}

// A write that fails and whose cleanup truncate fails too stops writes:
// its frames stay in the log with sequence numbers the next write would
// reuse. The next open cuts them.
func TestFailedWriteCleanupStopsWrites(t *testing.T) {
	mem := logfs.NewMemFS()
	e := &env{tb: t, dir: t.TempDir(), clock: newFakeClock(), sync: SyncAlways, logFS: mem, segmentBytes: 1 << 30}
	e.open()
	t.Cleanup(e.close)
	e.createStream("s", 1)
	e.putTo("s", 0, "acked")
	var failing atomic.Bool
	failing.Store(true)
	mem.Inject(func(op logfs.Op, name string) error {
		if failing.Load() && strings.HasSuffix(name, ".log") && (op == logfs.OpWrite || op == logfs.OpTruncate) {
			return errors.New("injected EIO")
		}
		return nil
	})
	e.fails("POST", v2("/records"), disclient.PutRecordsRequest{StreamName: "s",
		Records: []disclient.PutRecordsEntry{{Data: []byte("failed"), PartitionID: "0"}}}, 500, disclient.CodeSystemError)
	failing.Store(false)
	if e.srv.WritesStopped() == nil {
		t.Fatal("writes not stopped after a failed write left its frames")
	}
	e.reopen()
	if got := payloads(e.readAll("s", 0)); len(got) != 1 || got[0] != "acked" {
		t.Fatalf("after restart: %q, want only the acknowledged record", got)
	}
	if got := e.putTo("s", 0, "next"); got[0] != "1" {
		t.Errorf("next sequence number %s, want 1", got[0])
	}
}
