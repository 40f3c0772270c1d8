package logfs

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Op names an operation of MemFS that a test can make fail (MemFS.Inject).
type Op int

// The operations MemFS lets fail.
const (
	OpCreate Op = iota
	OpWrite
	OpTruncate
	OpSync
	OpRename
	OpRemove
	OpSyncDir
)

// MemFS is a file system in memory that models what a disk keeps: each
// file's durable bytes, what its page cache shows beyond them, and the
// writes and truncations in between; each directory's durable entries and
// the changes since its last SyncDir. Crash returns what a power loss
// would leave, and Inject fails chosen operations. A failed Sync loses the
// writes it was for from the disk but not from the cache, as Linux does
// after a failed write-back (docs/dis-embedded.md), until DropCache.
// Directories made by MkdirAll are durable at once.
type MemFS struct {
	mu     sync.Mutex
	dirs   map[string]*memDir
	inject func(op Op, name string) error
}

type memDir struct {
	names   map[string]*memInode
	durable map[string]*memInode
	pending []dirOp
}

// dirOp is a change of a directory not yet made durable: name made to
// refer to ino, or removed (ino nil).
type dirOp struct {
	name string
	ino  *memInode
}

type memInode struct {
	data    []byte // what reads see
	durable []byte // what a crash keeps at least
	pending []fileOp
}

// fileOp is a write (data) or a truncation to size not yet made durable.
type fileOp struct {
	off  int64
	data []byte
	size int64
}

// NewMemFS returns an empty MemFS.
func NewMemFS() *MemFS {
	return &MemFS{dirs: make(map[string]*memDir)}
}

// Inject makes fn decide, before each operation, whether it fails: a
// non-nil error is what the operation returns. A failed write still
// changes the cache, as a write the kernel took in part does; a failed
// Sync loses its writes from the disk. nil removes fn.
func (m *MemFS) Inject(fn func(op Op, name string) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inject = fn
}

// injected is the error inject decides for op on name. Needs mu.
func (m *MemFS) injected(op Op, name string) error {
	if m.inject == nil {
		return nil
	}
	return m.inject(op, name)
}

