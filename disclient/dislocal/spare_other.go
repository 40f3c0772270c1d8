//go:build !linux

package dislocal

import "os"

// createSpareFile creates (or empties) the spare file at path; direct
// (O_DIRECT) is a Linux feature here.
func createSpareFile(path string) (f *os.File, direct bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	return f, false, err
}

// writeBack makes f durable where sync_file_range does not exist; the
// spare's chunks then cost an fsync each.
func writeBack(f *os.File, _, _ int64) error {
	return f.Sync()
}

// writeAtv writes bufs one after the other at off.
func writeAtv(f *os.File, bufs [][]byte, off int64) (int, error) {
	n := 0
	for _, b := range bufs {
		m, err := f.WriteAt(b, off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// willNeed does nothing: reading ahead into the page cache is asked of
// Linux only here.
func willNeed(*os.File, int64, int64) error { return nil }

// adviseWillNeed is posix_fadvise's WILLNEED where there is one.
func adviseWillNeed(*os.File, int64, int64) {}
