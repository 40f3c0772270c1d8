// Package recordlog is the embedded DIS's record log: the append-only
// files that hold record data beside pebble, which keeps a reference per
// record (Ref). Pebble would write every byte three times or more (its
// WAL, the memtable flush, each compaction); the log writes it once. The
// rules of what is durable when, and of what recovery keeps, cuts and
// reports, are all here (docs/dis-embedded.md, Storage).
//
// The log is a directory of segments named <id>.log, ids counting up from
// 1, each a sequence of frames (frame.go, runframe.go). Appends go to the
// newest (active) segment; a segment is rolled at SegmentBytes and fsynced
// when rolled, so every segment but the active one is durable in full.
// With spares the next segment is prepared while the active one fills
// (spare.go). Open never appends to a segment it finds: it recovers the
// newest one (recovery.go) and starts a new segment. Retention deletes
// whole segments once no partition's earliest record lies in them or
// before them. The log reaches its files through logfs.FS, so that tests
// can crash it and fail its I/O.
package recordlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// dirMode is the mode of the log's directory: readable by its owner only,
// as are the segment files in it.
const dirMode = 0o700

// ErrSegmentGone is a read of a segment retention has deleted: the reader
// asked for records retention dropped meanwhile.
var ErrSegmentGone = errors.New("record log segment deleted")

// ErrStopped is what appends and syncs answer once the log stopped taking
// writes: an fsync, a roll or a failed write's cleanup failed, and only a
// restart, which recovers the log, brings writes back.
var ErrStopped = errors.New("the record log stopped taking writes; restart the server")

// Options configures Open.
type Options struct {
	// FS is the file system; nil is logfs.OS.
	FS logfs.FS
	// Dir is the log's directory, created if need be.
	Dir string
	// SegmentBytes is where a segment is rolled.
	SegmentBytes int64
	// Spares makes the log prepare each next segment ahead (spare.go),
	// what SyncAlways gains from.
	Spares bool
	// Logger receives what recovery cut or found damaged, and failures
	// to prepare a spare.
	Logger zerolog.Logger
	// ScanRate bounds, in bytes a second, the background scan of the
	// older segments for damage (scanOlder); 0 is defaultScanRate, a
	// negative rate none.
	ScanRate int64
}

// Log is the set of segments of one directory.
type Log struct {
	fs           logfs.FS
	dir          string
	segmentBytes int64

	// mu guards the active segment and the size written to it, the spare
	// segment's state and failed.
	mu       sync.Mutex
	active   logfs.File
	activeID uint64
	size     int64
	// filled is whether the active segment was a spare: zeros follow its
	// frames, to be cut off when it is rolled or closed.
	filled bool
	// direct is the active segment opened with O_DIRECT, which appends go
	// through when its spare was written so (writeDirect); nil otherwise.
	// stage is the aligned buffer they are written from, holding the
	// segment's bytes from stageStart, a page boundary, up to size.
	direct     logfs.File
	stage      []byte
	stageStart int64
	// warm takes the ranges direct appends wrote to a goroutine that reads
	// them into the page cache (warm.go); warmed waits for it.
	warm   chan pageRange
	warmed sync.WaitGroup

	// spares makes the log prepare each next segment ahead (spare.go);
	// spare is one ready to become it, spareDirect the same file opened
	// with O_DIRECT (nil where the file system refuses it), preparing
	// whether a goroutine is writing one. closing stops new ones and
	// abandon, closed by close, the one under way; prepared waits for it.
	spares      bool
	spare       logfs.File
	spareDirect logfs.File
	preparing   bool
	closing     bool
	abandon     chan struct{}
	prepared    sync.WaitGroup
	log         zerolog.Logger
	// lastAppend is when the last append began, appended the bytes
	// written since open: the spare is zeroed at the disk's speed only
	// while a log that has taken some is idle (spareStep).
	lastAppend time.Time
	appended   int64

	// files holds every segment open for reading, by id.
	filesMu sync.RWMutex
	files   map[uint64]logfs.File

	// syncMu serializes fsyncs of the active segment; synced is how far
	// the log is durable, so that writers arriving during an fsync share
	// the next one (group commit). Sync stores synced under syncMu, a
	// roll under mu; it may be read without either (docs/design.md §11).
	syncMu sync.Mutex
	synced atomic.Pointer[syncPos]

	// marker is the file that keeps how far the active segment is known
	// durable (recovery.go); markMu serializes its writes, markGen counts
	// them.
	marker  logfs.File
	markMu  sync.Mutex
	markGen uint64

	// failed is why the log stopped taking writes, nil while it takes
	// them. Guarded by mu. After a failed fsync the kernel may have
	// dropped the pages that failed and report the next fsync as a
	// success, so a later write acknowledged durable could follow records
	// that are gone; after a failed roll or a failed write whose frames
	// could not be cut, the next write could reuse sequence numbers that
	// frames in the log already carry. The server must be restarted, and
	// recovery then cuts the active segment at its last successful fsync
	// (recovery.go).
	failed error

	// damage is what recovery, the scan of older segments and reads
	// found damaged (recovery.go).
	damageMu    sync.RWMutex
	damage      []Damage
	damageFound int64
	hasDamage   atomic.Bool
	scanRate    int64
	scanned     sync.WaitGroup
	stopScan    chan struct{}
	scanCancel  sync.Once
}

