package dislocal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rs/zerolog"
)

// waitSpare waits until the record log has a spare segment ready.
func (e *env) waitSpare() {
	e.tb.Helper()
	waitLogSpare(e.tb, e.srv.records)
}

// waitLogSpare waits until l has a spare segment ready.
func waitLogSpare(tb testing.TB, l *recordLog) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		ready := l.spare != nil
		l.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("no spare segment prepared in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// takesODirect reports whether the file system of the test's temporary
// directories takes O_DIRECT, as spares are written with where it does.
func takesODirect(tb testing.TB) bool {
	tb.Helper()
	probe, direct, err := createSpareFile(filepath.Join(tb.TempDir(), "probe"))
	if err != nil {
		tb.Fatal(err)
	}
	_ = probe.Close()
	return direct
}

// segmentSizes maps every file in the record log directory to its size.
func (e *env) segmentSizes() map[string]int64 {
	e.tb.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dir, logDirName))
	if err != nil {
		e.tb.Fatal(err)
	}
	sizes := make(map[string]int64)
	for _, ent := range entries {
		fi, err := ent.Info()
		if err != nil {
			e.tb.Fatal(err)
		}
		sizes[ent.Name()] = fi.Size()
	}
	return sizes
}

// With SyncAlways the segment a roll starts is the spare prepared while
// the one before filled: a file of segmentBytes zeros, renamed into place,
// which the records overwrite. A segment not made from one rolls as soon
// as a spare is ready. Reads, a clean close (which cuts it to its
// frames) and a crash with its zeros still in place (open finds where the
// frames end) all give back exactly the records written.
func TestRecordLogRollsOntoSpare(t *testing.T) {
	e := newLogEnv(t, SyncAlways, 4096)
	e.createStream("s", 1)
	payload := strings.Repeat("x", 1000)
	var want []string
	put := func(n int) {
		for range n {
			v := fmt.Sprint(len(want), payload)
			e.putTo("s", 0, v)
			want = append(want, v)
		}
	}
	put(1)
	e.waitSpare()
	if size := e.segmentSizes()[spareName]; size != 4096 {
		t.Fatalf("spare file holds %d bytes, want the segment size 4096", size)
	}
	first := e.srv.records.activeSegment()
	// The segment open started was not made from a spare: the next append
	// rolls onto the spare now ready, though the segment is far from full.
	put(2)
	l := e.srv.records
	l.mu.Lock()
	active, filled, written := l.activeID, l.filled, l.size
	l.mu.Unlock()
	if active == first || !filled {
		t.Fatalf("active segment %d (filled %v) after the roll from %d, want a new one made from the spare", active, filled, first)
	}
	sizes := e.segmentSizes()
	if got := sizes[filepath.Base(l.segmentPath(active))]; got != 4096 || written >= 4096 {
		t.Fatalf("spare-made segment: file of %d bytes, %d of frames; want 4096 with fewer of frames", got, written)
	}
	if got := sizes[filepath.Base(l.segmentPath(first))]; got >= 4096 {
		t.Errorf("rolled segment %d is %d bytes; want it cut to its frames", first, got)
	}
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, want) {
		t.Fatalf("read back %d records, want %d", len(got), len(want))
	}

	// A crash: the log as it is on disk, zeros after the active segment's
	// frames; pebble as of now.
	crashed := filepath.Join(t.TempDir(), "crashed")
	if err := e.srv.db.Checkpoint(crashed, pebble.WithFlushedWAL()); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(crashed, logDirName), os.DirFS(filepath.Join(e.dir, logDirName))); err != nil {
		t.Fatal(err)
	}

	// A clean close leaves whole frames only and no spare.
	e.close()
	for name, size := range e.segmentSizes() {
		if name == spareName {
			t.Errorf("spare left after close")
			continue
		}
		f, err := os.Open(filepath.Join(e.dir, logDirName, name))
		if err != nil {
			t.Fatal(err)
		}
		valid, err := validLength(f)
		_ = f.Close()
		if err != nil || valid != size {
			t.Errorf("segment %s after close: %d bytes, %d of whole frames (%v)", name, size, valid, err)
		}
	}

	e.dir = crashed
	e.open()
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, want) {
		t.Fatalf("after the crash read back %d records, want %d", len(got), len(want))
	}
	if got := e.putTo("s", 0, "next"); got[0] != fmt.Sprint(len(want)) {
		t.Errorf("after the crash the next sequence number is %s, want %d", got[0], len(want))
	}
}

