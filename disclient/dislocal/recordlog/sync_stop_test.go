package recordlog

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// A group commit whose fsync succeeds after the log stopped meanwhile (a
// roll or a cut failed on the same file, and Linux reports a write-back
// error to one fsync only) tells its writers the stop, not success, and
// leaves the failed marker and the durable position as the stop left them.
func TestSyncAfterAConcurrentStopFails(t *testing.T) {
	mem := logfs.NewMemFS()
	l, _, _, err := Open(Options{FS: mem, Dir: "/log", SegmentBytes: 1 << 20, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	frames := AppendFrame(nil, 1, 0, 0, 1000, "", []byte("record"))
	seg, off, err := l.Append(frames, func(uint64, int64) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	before := *l.synced.Load()
	stop := errors.New("a roll's fsync failed")
	var stopped atomic.Bool
	mem.Inject(func(op logfs.Op, name string) error {
		if op == logfs.OpSync && strings.HasSuffix(name, ".log") && !stopped.Swap(true) {
			// The stop takes mu during this fsync; it writes its
			// marker through the file system once the fsync is done.
			locked := make(chan struct{})
			go func() {
				l.mu.Lock()
				close(locked)
				l.stopLocked(stop, before.end)
				l.mu.Unlock()
			}()
			<-locked
		}
		return nil
	})
	if err := l.Sync(seg, off+int64(len(frames))); !errors.Is(err, stop) {
		t.Fatalf("Sync after a concurrent stop: %v, want the stop", err)
	}
	if after := *l.synced.Load(); after != before {
		t.Fatalf("durable position moved from %+v to %+v after the log stopped", before, after)
	}
}