// Stopped is why the log takes no more writes, nil while it does.
func (l *Log) Stopped() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stoppedLocked()
}

// stoppedLocked is Stopped for callers holding mu.
func (l *Log) stoppedLocked() error {
	if l.failed == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrStopped, l.failed)
}

// stopLocked stops the log for err, unless it stopped already, and marks
// durably that the next open must cut the active segment at cut
// (recovery.go). Needs mu.
func (l *Log) stopLocked(err error, cut int64) {
	if l.failed != nil {
		return
	}
	l.failed = err
	if merr := l.writeMarker(l.activeID, cut, true); merr != nil {
		l.log.Error().Err(merr).Msg("dislocal: could not mark the record log's failure; the next start drops the page cache of what was not synced instead")
	}
	l.log.Error().Err(err).Str("file", l.SegmentPath(l.activeID)).Int64("cut_at", cut).
		Msg("dislocal: the record log takes no more writes until the server is restarted")
}

// syncLocked fsyncs the active segment, stopping the log when that fails.
// Needs mu.
func (l *Log) syncLocked() error {
	err := l.active.Sync()
	if err != nil {
		l.stopLocked(err, l.durableLocked())
	}
	return err
}

// durableLocked is how much of the active segment the last successful
// fsync made durable: where the next open cuts it after a failed fsync,
// since the kernel may have dropped what the fsync failed to write. Needs
// mu.
func (l *Log) durableLocked() int64 {
	if p := l.synced.Load(); p.seg == l.activeID {
		return p.end
	}
	return 0
}

