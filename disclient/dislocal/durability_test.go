package dislocal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/disgw/disgw/disclient"
)

func TestRestartDurability(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t)
			e.sync = mode
			e.reopen()
			e.must("POST", v2("/streams"), disclient.CreateStreamRequest{
				StreamName: "s", PartitionCount: 3, DataDuration: i32(48), Tags: []disclient.Tag{{Key: "k", Value: "v"}},
			}, 201, nil)
			e.must("PUT", v2("/streams/s"), disclient.UpdatePartitionCountRequest{StreamName: "s", TargetPartitionCount: 4}, 200, nil)
			e.must("POST", "/v2/other/streams", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1}, 201, nil)
			for i := range 20 {
				e.put("s",
					disclient.PutRecordsEntry{Data: fmt.Appendf(nil, "r%d", i), PartitionKey: fmt.Sprint(i), PartitionID: fmt.Sprint(i % 3)},
					disclient.PutRecordsEntry{Data: fmt.Appendf(nil, "t%d", i), PartitionID: "3", Timestamp: i64(int64(1000 + i))},
				)
			}
			e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g"}, 201, nil)
			e.commit("g", "s", "3", "12", "meta")

			before := e.describe("s", "")
			var beforeRecords [4][]disclient.Record
			for n := range int32(4) {
				beforeRecords[n] = e.readAll("s", n)
			}
			var beforeApp disclient.App
			e.must("GET", v2("/apps/g"), nil, 200, &beforeApp)

			e.reopen()

			if after := e.describe("s", ""); !reflect.DeepEqual(after, before) {
				t.Errorf("describe after restart:\n%+v\nbefore:\n%+v", after, before)
			}
			for n := range int32(4) {
				if got := e.readAll("s", n); !reflect.DeepEqual(got, beforeRecords[n]) {
					t.Errorf("partition %d after restart: %v, before %v", n, payloads(got), payloads(beforeRecords[n]))
				}
			}
			var afterApp disclient.App
			e.must("GET", v2("/apps/g"), nil, 200, &afterApp)
			if !reflect.DeepEqual(afterApp, beforeApp) {
				t.Errorf("app after restart %+v, before %+v", afterApp, beforeApp)
			}
			if cp := e.checkpoint("g", "s", "3"); cp.SequenceNumber != "12" || cp.Metadata != "meta" {
				t.Errorf("checkpoint after restart = %+v", cp)
			}
			if got := e.putTo("s", 3, "next"); got[0] != "20" {
				t.Errorf("sequence numbers restart at %s, want 20", got[0])
			}
			c := e.cursor("s", "3", disclient.CursorAtTimestamp, "timestamp", "1010")
			if r := e.get(c, "limit", "1"); r.Records[0].SequenceNumber != "10" {
				t.Errorf("timestamp index after restart: AT_TIMESTAMP 1010 starts at %s", r.Records[0].SequenceNumber)
			}
			// A stream created after the restart gets a fresh key: it must not
			// see the records of an older stream.
			e.createStream("s2", 4)
			for n := range int32(4) {
				if got := e.readAll("s2", n); len(got) != 0 {
					t.Errorf("new stream s2 partition %d has records %v", n, payloads(got))
				}
			}
			var other disclient.ListStreamsResponse
			e.must("GET", "/v2/other/streams", nil, 200, &other)
			if !slices.Equal(other.StreamNames, []string{"s"}) {
				t.Errorf("other project after restart = %v", other.StreamNames)
			}
		})
	}
}

const crashDirEnv = "DISLOCAL_CRASH_CHILD_DIR"

// TestCrashChild is the server process that TestCrashDurability kills. It
// only runs when that test starts it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestCrashDurability")
	}
	// Small segments, so that the writes roll the record log many times
	// before the kill and recovery scans several segments.
	srv, err := Open(Config{Dir: dir, Sync: SyncAlways, segmentBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	t.Fatal(http.Serve(ln, srv))
}

type ackedRecord struct {
	partition int32
	seq       string
	data      string
}

// TestCrashDurability runs the server in a child process, writes to it from
// several clients, kills it with SIGKILL in the middle of the writes, and
// checks that every acknowledged record is in the reopened store.
func TestCrashDurability(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var addr string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatalf("child did not start: %s", stderr.String())
	}
	base := "http://" + addr + "/v2/" + project
	post := func(path string, body any) (*http.Response, error) {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		return http.Post(base+path, "application/json", bytes.NewReader(raw))
	}
	resp, err := post("/streams", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 2})
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create stream: %v %v", resp, err)
	}
	resp.Body.Close()

	const writers, recordsPerPut, acksBeforeKill = 4, 5, 120
	var (
		mu    sync.Mutex
		acked []ackedRecord
		wg    sync.WaitGroup
	)
	ackCh := make(chan struct{}, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := int32(w % 2)
			for i := 0; ; i++ {
				req := disclient.PutRecordsRequest{StreamName: "s"}
				for j := range recordsPerPut {
					req.Records = append(req.Records, disclient.PutRecordsEntry{Data: fmt.Appendf(nil, "w%d-%d-%d", w, i, j), PartitionID: fmt.Sprint(part)})
				}
				resp, err := post("/records", req)
				if err != nil {
					return // the child is gone
				}
				var out disclient.PutRecordsResponse
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || out.FailedRecordCount != 0 {
					return
				}
				mu.Lock()
				for j, r := range out.Records {
					acked = append(acked, ackedRecord{part, r.SequenceNumber, string(req.Records[j].Data)})
				}
				mu.Unlock()
				ackCh <- struct{}{}
			}
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	for n := 0; n < acksBeforeKill; n++ {
		select {
		case <-ackCh:
		case <-allDone:
			t.Fatalf("writers stopped after %d acknowledged requests: %s", n, stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	for done := false; !done; {
		select {
		case <-ackCh:
		case <-allDone:
			done = true
		}
	}
	_ = cmd.Wait()

	e := &env{tb: t, dir: dir, clock: newFakeClock(), sync: SyncAlways}
	e.open()
	defer e.close()
	if n := len(e.srv.records.Segments()); n < 3 {
		t.Errorf("%d record log segments: the writes did not roll the small segments", n)
	}
	stored := map[int32][]disclient.Record{0: e.readAll("s", 0), 1: e.readAll("s", 1)}
	for part, recs := range stored {
		for i, r := range recs {
			if r.SequenceNumber != fmt.Sprint(i) {
				t.Fatalf("partition %d: record %d has sequence number %s", part, i, r.SequenceNumber)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range acked {
		seq, err := strconv.Atoi(a.seq)
		if err != nil {
			t.Fatalf("acknowledged sequence number %q: %v", a.seq, err)
		}
		recs := stored[a.partition]
		if seq >= len(recs) || string(recs[seq].Data) != a.data {
			t.Fatalf("acknowledged record %+v lost (partition has %d records)", a, len(recs))
		}
	}
	t.Logf("%d acknowledged records survived SIGKILL; %d+%d stored", len(acked), len(stored[0]), len(stored[1]))
}
