package dislocal

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBack writes n bytes of f from off to the disk and waits until they
// are there, without the metadata commit of an fsync.
func writeBack(f *os.File, off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n,
		unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}
