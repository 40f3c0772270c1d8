package dislocal

import (
	"strings"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
)

// newQuotaEnv is a server enforcing quotas in mode.
func newQuotaEnv(t *testing.T, mode QuotaMode) *env {
	t.Helper()
	e := newEnv(t)
	e.quotas = mode
	e.reopen()
	return e
}

// recordsTo builds count records of size bytes for one partition.
func recordsTo(part int32, count, size int) []disclient.PutRecordsEntry {
	recs := make([]disclient.PutRecordsEntry, count)
	for i := range recs {
		recs[i] = disclient.PutRecordsEntry{Data: []byte(strings.Repeat("x", size)), PartitionID: disclient.PartitionID(part)}
	}
	return recs
}

// outcome is per record "ok" or the error code of its result.
func outcome(t *testing.T, resp disclient.PutRecordsResponse) []string {
	t.Helper()
	out := make([]string, len(resp.Records))
	failed := int32(0)
	for i, r := range resp.Records {
		switch {
		case r.ErrorCode == "":
			if r.SequenceNumber == "" || r.PartitionID == "" {
				t.Fatalf("record %d: success without sequence number or partition: %+v", i, r)
			}
			out[i] = "ok"
		default:
			if r.PartitionID != "" || r.SequenceNumber != "" || r.ErrorMessage == "" {
				t.Fatalf("record %d: failed entry %+v must carry a message and no partition_id or sequence number", i, r)
			}
			out[i] = r.ErrorCode
			failed++
		}
	}
	if failed != resp.FailedRecordCount {
		t.Fatalf("failed_record_count %d, %d results failed", resp.FailedRecordCount, failed)
	}
	return out
}

// countOK counts the records of an outcome that were written.
func countOK(out []string) int {
	n := 0
	for _, o := range out {
		if o == "ok" {
			n++
		}
	}
	return n
}

func TestQuotaRecordsPerSecond(t *testing.T) {
	e := newQuotaEnv(t, QuotasCommon)
	e.createStream("s", 1)
	out := outcome(t, e.put("s", recordsTo(0, 1001, 10)...))
	if n := countOK(out); n != 1000 || out[1000] != disclient.CodeTrafficControl {
		t.Fatalf("a full COMMON bucket took %d of 1001 records (last %s), want 1000 and DIS.4303", n, out[1000])
	}
	if out := outcome(t, e.put("s", recordsTo(0, 1, 10)...)); out[0] != disclient.CodeTrafficControl {
		t.Fatalf("empty bucket, no time passed: %v, want DIS.4303", out)
	}
	e.clock.Advance(10 * time.Millisecond)
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 20, 10)...))); n != 10 {
		t.Fatalf("10 ms at 1000 records/s admitted %d records, want 10", n)
	}
	// The bucket holds one second at most, however long it rests.
	e.clock.Advance(time.Hour)
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 1500, 10)...))); n != 1000 {
		t.Fatalf("after an hour idle %d records admitted, want a burst of 1000", n)
	}
}

func TestQuotaBytesIn(t *testing.T) {
	e := newQuotaEnv(t, QuotasCommon)
	e.createStream("s", 1)
	const size = 100 << 10
	out := outcome(t, e.put("s", recordsTo(0, 11, size)...))
	if n := countOK(out); n != 10 {
		t.Fatalf("1 MiB/s bucket took %d records of 100 KiB, want 10: %v", n, out)
	}
	// Half a second earns 512 KiB: five more records.
	e.clock.Advance(500 * time.Millisecond)
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 8, size)...))); n != 5 {
		t.Fatalf("half a second admitted %d records of 100 KiB, want 5", n)
	}
	// The largest record DIS takes always fits a full bucket.
	e.clock.Advance(time.Second)
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 1, maxRecordBytes)...))); n != 1 {
		t.Fatal("a 1 MiB record was refused by a full 1 MiB/s bucket")
	}
}

func TestQuotaRestOfCallRefused(t *testing.T) {
	e := newQuotaEnv(t, QuotasCommon)
	e.createStream("s", 1)
	// Leave 1 MiB - 1000 KiB = 24 KiB in the bytes bucket.
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 10, 100<<10)...))); n != 10 {
		t.Fatalf("setup: %d written", n)
	}
	// The 100 KiB record does not fit; the 1 KiB ones after it would, but a
	// partition must not store them without it.
	recs := append(recordsTo(0, 1, 1<<10), recordsTo(0, 1, 100<<10)...)
	recs = append(recs, recordsTo(0, 3, 1<<10)...)
	out := outcome(t, e.put("s", recs...))
	want := []string{"ok", disclient.CodeTrafficControl, disclient.CodeTrafficControl, disclient.CodeTrafficControl, disclient.CodeTrafficControl}
	if strings.Join(out, ",") != strings.Join(want, ",") {
		t.Fatalf("outcome %v, want %v", out, want)
	}
	// The refused records took no tokens: 23 KiB are still there.
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 23, 1<<10)...))); n != 23 {
		t.Fatalf("refused records used up the bucket: %d of 23 written", n)
	}
	if got := len(e.readAll("s", 0)); got != 10+1+23 {
		t.Fatalf("partition holds %d records, want 34", got)
	}
}