// Open opens the log in o.Dir, creating it if need be, recovers its newest
// segment (recovery.go) and starts scanning the older ones for damage in
// the background. It returns the newest segment found and how much of it
// the records referenced in pebble may lie in (0, 0 for none): references
// beyond that point are to frames that never reached the disk whole and
// must be dropped by the caller.
func Open(o Options) (l *Log, lastID uint64, lastLen int64, err error) {
	fs := o.FS
	if fs == nil {
		fs = logfs.OS
	}
	rate := o.ScanRate
	if rate == 0 {
		rate = defaultScanRate
	}
	l = &Log{
		fs: fs, dir: o.Dir, segmentBytes: o.SegmentBytes, files: make(map[uint64]logfs.File),
		spares: o.Spares, abandon: make(chan struct{}), log: o.Logger, scanRate: rate, stopScan: make(chan struct{}),
	}
	l.synced.Store(&syncPos{})
	if err := fs.MkdirAll(l.dir, dirMode); err != nil {
		return nil, 0, 0, err
	}
	// A spare left by a crash may be partly written.
	if err := fs.Remove(l.sparePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, 0, 0, err
	}
	names, err := fs.List(l.dir)
	if err != nil {
		return nil, 0, 0, err
	}
	var ids []uint64
	for _, n := range names {
		name, ok := strings.CutSuffix(n, ".log")
		id, perr := strconv.ParseUint(name, 10, 64)
		if !ok || perr != nil || id == 0 {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	defer func() {
		if err != nil {
			_ = l.Close()
		}
	}()
	if l.spares {
		l.startWarming()
	}
	for _, id := range ids {
		f, err := fs.OpenFile(l.SegmentPath(id), os.O_RDWR, 0)
		if err != nil {
			return nil, 0, 0, err
		}
		l.files[id] = f
	}
	mark, err := l.openMarker()
	if err != nil {
		return nil, 0, 0, err
	}
	if len(ids) > 0 {
		lastID = ids[len(ids)-1]
		if lastLen, err = l.recoverNewest(lastID, mark); err != nil {
			return nil, 0, 0, fmt.Errorf("segment %s: %w", l.SegmentPath(lastID), err)
		}
	}
	if err := l.startSegment(lastID + 1); err != nil {
		return nil, 0, 0, err
	}
	// Nothing of the new segment is written: what the marker said of the
	// recovered one holds no more.
	if err := l.writeMarker(lastID+1, 0, false); err != nil {
		return nil, 0, 0, err
	}
	if len(ids) > 1 {
		l.scanOlder(ids[:len(ids)-1])
	}
	return l, lastID, lastLen, nil
}

// Segments lists the ids of the segments there are, oldest first.
func (l *Log) Segments() []uint64 {
	l.filesMu.RLock()
	defer l.filesMu.RUnlock()
	ids := make([]uint64, 0, len(l.files))
	for id := range l.files {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// segmentFile is the open file of segment id, nil when there is none.
func (l *Log) segmentFile(id uint64) logfs.File {
	l.filesMu.RLock()
	defer l.filesMu.RUnlock()
	return l.files[id]
}

// SegmentPath is the file of segment id, what errors and logs name.
func (l *Log) SegmentPath(id uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%020d.log", id))
}

// startSegment makes segment id, from the spare when one is ready, active
// and fsyncs the directory so that the new file survives a power loss; then
// it has the spare after it prepared. A failure leaves the log as it was;
// a file it leaves behind is the newest segment the next open finds, and
// recovers as it does any other. Needs l.mu (or sole ownership).
func (l *Log) startSegment(id uint64) error {
	f, direct, filled := l.spare, l.spareDirect, l.spare != nil
	l.spare, l.spareDirect = nil, nil
	if filled {
		if err := l.fs.Rename(l.sparePath(), l.SegmentPath(id)); err != nil {
			closeFiles(f, direct)
			_ = l.fs.Remove(l.sparePath())
			f, direct, filled = nil, nil, false
		}
	}
	if f == nil {
		var err error
		if f, err = l.fs.OpenFile(l.SegmentPath(id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		closeFiles(f, direct)
		return err
	}
	l.filesMu.Lock()
	l.files[id] = f
	l.filesMu.Unlock()
	l.active, l.activeID, l.size, l.filled = f, id, 0, filled
	l.direct, l.stageStart = direct, 0
	l.prepareSpare()
	return nil
}

// Append writes frames (whole frames, one or more) to the active segment
// in one write and then calls index with where they start, still holding
// the log's lock, so that what index records (the frames' references in
// pebble) is applied in log order (the caller's reindexing relies on it).
// It rolls to a new segment first when the frames would not fit, or when a
// spare is ready for a segment not made from one (spare.go), fsyncing the
// old one. The frames are in the OS's page cache when it returns (they
// survive a process crash); Sync makes them durable. When the write or
// index fails the frames are cut off again; when that fails too, the log
// stops taking writes, as the sequence numbers of the frames left would
// go to the next write.
func (l *Log) Append(frames []byte, index func(seg uint64, off int64) error) (seg uint64, off int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.stoppedLocked(); err != nil {
		return 0, 0, err
	}
	l.lastAppend = time.Now()
	full := l.size+int64(len(frames)) > l.segmentBytes
	// A segment not made from a spare (the first after open, or one a
	// spare was not ready for) rolls as soon as one is ready.
	early := !l.filled && l.spare != nil
	if l.size > 0 && (full || early) {
		if err := l.roll(); err != nil {
			return 0, 0, err
		}
	}
	seg, off = l.activeID, l.size
	n, err := l.writeFrames(frames, off)
	l.size += int64(n)
	l.appended += int64(n)
	if err == nil {
		if err = index(seg, off); err == nil {
			return seg, off, nil
		}
	}
	if terr := l.active.Truncate(off); terr != nil {
		err = errors.Join(err, terr)
		l.stopLocked(err, off)
		return 0, 0, err
	}
	l.size = off
	return 0, 0, err
}

// roll ends the active segment, durable in full, and starts the next one.
// A failure stops the log: a segment it could not fsync may have lost
// pages, and one it could not start may be left half made. Needs mu.
func (l *Log) roll() error {
	if err := l.cutFilled(); err != nil {
		l.stopLocked(err, l.size)
		return err
	}
	if err := l.syncLocked(); err != nil {
		return err
	}
	l.synced.Store(&syncPos{l.activeID, l.size})
	if err := l.startSegment(l.activeID + 1); err != nil {
		err = fmt.Errorf("start record log segment %d: %w", l.activeID+1, err)
		l.stopLocked(err, l.size)
		return err
	}
	return nil
}

// Sync makes everything appended before end (in segment seg) durable.
// Concurrent callers share fsyncs: one waiting behind another finds its
// frames already covered. After each fsync the marker records how far the
// segment is durable (recovery.go).
func (l *Log) Sync(seg uint64, end int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if p := l.synced.Load(); seg < p.seg || seg == p.seg && end <= p.end {
		return nil
	}
	l.mu.Lock()
	f, id, size, stopped := l.active, l.activeID, l.size, l.stoppedLocked()
	l.mu.Unlock()
	if stopped != nil {
		return stopped
	}
	if seg < id {
		// Rolled since: a segment is fsynced when rolled.
		return nil
	}
	// Outside mu, so appends go on during the fsync; a failure is
	// recorded under it.
	if err := f.Sync(); err != nil {
		l.mu.Lock()
		l.stopLocked(err, l.durableLocked())
		l.mu.Unlock()
		return err
	}
	// The log may have stopped while the fsync ran: a roll or a cut failed
	// on this same file, and Linux reports a write-back error to one fsync
	// only, so this one succeeding proves nothing. Checked under mu, which
	// a stop holds while it writes the failed marker, so a clean marker
	// never lands on top of it.
	l.mu.Lock()
	defer l.mu.Unlock()
	if stopped := l.stoppedLocked(); stopped != nil {
		return stopped
	}
	if p := l.synced.Load(); id < p.seg || id == p.seg && size <= p.end {
		return nil
	}
	l.synced.Store(&syncPos{id, size})
	// Not fsynced: a marker that does not reach the disk leaves an older
	// one, which claims less.
	if err := l.writeMarker(id, size, false); err != nil {
		l.log.Warn().Err(err).Msg("dislocal: could not record how far the record log is durable")
	}
	return nil
}

// RemoveBefore deletes every segment older than id, never the active one.
func (l *Log) RemoveBefore(id uint64) error {
	l.mu.Lock()
	id = min(id, l.activeID)
	l.mu.Unlock()
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	var first error
	for seg, f := range l.files {
		if seg >= id {
			continue
		}
		delete(l.files, seg)
		if logfs.OSFile(f) == nil {
			// Only an *os.File is handed out as a span, which may
			// still be read (disclient.SpanGetter).
			_ = f.Close()
		}
		// An *os.File is not closed: spans handed out may still be
		// read from it. It is closed once the last reference to it is
		// gone (os.File's cleanup), its space freed then.
		if err := l.fs.Remove(l.SegmentPath(seg)); err != nil && first == nil {
			first = err
		}
	}
	l.forgetDamage(id)
	return first
}

// ActiveSegment is the id appends go to.
func (l *Log) ActiveSegment() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.activeID
}

// cutFilled ends appends to an active segment made from a spare: it
// closes its O_DIRECT descriptor and cuts the zeros off its end. Needs mu.
func (l *Log) cutFilled() error {
	if l.direct != nil {
		_ = l.direct.Close()
		l.direct = nil
	}
	if !l.filled {
		return nil
	}
	if err := l.active.Truncate(l.size); err != nil {
		return err
	}
	l.filled = false
	return nil
}

// Close stops the scan of older segments, abandons a spare under way,
// deletes a spare, cuts the active segment to its frames, makes it durable
// with the marker saying so, and closes every segment.
func (l *Log) Close() error {
	l.scanCancel.Do(func() { close(l.stopScan) })
	l.scanned.Wait()
	l.mu.Lock()
	if !l.closing {
		l.closing = true
		close(l.abandon)
		if l.warm != nil {
			close(l.warm)
		}
	}
	l.mu.Unlock()
	l.prepared.Wait()
	l.warmed.Wait()
	l.mu.Lock()
	first := l.cutFilled()
	if l.spare != nil {
		closeFiles(l.spare, l.spareDirect)
		_ = l.fs.Remove(l.sparePath())
		l.spare, l.spareDirect = nil, nil
	}
	if l.active != nil && l.failed == nil && first == nil {
		// A clean stop: the whole active segment is durable, and a bad
		// frame in it found at the next open is damage, not a torn tail.
		if first = l.active.Sync(); first == nil {
			first = l.writeMarker(l.activeID, l.size, false)
		}
		if first == nil {
			first = l.marker.Sync()
		}
	}
	l.mu.Unlock()
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	for id, f := range l.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
		delete(l.files, id)
	}
	if l.marker != nil {
		if err := l.marker.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// syncPos is a place in the log: end bytes into segment seg.
type syncPos struct {
	seg uint64
	end int64
}

// closeFiles closes the files that are not nil, for cleanup on paths that
// already fail.
func closeFiles(files ...logfs.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}
