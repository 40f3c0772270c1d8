package recordlog

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// Sync fsyncs the active segment holding syncMu and not mu, so appends go
// on during a group commit's fsync, and Append calls index holding mu
// (docs/design.md §11). The fault hook of the in-memory file system looks
// at both locks as the fsync begins.
func TestSyncFsyncsOutsideTheLogLock(t *testing.T) {
	mem := logfs.NewMemFS()
	l, _, _, err := Open(Options{FS: mem, Dir: "/log", SegmentBytes: 1 << 20, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()

	var watching atomic.Bool
	var fsyncs atomic.Int32
	mem.Inject(func(op logfs.Op, name string) error {
		if !watching.Load() || op != logfs.OpSync || !strings.HasSuffix(name, ".log") {
			return nil
		}
		fsyncs.Add(1)
		if l.mu.TryLock() {
			l.mu.Unlock()
		} else {
			t.Error("the group commit fsyncs holding Log.mu")
		}
		if l.syncMu.TryLock() {
			l.syncMu.Unlock()
			t.Error("the group commit fsyncs without Log.syncMu")
		}
		return nil
	})

	frames := AppendFrame(nil, 1, 0, 0, 1000, "", []byte("record"))
	seg, off, err := l.Append(frames, func(uint64, int64) error {
		if l.mu.TryLock() {
			l.mu.Unlock()
			t.Error("Append calls index without Log.mu")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	watching.Store(true)
	if err := l.Sync(seg, off+int64(len(frames))); err != nil {
		t.Fatal(err)
	}
	watching.Store(false)
	if fsyncs.Load() != 1 {
		t.Fatalf("Sync fsynced the segment %d times, want 1", fsyncs.Load())
	}
}
