package recordlog

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/rs/zerolog"

	"golang.org/x/sys/unix"

	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// A direct append leaves its records on the disk only; the log then reads
// them back into the page cache in the background, where a consumer
// reading right behind finds them, as after a write through it.
func TestRecordLogWarmsDirectAppends(t *testing.T) {
	if !takesODirect(t) {
		t.Skip("the file system refuses O_DIRECT: appends go through the page cache")
	}
	l, _, _, err := Open(Options{Dir: t.TempDir(), SegmentBytes: 4 << 20, Spares: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	noIndex := func(uint64, int64) error { return nil }
	small := AppendFrame(nil, 1, 0, 0, 0, "", []byte("first"))
	if _, _, err := l.Append(small, noIndex); err != nil {
		t.Fatal(err)
	}
	waitLogSpare(t, l)
	frame := AppendFrame(nil, 1, 0, 1, 0, "", bytes.Repeat([]byte{'x'}, 2*directMin))
	seg, off, err := l.Append(frame, noIndex)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	wentDirect := l.direct != nil
	l.mu.Unlock()
	if !wentDirect {
		t.Fatal("the append did not go to a segment with an O_DIRECT descriptor")
	}
	f := logfs.OSFile(l.segmentFile(seg))
	start := off &^ (pageBytes - 1)
	length := int(off+int64(len(frame))-start+pageBytes-1) &^ (pageBytes - 1)
	m, err := unix.Mmap(int(f.Fd()), start, length, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	resident := make([]byte, length/pageBytes)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&resident[0]))); errno != 0 {
			t.Fatal(errno)
		}
		cached := 0
		for _, r := range resident {
			cached += int(r & 1)
		}
		if cached == len(resident) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the append's %d pages in the page cache after 10 s", cached, len(resident))
		}
		time.Sleep(time.Millisecond)
	}
}