// A spare left by a crash, whatever it holds, is deleted at open and never
// read as a segment; without SyncAlways no spare is made.
func TestRecordLogSpareLeftoverAndSyncNone(t *testing.T) {
	e := newLogEnv(t, SyncNone, 4096)
	e.createStream("s", 1)
	e.putTo("s", 0, "a")
	e.close()
	leftover := filepath.Join(e.dir, logDirName, spareName)
	if err := os.WriteFile(leftover, appendFrame(nil, 1, 0, 1, 1, "", []byte("stray")), 0o600); err != nil {
		t.Fatal(err)
	}
	e.open()
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover spare still there after open: %v", err)
	}
	payload := strings.Repeat("y", 1000)
	for range 12 {
		e.putTo("s", 0, payload)
	}
	if got := len(e.readAll("s", 0)); got != 13 {
		t.Errorf("read back %d records, want 13", got)
	}
	time.Sleep(50 * time.Millisecond)
	if _, ok := e.segmentSizes()[spareName]; ok {
		t.Error("a spare was made with SyncNone")
	}
	l := e.srv.records
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.filled || l.preparing {
		t.Errorf("SyncNone log: filled %v, preparing %v", l.filled, l.preparing)
	}
}

// Closing the store while a spare is being prepared stops the preparation
// and deletes the partial spare: nothing of it is left to be taken for
// data, and close does not wait for a whole segment of zeros.
func TestRecordLogCloseAbandonsSpare(t *testing.T) {
	e := newLogEnv(t, SyncAlways, 1<<30)
	e.createStream("s", 1)
	e.putTo("s", 0, "a")
	l := e.srv.records
	l.mu.Lock()
	preparing := l.preparing
	l.mu.Unlock()
	if !preparing {
		t.Fatal("no spare being prepared for a 1 GiB segment right after open")
	}
	e.close()
	if size, ok := e.segmentSizes()[spareName]; ok {
		t.Errorf("partial spare of %d bytes left after close", size)
	}
	e.open()
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after reopening: %v", got)
	}
}

