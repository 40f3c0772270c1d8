// Package logfs is the file system the record log (package recordlog)
// reaches its directory through: the operating system's for the server,
// and in tests a memory one that loses what was not made durable when it
// crashes and fails the operations a test asks it to (MemFS), so that
// recovery can be tested against power losses and I/O errors that a real
// disk seldom shows on demand (docs/dis-embedded.md, "What the tests prove").
package logfs

import (
	"io"
	"os"
	"path/filepath"
)

// File is an open file. *os.File is one; the record log's fast paths
// (vectored writes, write-back, read-ahead, O_DIRECT, ranges sent with
// sendfile) ask for it by type and fall back to these calls for any other.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Name() string
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
}

// FS is the directory operations the record log needs. Names are paths,
// joined with filepath.Join.
type FS interface {
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List names the entries of dir.
	List(dir string) ([]string, error)
	// OpenFile opens name as os.OpenFile does; flag may hold Direct.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove deletes name.
	Remove(name string) error
	// Rename moves oldname to newname, replacing it.
	Rename(oldname, newname string) error
	// SyncDir makes the entries of dir durable: files created, renamed or
	// removed in it survive a power loss only after it.
	SyncDir(dir string) error
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, err
}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		// A nil *os.File in a File would not compare equal to nil.
		return nil, err
	}
	return f, nil
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// OSFile is f as an *os.File, nil when f is another file system's: a
// range of it can then be handed out to be sent with sendfile.
func OSFile(f File) *os.File {
	of, _ := f.(*os.File)
	return of
}

// cacheDropper is a file that can forget what its page cache holds, as
// MemFS's files do.
type cacheDropper interface {
	DropCache(off, n int64) error
}

// writerAtv is a file that writes several buffers in one call.
type writerAtv interface {
	WriteAtv(bufs [][]byte, off int64) (int, error)
}

// WriteAtv writes bufs one after the other at off: in one system call for
// an *os.File on Linux.
func WriteAtv(f File, bufs [][]byte, off int64) (int, error) {
	if of, ok := f.(*os.File); ok {
		return writeAtv(of, bufs, off)
	}
	if w, ok := f.(writerAtv); ok {
		return w.WriteAtv(bufs, off)
	}
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

// WriteBack writes n bytes of f from off to the disk and waits until they
// are there, without the metadata commit of an fsync; for a file of
// another file system it does nothing, as it makes nothing durable.
func WriteBack(f File, off, n int64) error {
	if of, ok := f.(*os.File); ok {
		return writeBack(of, off, n)
	}
	return nil
}

// WillNeed asks the kernel to read n bytes of f from off into the page
// cache in the background; a hint, which only an *os.File takes.
func WillNeed(f File, off, n int64) error {
	if of, ok := f.(*os.File); ok {
		return willNeed(of, off, n)
	}
	return nil
}

// DropCache makes the kernel forget the clean cached pages of n bytes of f
// from off (POSIX_FADV_DONTNEED), so that the next read of them reads the
// disk: after a failed fsync Linux may keep pages that never reached the
// disk, marked clean, and serve them to reads (docs/dis-embedded.md).
func DropCache(f File, off, n int64) error {
	if of, ok := f.(*os.File); ok {
		return dropCache(of, off, n)
	}
	if d, ok := f.(cacheDropper); ok {
		return d.DropCache(off, n)
	}
	return nil
}