func TestQuotaPartitionsIndependent(t *testing.T) {
	e := newQuotaEnv(t, QuotasCommon)
	e.createStream("s", 2)
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 1000, 10)...))); n != 1000 {
		t.Fatalf("setup: %d written", n)
	}
	// Interleaved: partition 0 is throttled throughout, partition 1 not at
	// all.
	var recs []disclient.PutRecordsEntry
	for range 500 {
		recs = append(recs, recordsTo(0, 1, 10)...)
		recs = append(recs, recordsTo(1, 1, 10)...)
	}
	out := outcome(t, e.put("s", recs...))
	for i, o := range out {
		want := "ok"
		if i%2 == 0 {
			want = disclient.CodeTrafficControl
		}
		if o != want {
			t.Fatalf("record %d (partition %d): %s, want %s", i, i%2, o, want)
		}
	}
}

func TestQuotaStreamTypes(t *testing.T) {
	e := newQuotaEnv(t, QuotasCommon)
	e.createStream("common", 1)
	e.must("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: "adv", PartitionCount: 1, StreamType: disclient.StreamTypeAdvanced}, 201, nil)
	if got := e.describe("common", "").StreamType; got != disclient.StreamTypeCommon {
		t.Fatalf("stream created without a type under common quotas is %s", got)
	}
	if n := countOK(outcome(t, e.put("adv", recordsTo(0, 2500, 10)...))); n != 2000 {
		t.Fatalf("ADVANCED partition took %d records in its first second, want 2000", n)
	}
	// 5 MiB/s in.
	e.clock.Advance(time.Second)
	if n := countOK(outcome(t, e.put("adv", recordsTo(0, 60, 100<<10)...))); n != 51 {
		t.Fatalf("ADVANCED partition took %d records of 100 KiB, want 51", n)
	}

	a := newQuotaEnv(t, QuotasAdvanced)
	a.createStream("s", 1)
	if got := a.describe("s", "").StreamType; got != disclient.StreamTypeAdvanced {
		t.Fatalf("stream created without a type under advanced quotas is %s", got)
	}
	if n := countOK(outcome(t, a.put("s", recordsTo(0, 2001, 10)...))); n != 2000 {
		t.Fatalf("default-typed stream under advanced quotas took %d records, want 2000", n)
	}
	a.must("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: "c", PartitionCount: 1, StreamType: disclient.StreamTypeCommon}, 201, nil)
	if n := countOK(outcome(t, a.put("c", recordsTo(0, 1001, 10)...))); n != 1000 {
		t.Fatalf("COMMON stream under advanced quotas took %d records, want 1000", n)
	}
}

func TestQuotaNone(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 5000, 10)...))); n != 5000 {
		t.Fatalf("without quotas %d of 5000 records written", n)
	}
	if n := countOK(outcome(t, e.put("s", recordsTo(0, 12, 100<<10)...))); n != 12 {
		t.Fatalf("without quotas %d of 12 records of 100 KiB written", n)
	}
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	for range 5 {
		e.get(c, "max_fetch_bytes", "4194304")
	}
	if _, err := ParseQuotaMode("bogus"); err == nil {
		t.Fatal("ParseQuotaMode accepted bogus")
	}
}

func TestQuotaBytesOut(t *testing.T) {
	e := newQuotaEnv(t, QuotasCommon)
	e.createStream("s", 1)
	for range 3 {
		e.putTo("s", 0, strings.Repeat("y", 900<<10))
		e.clock.Advance(time.Second)
	}
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	// The first answer is admitted with a full 2 MiB bucket and leaves it
	// in debt (about 3.5 MiB once base64 encoded).
	first := e.get(c)
	if len(first.Records) != 3 {
		t.Fatalf("first read returned %d records, want 3", len(first.Records))
	}
	msg := e.fails("GET", v2("/records?partition-cursor=%s", c), nil, 400, disclient.CodeTrafficControl)
	if !strings.Contains(msg, "shardId-0000000000") {
		t.Fatalf("throttled read message %q does not name the partition", msg)
	}
	// The debt is paid back at 2 MiB/s.
	e.clock.Advance(500 * time.Millisecond)
	e.fails("GET", v2("/records?partition-cursor=%s", c), nil, 400, disclient.CodeTrafficControl)
	e.clock.Advance(2 * time.Second)
	if again := e.get(c); len(again.Records) != 3 {
		t.Fatalf("read after the debt was paid returned %d records", len(again.Records))
	}
}