// Large appends to a segment made from a spare written with O_DIRECT are
// written with O_DIRECT too, small ones through the page cache, each
// rewriting the segment's last partial page in front of its frames. Frames of every size, from a few bytes to several
// pages, some of them taken back because indexing them failed, read back
// exactly while the log is open and after it is closed and opened again;
// each segment is cut to its frames.
func TestRecordLogDirectAppends(t *testing.T) {
	direct := takesODirect(t)
	dir := t.TempDir()
	const segmentBytes = 8 << 20
	l, _, _, err := openRecordLog(dir, segmentBytes, true, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.close() }()
	type written struct {
		ref   recordRef
		frame []byte
	}
	var all []written
	errIndex := errors.New("index failed")
	sawDirect := false
	sizes := []int{1, 100, 4000, directMin, 4096, 5000, 9000, 30, 4067, directMin + 4000, 12000, stageKeep + 1000, 700}
	for i := range 120 {
		data := bytes.Repeat([]byte{byte('a' + i%26)}, sizes[i%len(sizes)])
		frame := appendFrame(nil, 1, 0, int64(len(all)), int64(i), "", data)
		fail := i%10 == 9
		seg, off, err := l.append(frame, func(uint64, int64) error {
			if fail {
				return errIndex
			}
			return nil
		})
		if fail {
			if !errors.Is(err, errIndex) {
				t.Fatalf("append %d: %v, want the index failure", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		l.mu.Lock()
		sawDirect = sawDirect || l.direct != nil
		filled := l.filled
		l.mu.Unlock()
		if end := off + int64(len(frame)); filled && end%pageBytes != 0 {
			// Zeros, not stale bytes, follow the frames to the page's end:
			// after a crash the scan for the frames' end stops there.
			rest := make([]byte, pageBytes-end%pageBytes)
			if _, err := l.segmentFile(seg).ReadAt(rest, end); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rest, make([]byte, len(rest))) {
				t.Fatalf("append %d: bytes other than zeros follow the frames in their page", i)
			}
		}
		if err := l.sync(seg, off+int64(len(frame))); err != nil {
			t.Fatal(err)
		}
		all = append(all, written{recordRef{seg: seg, off: off, n: uint32(len(frame))}, frame})
		if i == 0 {
			// The first segment is not made from a spare: let one be
			// ready for the next append to roll onto.
			waitLogSpare(t, l)
		}
	}
	if direct && !sawDirect {
		t.Fatal("the file system takes O_DIRECT, yet no append went through it")
	}
	check := func(l *recordLog, when string) {
		t.Helper()
		r := &logReader{log: l}
		for i, w := range all {
			buf := make([]byte, w.ref.n)
			if _, err := r.readAt(buf, w.ref); err != nil {
				t.Fatalf("%s: frame %d: %v", when, i, err)
			}
			if !bytes.Equal(buf, w.frame) {
				t.Fatalf("%s: frame %d at segment %d offset %d differs from what was appended", when, i, w.ref.seg, w.ref.off)
			}
		}
	}
	check(l, "open")
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	l, _, _, err = openRecordLog(dir, segmentBytes, true, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	check(l, "reopened")
	for _, id := range l.segments() {
		f := l.segmentFile(id)
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if valid, err := validLength(f); err != nil || valid != st.Size() {
			t.Errorf("segment %d: %d bytes, %d of whole frames (%v)", id, st.Size(), valid, err)
		}
	}
}

// How a spare is zeroed: at the disk's speed while the log is idle,
// whatever the active segment holds; while appends come, in small chunks
// spaced to spareBusyRate and only until it is half as much again and
// spareLead ahead of the active segment.
func TestSpareStep(t *testing.T) {
	const size = 256 << 20
	busyWait := time.Duration(spareBusyChunk) * time.Second / spareBusyRate
	for _, c := range []struct {
		name         string
		idle         bool
		done, active int64
		chunk        int64
		after        time.Duration
	}{
		{"idle, just started", true, 0, 0, spareChunk, 0},
		{"idle, far ahead of an empty segment", true, 200 << 20, 0, spareChunk, 0},
		{"busy, behind", false, 0, 0, spareBusyChunk, busyWait},
		{"busy, just short of the lead", false, spareLead - 1, 0, spareBusyChunk, busyWait},
		{"busy, at the lead", false, spareLead, 0, 0, 0},
		{"busy, ahead of a segment of 100 MiB", false, 160 << 20, 100 << 20, 0, 0},
		{"busy, behind a segment of 100 MiB", false, 150 << 20, 100 << 20, spareBusyChunk, busyWait},
		{"busy, segment nearly full, spare not done", false, size - 1, 250 << 20, spareBusyChunk, busyWait},
	} {
		chunk, after := spareStep(c.idle, c.done, size, c.active)
		if chunk != c.chunk || after != c.after {
			t.Errorf("%s: %d zeros then a wait of %v, want %d then %v", c.name, chunk, after, c.chunk, c.after)
		}
	}
	if busyWait < 4*time.Millisecond {
		t.Errorf("zeros written while appends come are spaced %v apart, want them at most %d bytes a second", busyWait, spareBusyRate)
	}
}

// A log that has taken a quarter of a segment and takes no more appends
// zeroes its whole spare, however far that is ahead of the active segment:
// a burst of appends after a pause then lands on blocks written before,
// with no zeros competing for the disk. One that has taken less keeps to
// the pace of its appends, so that a server that takes little writes no
// whole segment of zeros.
func TestRecordLogIdleFinishesSpare(t *testing.T) {
	const segmentBytes = 64 << 20
	l, _, _, err := openRecordLog(t.TempDir(), segmentBytes, true, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.close() }()
	appendFrames := func(n, size int) {
		t.Helper()
		for range n {
			frame := appendFrame(nil, 1, 0, 0, 1, "", bytes.Repeat([]byte{'a'}, size))
			seg, off, err := l.append(frame, func(uint64, int64) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if err := l.sync(seg, off+int64(len(frame))); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendFrames(1, 100)
	time.Sleep(500 * time.Millisecond)
	fi, err := os.Stat(l.sparePath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > spareLead+spareChunk {
		t.Fatalf("after one small append and a pause the spare holds %d bytes of zeros, want at most %d", fi.Size(), spareLead+spareChunk)
	}
	appendFrames(segmentBytes/spareIdleShare>>20, 1<<20)
	// 1.5 times the active segment and spareLead ahead, a busy log's
	// spare would wait for the segment to grow; an idle one's is ready.
	waitLogSpare(t, l)
	if fi, err = os.Stat(l.sparePath()); err != nil {
		t.Fatal(err)
	}
	if fi.Size() != segmentBytes {
		t.Errorf("spare of %d bytes, want %d", fi.Size(), segmentBytes)
	}
}
