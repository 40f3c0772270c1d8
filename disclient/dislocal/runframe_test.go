package dislocal

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog"
)

// runPuts writes, in one call, three records without a key to partition 0
// (a run), two to partition 1 of which one has a key (a frame each), and
// returns the timestamps given to partition 0's.
func runPuts(e *env, prefix string) []int64 {
	e.tb.Helper()
	ts := []int64{1_000_000, 1_005_000, 1_003_000}
	resp := e.put("s",
		disclient.PutRecordsEntry{Data: []byte(prefix + "-1|"), PartitionID: "0", Timestamp: &ts[0]},
		disclient.PutRecordsEntry{Data: []byte("x"), PartitionID: "1", PartitionKey: "k"},
		disclient.PutRecordsEntry{Data: []byte(prefix + "-2|"), PartitionID: "0", Timestamp: &ts[1]},
		disclient.PutRecordsEntry{Data: []byte("y"), PartitionID: "1"},
		disclient.PutRecordsEntry{Data: []byte(prefix + "-3|"), PartitionID: "0", Timestamp: &ts[2]},
	)
	if resp.FailedRecordCount != 0 {
		e.tb.Fatalf("put: %+v", resp.Records)
	}
	return ts
}

// checkRunRecords checks partition 0 and 1 as runPuts wrote them, from
// sequence number from on.
func checkRunRecords(e *env, prefix string, ts []int64) {
	e.tb.Helper()
	got := e.readAll("s", 0)
	if want := []string{prefix + "-1|", prefix + "-2|", prefix + "-3|"}; !slices.Equal(payloads(got), want) {
		e.tb.Fatalf("partition 0: %v, want %v", payloads(got), want)
	}
	for i, r := range got {
		if r.Timestamp != ts[i] || r.SequenceNumber != strconv.Itoa(i) || r.PartitionKey != "" {
			e.tb.Errorf("record %d of partition 0: %+v", i, r)
		}
	}
	p1 := e.readAll("s", 1)
	if !slices.Equal(payloads(p1), []string{"x", "y"}) || p1[0].PartitionKey != "k" {
		e.tb.Errorf("partition 1: %+v", p1)
	}
	// AT_TIMESTAMP finds the first record at or after a time by the
	// timestamps a run keeps in its head and its references.
	c := e.cursor("s", "0", disclient.CursorAtTimestamp, "timestamp", strconv.FormatInt(ts[2], 10))
	if r := e.get(c).Records; len(r) == 0 || string(r[0].Data) != prefix+"-2|" {
		e.tb.Errorf("AT_TIMESTAMP %d: %v", ts[2], payloads(r))
	}
}

// The records one call writes to a partition without keys lie back to
// back in the log, and read back with their timestamps; a partition with a
// keyed record keeps a frame per record.
func TestRunRecordsReadBack(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	ts := runPuts(e, "run")
	log, err := os.ReadFile(e.lastSegment())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("run-1|run-2|run-3|")) {
		t.Error("a run's data does not lie back to back in the log")
	}
	checkRunRecords(e, "run", ts)
	e.reopen()
	checkRunRecords(e, "run", ts)
}

// Run frames whose references pebble lost in a power loss are indexed
// again from the log, each record with its own sequence number and
// timestamp.
func TestRunFramesReindexed(t *testing.T) {
	e := newEnv(t)
	e.reopen()
	e.createStream("s", 2)
	durable := filepath.Join(t.TempDir(), "durable")
	if err := e.srv.db.Checkpoint(durable, pebble.WithFlushedWAL()); err != nil {
		t.Fatal(err)
	}
	ts := runPuts(e, "lost")
	e.close()
	if err := os.CopyFS(filepath.Join(durable, logDirName), os.DirFS(filepath.Join(e.dir, logDirName))); err != nil {
		t.Fatal(err)
	}
	e.dir = durable
	e.open()
	checkRunRecords(e, "lost", ts)
	if got := e.putTo("s", 0, "next"); got[0] != "3" {
		t.Errorf("next sequence number %s, want 3", got[0])
	}
}

// A large member's reference keeps its head whether written with the
// record or indexed again from the log.
func TestMemberHeadsKept(t *testing.T) {
	e := newEnv(t)
	e.reopen()
	e.createStream("s", 1)
	e.put("s", sizedRecords(5000, 5000)...)
	durable := filepath.Join(t.TempDir(), "durable")
	if err := e.srv.db.Checkpoint(durable, pebble.WithFlushedWAL()); err != nil {
		t.Fatal(err)
	}
	recs := sizedRecords(100, 6000, 4096)
	e.put("s", recs...)
	e.close()
	if err := os.CopyFS(filepath.Join(durable, logDirName), os.DirFS(filepath.Join(e.dir, logDirName))); err != nil {
		t.Fatal(err)
	}
	e.dir = durable
	e.open()
	skey := e.srv.streams[catalogKey(project, "s")].meta.Key
	for i, want := range [][]byte{nil, recs[1].Data[:recordlog.MemberHeadLen], nil} {
		ref, err := e.srv.recordRefAt(skey, 0, int64(2+i))
		if err != nil || !ref.Member || !bytes.Equal(ref.Head, want) {
			t.Errorf("record %d indexed again: %+v, %v; want the head %q", 2+i, ref, err, want)
		}
	}
	ref, err := e.srv.recordRefAt(skey, 0, 0)
	if err != nil || !bytes.Equal(ref.Head, sizedRecords(5000)[0].Data[:recordlog.MemberHeadLen]) {
		t.Errorf("record 0 as written: %+v, %v", ref, err)
	}
}