func (m *MemFS) dir(name string) (*memDir, string, error) {
	d := m.dirs[filepath.Dir(filepath.Clean(name))]
	if d == nil {
		return nil, "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return d, filepath.Base(name), nil
}

// MkdirAll creates dir and its parents, durable at once.
func (m *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if m.dirs[d] == nil {
			m.dirs[d] = &memDir{names: make(map[string]*memInode), durable: make(map[string]*memInode)}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// List names the files of dir.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dirs[filepath.Clean(dir)]
	if d == nil {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	var names []string
	for name := range d.names {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// OpenFile opens name; of flag it heeds O_CREATE, O_EXCL and O_TRUNC.
func (m *MemFS) OpenFile(name string, flag int, _ os.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.dir(name)
	if err != nil {
		return nil, err
	}
	ino := d.names[base]
	switch {
	case ino != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case ino == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case ino == nil:
		if err := m.injected(OpCreate, name); err != nil {
			return nil, err
		}
		ino = &memInode{}
		d.names[base] = ino
		d.pending = append(d.pending, dirOp{name: base, ino: ino})
	}
	if flag&os.O_TRUNC != 0 {
		ino.truncate(0)
	}
	return &memFile{fs: m, ino: ino, name: name}, nil
}

// Remove deletes name.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.dir(name)
	if err != nil {
		return err
	}
	if d.names[base] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if err := m.injected(OpRemove, name); err != nil {
		return err
	}
	delete(d.names, base)
	d.pending = append(d.pending, dirOp{name: base})
	return nil
}

// Rename moves oldname to newname, which must be in the same directory.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, oldBase, err := m.dir(oldname)
	if err != nil {
		return err
	}
	if filepath.Dir(filepath.Clean(newname)) != filepath.Dir(filepath.Clean(oldname)) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errors.New("across directories")}
	}
	ino := d.names[oldBase]
	if ino == nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if err := m.injected(OpRename, newname); err != nil {
		return err
	}
	newBase := filepath.Base(newname)
	delete(d.names, oldBase)
	d.names[newBase] = ino
	d.pending = append(d.pending, dirOp{name: oldBase}, dirOp{name: newBase, ino: ino})
	return nil
}

// SyncDir makes dir's entries durable.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dirs[filepath.Clean(dir)]
	if d == nil {
		return &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	if err := m.injected(OpSyncDir, dir); err != nil {
		return err
	}
	d.durable = maps.Clone(d.names)
	d.pending = nil
	return nil
}

// Crash returns the file system a power loss at this moment would leave:
// each directory's durable entries and a random prefix of its later
// changes (a journal commits them in order), each file's durable bytes and
// a random part of its later writes and truncations, each kept whole, not
// at all, or a random choice of its 512-byte sectors, as a disk writes
// pages back in any order. The receiver is not changed and may go on
// being used, by a server that is then abandoned.
func (m *MemFS) Crash(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMemFS()
	inodes := make(map[*memInode]*memInode)
	clone := func(ino *memInode) *memInode {
		if n, ok := inodes[ino]; ok {
			return n
		}
		b := slices.Clone(ino.durable)
		for _, op := range ino.pending {
			b = op.crashApply(b, rng)
		}
		n := &memInode{data: b, durable: slices.Clone(b)}
		inodes[ino] = n
		return n
	}
	for path, d := range m.dirs {
		names := maps.Clone(d.durable)
		for _, op := range d.pending[:rng.IntN(len(d.pending)+1)] {
			if op.ino == nil {
				delete(names, op.name)
			} else {
				names[op.name] = op.ino
			}
		}
		nd := &memDir{names: make(map[string]*memInode)}
		for name, ino := range names {
			nd.names[name] = clone(ino)
		}
		nd.durable = maps.Clone(nd.names)
		c.dirs[path] = nd
	}
	return c
}

const sector = 512

// crashApply applies op to b as a crash may have left it.
func (op fileOp) crashApply(b []byte, rng *rand.Rand) []byte {
	if op.data == nil {
		if rng.IntN(2) == 0 {
			return b
		}
		return resize(b, op.size)
	}
	switch rng.IntN(3) {
	case 0:
		return b
	case 1:
		return writeAt(b, op.data, op.off)
	}
	for s := int64(0); s < int64(len(op.data)); s += sector {
		if rng.IntN(2) == 0 {
			b = writeAt(b, op.data[s:min(s+sector, int64(len(op.data)))], op.off+s)
		}
	}
	return b
}

func resize(b []byte, size int64) []byte {
	if int64(len(b)) >= size {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

func writeAt(b, data []byte, off int64) []byte {
	if end := off + int64(len(data)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[off:], data)
	return b
}

func (ino *memInode) truncate(size int64) {
	ino.data = resize(ino.data, size)
	ino.pending = append(ino.pending, fileOp{size: size})
}

// disk is what the disk holds with the pending changes applied: what the
// cache would show had no write-back failed.
func (ino *memInode) disk() []byte {
	b := slices.Clone(ino.durable)
	for _, op := range ino.pending {
		if op.data == nil {
			b = resize(b, op.size)
		} else {
			b = writeAt(b, op.data, op.off)
		}
	}
	return b
}

type memFile struct {
	fs     *MemFS
	ino    *memInode
	name   string
	closed bool
}

var errClosed = errors.New("file already closed")

func (f *memFile) check(op string) error {
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: errClosed}
	}
	return nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(b, f.ino.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write"); err != nil {
		return 0, err
	}
	f.ino.data = writeAt(f.ino.data, b, off)
	f.ino.pending = append(f.ino.pending, fileOp{off: off, data: slices.Clone(b)})
	if err := f.fs.injected(OpWrite, f.name); err != nil {
		return len(b), err
	}
	return len(b), nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	if err := f.fs.injected(OpTruncate, f.name); err != nil {
		return err
	}
	f.ino.truncate(size)
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	if err := f.fs.injected(OpSync, f.name); err != nil {
		f.ino.pending = nil
		return err
	}
	f.ino.durable = f.ino.disk()
	f.ino.pending = nil
	return nil
}

// DropCache makes n bytes from off read what the disk holds (with the
// writes not yet written back): pages a failed Sync lost are gone then.
func (f *memFile) DropCache(off, n int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	disk := f.ino.disk()
	for i := max(off, 0); i < min(off+n, int64(len(f.ino.data))); i++ {
		if i < int64(len(disk)) {
			f.ino.data[i] = disk[i]
		} else {
			f.ino.data[i] = 0
		}
	}
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat"); err != nil {
		return nil, err
	}
	return memInfo{name: filepath.Base(f.name), size: int64(len(f.ino.data))}, nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("close"); err != nil {
		return err
	}
	f.closed = true
	return nil
}

type memInfo struct {
	name string
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() os.FileMode  { return 0o600 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
