package dislocal

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog"
	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// TestFailedFsyncStopsWrites checks that after an fsync fails, the call it
// was for fails with DIS.5000 and so does every later write, even when the
// next fsync would succeed: the kernel may have dropped the failed pages,
// and a later write acknowledged durable must not follow records that are
// gone (recordlog.Log.failed). Reopening the server writes again.
func TestFailedFsyncStopsWrites(t *testing.T) {
	mem := logfs.NewMemFS()
	e := &env{tb: t, dir: t.TempDir(), clock: newFakeClock(), sync: SyncAlways, logFS: mem}
	e.open()
	t.Cleanup(e.close)
	e.createStream("s", 1)
	_, local := e.clients(disclient.EncodingProtobuf)
	ctx := context.Background()
	put := func(data string) error {
		_, err := local.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "s",
			Records: []disclient.PutRecordsEntry{{Data: []byte(data), PartitionID: disclient.PartitionID(0)}}})
		return err
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.WritesStopped(); err != nil {
		t.Fatalf("WritesStopped before any failure = %v", err)
	}
	failures := 0
	mem.Inject(func(op logfs.Op, name string) error {
		if op == logfs.OpSync && strings.HasSuffix(name, ".log") && failures == 0 {
			failures++
			return errors.New("injected EIO")
		}
		return nil
	})
	for _, data := range []string{"failed", "after"} {
		err := put(data)
		if !disclient.IsCode(err, disclient.CodeSystemError) {
			t.Fatalf("put(%q) = %v, want %s", data, err, disclient.CodeSystemError)
		}
	}
	if failures != 1 {
		t.Fatalf("%d fsyncs failed, want the one", failures)
	}
	if err := e.srv.WritesStopped(); !errors.Is(err, recordlog.ErrStopped) {
		t.Fatalf("WritesStopped after the failure = %v, want %v", err, recordlog.ErrStopped)
	}
	e.reopen()
	if err := e.srv.WritesStopped(); err != nil {
		t.Fatalf("WritesStopped after reopening = %v", err)
	}
	_, local = e.clients(disclient.EncodingProtobuf)
	if err := put("reopened"); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
}