// A run frame cut by a power loss goes whole, as its call was never
// acknowledged; the partition goes on after the record before it.
func TestTornRunFrameDropped(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	e.putTo("s", 0, "kept")
	e.putTo("s", 0, "torn-1", "torn-2", "torn-3")
	seg := e.lastSegment()
	e.close()
	e.forgetDurable()
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	// Into the last record's data: the first two are whole on the disk.
	if err := os.Truncate(seg, st.Size()-2); err != nil {
		t.Fatal(err)
	}
	e.open()
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("after recovery: %v", got)
	}
	if got := e.putTo("s", 0, "after"); got[0] != "1" {
		t.Errorf("next sequence number %s, want 1", got[0])
	}
}

// A record of a run whose data changed on the disk is refused when read,
// not served: its reference carries its checksum.
func TestRunRecordChecksumOnRead(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	e.putTo("s", 0, "good-1|", "good-2|")
	seg := e.lastSegment()
	log, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(log, []byte("good-2|"))
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("B"), int64(at)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	q := "/records?partition-cursor=" + c
	if status, body := e.do("GET", v2("%s", q), nil); status == 200 {
		t.Errorf("a changed record was served: %s", body)
	}
}

// Records of a run read as spans (disclient.SpanGetter) lie one after the
// other in the file, so that a reader can send them in one call, and join
// their heads to the same bytes HTTP reads: heads the references keep
// (head up to recordlog.MemberHeadLen) and heads read from the log.
func TestRunRecordsAsSpans(t *testing.T) {
	e := newLogEnv(t, SyncAlways, 1<<20)
	httpc, local := e.clients(disclient.EncodingProtobuf)
	ctx := context.Background()
	e.createStream("s", 1)
	const spanMin = 4096
	recs := sizedRecords(100, spanMin, spanMin+1, 70000, 5000, 60)
	e.put("s", recs...)
	for _, head := range []int{61, recordlog.MemberHeadLen, recordlog.MemberHeadLen + 1, 1000} {
		c := e.cursor("s", "0", disclient.CursorTrimHorizon)
		hr, herr := httpc.GetRecords(ctx, c, 8<<20)
		sr, serr := local.(disclient.SpanGetter).GetRecordsSpans(ctx, c, 8<<20, head, spanMin)
		if herr != nil || serr != nil || len(sr.Records) != len(recs) || len(hr.Records) != len(recs) {
			t.Fatalf("head %d: GetRecords: HTTP %v, spans %v, %v", head, herr, sr, serr)
		}
		var prev disclient.FileSpan
		for i := range sr.Records {
			r := &sr.Records[i]
			data := len(recs[i].Data)
			spanned := r.Rest.Len > 0
			if spanned != (data > spanMin) || spanned && (len(r.Data) != head || r.Rest.Len != data-head) {
				t.Errorf("head %d, record %d of %d bytes: %d bytes and a span of %d", head, i, data, len(r.Data), r.Rest.Len)
			}
			if !spanned {
				if !bytes.Equal(r.Data, recs[i].Data) {
					t.Errorf("head %d: record %d read whole differs", head, i)
				}
				prev = disclient.FileSpan{}
				continue
			}
			w := r.Whole()
			b, err := w.AppendTo(nil)
			if err != nil || !bytes.Equal(b, recs[i].Data) || !bytes.Equal(b, hr.Records[i].Data) ||
				!bytes.Equal(r.Data, recs[i].Data[:head]) {
				t.Errorf("head %d, record %d: its range reads %d bytes, %v", head, i, len(b), err)
			}
			if prev.Len > 0 && (prev.File != w.File || prev.Off+int64(prev.Len) != w.Off) {
				t.Errorf("head %d: record %d starts at %d, not where record %d ends (%d)", head, i, w.Off, i-1, prev.Off+int64(prev.Len))
			}
			prev = w
		}
	}
}

// A directory of format 3 (no run frames) opens as it is and is marked
// with the current format before anything is appended, so that a version
// that reads only format 3 refuses it from then on.
func TestFormatThreeMarked(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	e.putTo("s", 0, "a")
	if err := e.srv.db.Set(formatKey, binary.BigEndian.AppendUint64(nil, 3), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	v, closer, err := e.srv.db.Get(formatKey)
	if err != nil {
		t.Fatal(err)
	}
	got := binary.BigEndian.Uint64(v)
	_ = closer.Close()
	if got != dataFormat {
		t.Errorf("format %d after opening, want %d", got, dataFormat)
	}
	e.putTo("s", 0, "b", "c")
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("records: %v", got)
	}
}
