package logfs

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Direct is the flag that opens a file for writes that bypass the page
// cache (O_DIRECT); 0 where there is none.
const Direct = unix.O_DIRECT

func writeBack(f *os.File, off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n,
		unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}

func writeAtv(f *os.File, bufs [][]byte, off int64) (int, error) {
	want := 0
	for _, b := range bufs {
		want += len(b)
	}
	n, err := unix.Pwritev(int(f.Fd()), bufs, off)
	if err != nil {
		return max(n, 0), &os.PathError{Op: "pwritev", Path: f.Name(), Err: err}
	}
	if n < want {
		return n, io.ErrShortWrite
	}
	return n, nil
}

// fadvise gives advice about n bytes of f from off. The descriptor is held
// for the call, so that a concurrent close cannot hand its number to
// another file.
func fadvise(f *os.File, off, n int64, advice int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = unix.Fadvise(int(fd), off, n, advice)
	}); err != nil {
		return err
	}
	return ferr
}

func willNeed(f *os.File, off, n int64) error { return fadvise(f, off, n, unix.FADV_WILLNEED) }

func dropCache(f *os.File, off, n int64) error { return fadvise(f, off, n, unix.FADV_DONTNEED) }
