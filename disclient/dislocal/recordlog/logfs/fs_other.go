//go:build !linux

package logfs

import "os"

// Direct is the flag that opens a file for writes that bypass the page
// cache; O_DIRECT is a Linux feature here.
const Direct = 0

// writeBack makes f durable where sync_file_range does not exist.
func writeBack(f *os.File, _, _ int64) error { return f.Sync() }

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

func willNeed(*os.File, int64, int64) error { return nil }

func dropCache(*os.File, int64, int64) error { return nil }
