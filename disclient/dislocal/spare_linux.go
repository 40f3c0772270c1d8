package dislocal

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// createSpareFile creates (or empties) the spare file at path, opened with
// O_DIRECT (direct) unless the file system refuses it, as tmpfs does.
func createSpareFile(path string) (f *os.File, direct bool, err error) {
	const flags = os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if f, err = os.OpenFile(path, flags|unix.O_DIRECT, 0o600); err == nil {
		return f, true, nil
	}
	f, err = os.OpenFile(path, flags, 0o600)
	return f, false, err
}

// writeBack writes n bytes of f from off to the disk and waits until they
// are there, without the metadata commit of an fsync.
func writeBack(f *os.File, off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n,
		unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}

// writeAtv writes bufs one after the other at off in one system call.
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

// willNeed asks the kernel to read n bytes of f from off into the page
// cache in the background. The descriptor is held for the call, so that
// a concurrent close cannot hand its number to another file.
func willNeed(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = unix.Fadvise(int(fd), off, n, unix.FADV_WILLNEED)
	}); err != nil {
		return err
	}
	return ferr
}

// adviseWillNeed asks the kernel to read n bytes of f from off on into the
// page cache in the background; it is only advice.
func adviseWillNeed(f *os.File, off, n int64) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.Fadvise(int(fd), off, n, unix.FADV_WILLNEED) })
	}
}
