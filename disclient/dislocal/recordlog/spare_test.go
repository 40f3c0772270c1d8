package recordlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// waitLogSpare waits until l has a spare segment ready.
func waitLogSpare(tb testing.TB, l *Log) {
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
	l := &Log{fs: logfs.OS, dir: tb.TempDir()}
	probe, direct, err := l.createSpareFile()
	if err != nil {
		tb.Fatal(err)
	}
	_ = probe.Close()
	return direct
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
	l, _, _, err := Open(Options{Dir: dir, SegmentBytes: segmentBytes, Spares: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	type written struct {
		ref   Ref
		frame []byte
	}
	var all []written
	errIndex := errors.New("index failed")
	sawDirect := false
	sizes := []int{1, 100, 4000, directMin, 4096, 5000, 9000, 30, 4067, directMin + 4000, 12000, stageKeep + 1000, 700}
	for i := range 120 {
		data := bytes.Repeat([]byte{byte('a' + i%26)}, sizes[i%len(sizes)])
		frame := AppendFrame(nil, 1, 0, int64(len(all)), int64(i), "", data)
		fail := i%10 == 9
		seg, off, err := l.Append(frame, func(uint64, int64) error {
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
		if err := l.Sync(seg, off+int64(len(frame))); err != nil {
			t.Fatal(err)
		}
		all = append(all, written{Ref{Seg: seg, Off: off, N: uint32(len(frame))}, frame})
		if i == 0 {
			// The first segment is not made from a spare: let one be
			// ready for the next append to roll onto.
			waitLogSpare(t, l)
		}
	}
	if direct && !sawDirect {
		t.Fatal("the file system takes O_DIRECT, yet no append went through it")
	}
	check := func(l *Log, when string) {
		t.Helper()
		r := &Reader{Log: l}
		for i, w := range all {
			buf := make([]byte, w.ref.N)
			if _, err := r.readAt(buf, w.ref); err != nil {
				t.Fatalf("%s: frame %d: %v", when, i, err)
			}
			if !bytes.Equal(buf, w.frame) {
				t.Fatalf("%s: frame %d at segment %d offset %d differs from what was appended", when, i, w.ref.Seg, w.ref.Off)
			}
		}
	}
	check(l, "open")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _, _, err = Open(Options{Dir: dir, SegmentBytes: segmentBytes, Spares: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	check(l, "reopened")
	for _, id := range l.Segments() {
		f := l.segmentFile(id)
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if valid, err := scanSegment(f, 0, st.Size(), nil, func(int64, int64) {}); err != nil || valid != st.Size() {
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
	l, _, _, err := Open(Options{Dir: t.TempDir(), SegmentBytes: segmentBytes, Spares: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	appendFrames := func(n, size int) {
		t.Helper()
		for range n {
			frame := AppendFrame(nil, 1, 0, 0, 1, "", bytes.Repeat([]byte{'a'}, size))
			seg, off, err := l.Append(frame, func(uint64, int64) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(seg, off+int64(len(frame))); err != nil {
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

// appendSynced appends frames one at a time, each made durable, and
// returns them.
func appendSynced(tb testing.TB, l *Log, frames ...[]byte) {
	tb.Helper()
	for _, f := range frames {
		seg, off, err := l.Append(f, func(uint64, int64) error { return nil })
		if err == nil {
			err = l.Sync(seg, off+int64(len(f)))
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// scanAll is every frame the log holds, in order.
func scanAll(tb testing.TB, l *Log) [][]byte {
	tb.Helper()
	var frames [][]byte
	for _, id := range l.Segments() {
		f := l.segmentFile(id)
		size, err := fileSize(f)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := scanSegment(f, 0, size, func(_ int64, b []byte) { frames = append(frames, bytes.Clone(b)) },
			func(off, end int64) { tb.Errorf("damage in segment %d at %d to %d", id, off, end) }); err != nil {
			tb.Fatal(err)
		}
	}
	return frames
}

// fileSizes maps every file in dir to its size.
func fileSizes(tb testing.TB, dir string) map[string]int64 {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	sizes := make(map[string]int64)
	for _, ent := range entries {
		fi, err := ent.Info()
		if err != nil {
			tb.Fatal(err)
		}
		sizes[ent.Name()] = fi.Size()
	}
	return sizes
}

// With spares the segment a roll starts is the spare prepared while the
// one before filled: a file of SegmentBytes zeros, renamed into place,
// which the frames overwrite. A segment not made from one rolls as soon as
// a spare is ready. A clean close cuts it to its frames, and a crash with
// its zeros still in place gives back exactly the frames written (open
// finds where they end).
func TestRecordLogRollsOntoSpare(t *testing.T) {
	dir := t.TempDir()
	l, _, _, err := Open(Options{Dir: dir, SegmentBytes: 4096, Spares: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	put := func(n int) {
		for range n {
			f := AppendFrame(nil, 1, 0, int64(len(want)), 1, "", bytes.Repeat([]byte{'x'}, 1000))
			appendSynced(t, l, f)
			want = append(want, f)
		}
	}
	put(1)
	waitLogSpare(t, l)
	if size := fileSizes(t, dir)[spareName]; size != 4096 {
		t.Fatalf("spare file holds %d bytes, want the segment size 4096", size)
	}
	first := l.ActiveSegment()
	put(2)
	l.mu.Lock()
	active, filled, written := l.activeID, l.filled, l.size
	l.mu.Unlock()
	if active == first || !filled {
		t.Fatalf("active segment %d (filled %v) after the roll from %d, want a new one made from the spare", active, filled, first)
	}
	sizes := fileSizes(t, dir)
	if got := sizes[filepath.Base(l.SegmentPath(active))]; got != 4096 || written >= 4096 {
		t.Fatalf("spare-made segment: file of %d bytes, %d of frames; want 4096 with fewer of frames", got, written)
	}
	if got := sizes[filepath.Base(l.SegmentPath(first))]; got >= 4096 {
		t.Errorf("rolled segment %d is %d bytes; want it cut to its frames", first, got)
	}
	crashed := t.TempDir()
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, crashed} {
		l, _, _, err := Open(Options{Dir: d, SegmentBytes: 4096, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if got := scanAll(t, l); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%s: %d frames, want %d", d, len(got), len(want))
		}
		for name, size := range fileSizes(t, d) {
			if name == spareName || strings.HasSuffix(name, ".log") && size%4096 == 0 && size > 0 {
				t.Errorf("%s: %s of %d bytes left", d, name, size)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A spare left by a crash, whatever it holds, is deleted at open and never
// read as a segment; without spares none is made.
func TestRecordLogSpareLeftoverAndNoSpares(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(dir, spareName)
	if err := os.WriteFile(leftover, AppendFrame(nil, 1, 0, 1, 1, "", []byte("stray")), 0o600); err != nil {
		t.Fatal(err)
	}
	l, _, _, err := Open(Options{Dir: dir, SegmentBytes: 4096, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover spare still there after open: %v", err)
	}
	for i := range 12 {
		appendSynced(t, l, AppendFrame(nil, 1, 0, int64(i), 1, "", bytes.Repeat([]byte{'y'}, 1000)))
	}
	if got := len(scanAll(t, l)); got != 12 {
		t.Errorf("read back %d frames, want 12", got)
	}
	time.Sleep(50 * time.Millisecond)
	if _, ok := fileSizes(t, dir)[spareName]; ok {
		t.Error("a spare was made without spares")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.filled || l.preparing {
		t.Errorf("log without spares: filled %v, preparing %v", l.filled, l.preparing)
	}
}

// Closing the log while a spare is being prepared stops the preparation
// and deletes the partial spare: nothing of it is left to be taken for
// data, and close does not wait for a whole segment of zeros.
func TestRecordLogCloseAbandonsSpare(t *testing.T) {
	dir := t.TempDir()
	l, _, _, err := Open(Options{Dir: dir, SegmentBytes: 1 << 30, Spares: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	frame := AppendFrame(nil, 1, 0, 0, 1, "", []byte("a"))
	appendSynced(t, l, frame)
	l.mu.Lock()
	preparing := l.preparing
	l.mu.Unlock()
	if !preparing {
		t.Fatal("no spare being prepared for a 1 GiB segment right after open")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if size, ok := fileSizes(t, dir)[spareName]; ok {
		t.Errorf("partial spare of %d bytes left after close", size)
	}
	l, _, _, err = Open(Options{Dir: dir, SegmentBytes: 1 << 30, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if got := scanAll(t, l); len(got) != 1 || !bytes.Equal(got[0], frame) {
		t.Errorf("after reopening: %q", got)
	}
}
