package dislocal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

// Record data lives in an append-only log beside pebble rather than in
// pebble itself: pebble would write every byte three times or more (its
// WAL, the memtable flush, each compaction), the log writes it once.
// Pebble keeps only a reference per record (the r keys, see keys.go).
//
// The log is a directory of segments named <id>.log, ids counting up from 1.
// A segment is a sequence of frames, each a record's:
//
//	<payload length:4> <crc32c of payload:4> <payload>
//	payload = <skey:8> <partition:4> <seq:8> <record value, see appendRecordValue>
//
// or a run of records of one partition (runframe.go).
//
// Numbers are big-endian. Appends go to the newest (active) segment; a
// segment is rolled at segmentBytes and fsynced when rolled, so every
// segment but the active one is durable in full. With SyncAlways the next
// segment is prepared while the active one fills (spare.go). Open never
// appends to a segment it finds: it validates the newest one, cuts off a
// torn tail, fsyncs it and starts a new segment. Retention deletes whole segments once
// no partition's earliest record lies in them or before them.
const (
	logDirName      = "records"
	logSegmentBytes = 256 << 20
	frameHeaderLen  = 8
	framePrefixLen  = frameHeaderLen + 8 + 4 + 8
	recordRefLen    = 8 + 8 + 4
	memberRefLen    = recordRefLen + 8 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordRef locates one record: segment id, offset and length of its
// frame, or with member, of its data in a run frame (runframe.go), whose
// timestamp and checksum the reference then carries.
type recordRef struct {
	seg uint64
	off int64
	n   uint32

	member bool
	ts     int64
	crc    uint32
	// head is the data's first memberHeadLen bytes, kept for a member
	// of more than memberHeadMin bytes (memberHead). Decoded, it aliases
	// the encoded reference.
	head []byte
}

func (r recordRef) encode(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, r.seg)
	b = binary.BigEndian.AppendUint64(b, uint64(r.off))
	b = binary.BigEndian.AppendUint32(b, r.n)
	if r.member {
		b = binary.BigEndian.AppendUint64(b, uint64(r.ts))
		b = binary.BigEndian.AppendUint32(b, r.crc)
		b = append(b, r.head...)
	}
	return b
}

func decodeRecordRef(v []byte) (recordRef, bool) {
	if len(v) != recordRefLen && len(v) != memberRefLen && len(v) != memberRefLen+memberHeadLen {
		return recordRef{}, false
	}
	r := recordRef{
		seg: binary.BigEndian.Uint64(v),
		off: int64(binary.BigEndian.Uint64(v[8:])),
		n:   binary.BigEndian.Uint32(v[16:]),
	}
	if len(v) >= memberRefLen {
		r.member, r.ts, r.crc = true, int64(binary.BigEndian.Uint64(v[20:])), binary.BigEndian.Uint32(v[28:])
		if len(v) > memberRefLen {
			if int(r.n) <= memberHeadMin {
				return recordRef{}, false
			}
			r.head = v[memberRefLen:]
		}
	}
	return r, true
}

// dataLen is how many bytes of record data (key included) the referenced
// record holds at most: a frame's prefix and timestamp are not data.
func (r recordRef) dataLen() int {
	if r.member {
		return int(r.n)
	}
	return int(r.n) - framePrefixLen - 9
}

// appendFrame appends the frame of one record.
func appendFrame(b []byte, skey uint64, part int32, seq, timestamp int64, key string, data []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeaderLen)...)
	b = binary.BigEndian.AppendUint64(b, skey)
	b = binary.BigEndian.AppendUint32(b, uint32(part))
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = appendRecordValue(b, timestamp, key, data)
	payload := b[start+frameHeaderLen:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(payload, castagnoli))
	return b
}

// frameLen is the length appendFrame adds.
func frameLen(key string, data []byte) int {
	return framePrefixLen + recordValueLen(key, data)
}

// checkFrame verifies a frame read back from the log and returns its
// payload's parts.
func checkFrame(f []byte) (skey uint64, part int32, seq int64, value []byte, ok bool) {
	if len(f) < framePrefixLen || int(binary.BigEndian.Uint32(f)) != len(f)-frameHeaderLen {
		return 0, 0, 0, nil, false
	}
	payload := f[frameHeaderLen:]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(f[4:]) {
		return 0, 0, 0, nil, false
	}
	return binary.BigEndian.Uint64(payload), int32(binary.BigEndian.Uint32(payload[8:])),
		int64(binary.BigEndian.Uint64(payload[12:])), payload[20:], true
}

// errSegmentGone is a read of a segment retention has deleted.
var errSegmentGone = errors.New("record log segment deleted")

// recordLog is the set of segments of one data directory.
type recordLog struct {
	dir          string
	segmentBytes int64

	// mu guards the active segment and the size written to it, and the
	// spare segment's state.
	mu       sync.Mutex
	active   *os.File
	activeID uint64
	size     int64
	// filled is whether the active segment was a spare: zeros follow its
	// frames, to be cut off when it is rolled or closed.
	filled bool
	// direct is the active segment opened with O_DIRECT, which appends go
	// through when its spare was written so (writeDirect); nil otherwise.
	// stage is the aligned buffer they are written from, holding the
	// segment's bytes from stageStart, a page boundary, up to size.
	direct     *os.File
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
	spare       *os.File
	spareDirect *os.File
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
	files   map[uint64]*os.File

	// syncMu serializes fsyncs of the active segment; synced is how far
	// it is durable, so that writers arriving during an fsync share the
	// next one (group commit).
	syncMu    sync.Mutex
	syncedID  uint64
	syncedEnd int64

	// failed is the first fsync failure, guarded by mu. After it the log
	// takes no more appends and makes no write durable: the kernel may
	// have dropped the pages that failed and report the next fsync as a
	// success, so a later write acknowledged durable could follow records
	// that are gone. The server must be restarted, which cuts the log at
	// what reached the disk whole.
	failed error
	// fsync is (*os.File).Sync; tests make it fail.
	fsync func(*os.File) error
}

// errLogFailed is what appends and syncs answer after an fsync failed.
var errLogFailed = errors.New("an earlier fsync of the record log failed; restart the server")

// stoppedLocked is the error of a log an fsync failure stopped, nil for a
// working one. Needs mu.
func (l *recordLog) stoppedLocked() error {
	if l.failed == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", errLogFailed, l.failed)
}

// stopped is stoppedLocked for callers without mu.
func (l *recordLog) stopped() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stoppedLocked()
}

// syncLocked fsyncs f, stopping the log when that fails. Needs mu.
func (l *recordLog) syncLocked(f *os.File) error {
	err := l.fsync(f)
	if err != nil {
		l.stopLocked(err)
	}
	return err
}

// stopLocked stops the log for the failed fsync err, unless an earlier one
// did. Needs mu.
func (l *recordLog) stopLocked(err error) {
	if l.failed == nil {
		l.failed = err
	}
}

// dirMode is the mode of the directories the store creates: readable by
// their owner only, as are the segment files in them.
const dirMode = 0o700

// openRecordLog opens the log in dir/records, creating it if need be, and
// with spares prepares each next segment ahead (spare.go), reporting a
// failure to do so to logger. It returns the newest segment found and its
// valid length (0, 0 for none): records referenced beyond that point never
// reached the disk whole and must be dropped by the caller.
func openRecordLog(dir string, segmentBytes int64, spares bool, logger zerolog.Logger) (l *recordLog, lastID uint64, lastLen int64, err error) {
	log := &recordLog{
		dir: filepath.Join(dir, logDirName), segmentBytes: segmentBytes, files: make(map[uint64]*os.File), fsync: (*os.File).Sync,
		spares: spares, abandon: make(chan struct{}), log: logger,
	}
	if err := os.MkdirAll(log.dir, dirMode); err != nil {
		return nil, 0, 0, err
	}
	// A spare left by a crash may be partly written.
	if err := os.Remove(log.sparePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, 0, 0, err
	}
	entries, err := os.ReadDir(log.dir)
	if err != nil {
		return nil, 0, 0, err
	}
	var ids []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		id, perr := strconv.ParseUint(name, 10, 64)
		if !ok || perr != nil || id == 0 {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	defer func() {
		if err != nil {
			_ = log.close()
		}
	}()
	if spares {
		log.startWarming()
	}
	for _, id := range ids {
		f, err := os.OpenFile(log.segmentPath(id), os.O_RDWR, 0)
		if err != nil {
			return nil, 0, 0, err
		}
		log.files[id] = f
	}
	if len(ids) > 0 {
		lastID = ids[len(ids)-1]
		f := log.files[lastID]
		if lastLen, err = validLength(f); err != nil {
			return nil, 0, 0, fmt.Errorf("segment %d: %w", lastID, err)
		}
		if err := f.Truncate(lastLen); err != nil {
			return nil, 0, 0, err
		}
		if err := f.Sync(); err != nil {
			return nil, 0, 0, err
		}
	}
	if err := log.startSegment(lastID + 1); err != nil {
		return nil, 0, 0, err
	}
	return log, lastID, lastLen, nil
}

// validLength reads a segment frame by frame and returns the length of the
// prefix made of whole frames with correct checksums.
func validLength(f *os.File) (int64, error) {
	return scanFrames(f, 0, nil)
}

// scanFrames reads the frames of a segment from offset from on, handing
// each whole, checked frame and its offset to fn (nil: none), and returns
// where the whole frames end: a torn or corrupt frame ends the scan. The
// frame passed to fn is valid until fn returns.
func scanFrames(f *os.File, from int64, fn func(off int64, frame []byte) error) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := st.Size()
	off := from
	var hdr [frameHeaderLen]byte
	var buf []byte
	for off+frameHeaderLen <= end {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return 0, err
		}
		n := int64(binary.BigEndian.Uint32(hdr[:]) &^ runFlag)
		if n < framePrefixLen-frameHeaderLen || off+frameHeaderLen+n > end {
			break
		}
		buf = slices.Grow(buf[:0], int(frameHeaderLen+n))[:frameHeaderLen+n]
		if _, err := f.ReadAt(buf, off); err != nil {
			return 0, err
		}
		if !frameValid(buf) {
			break
		}
		if fn != nil {
			if err := fn(off, buf); err != nil {
				return 0, err
			}
		}
		off += frameHeaderLen + n
	}
	return off, nil
}

// frameValid reports whether buf is one whole frame, a record's or a
// run's, with correct checksums.
func frameValid(buf []byte) bool {
	if isRunFrame(buf) {
		_, _, _, _, ok := checkRunFrame(buf)
		return ok
	}
	_, _, _, _, ok := checkFrame(buf)
	return ok
}

// segments lists the ids of the segments there are, oldest first.
func (l *recordLog) segments() []uint64 {
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
func (l *recordLog) segmentFile(id uint64) *os.File {
	l.filesMu.RLock()
	defer l.filesMu.RUnlock()
	return l.files[id]
}

func (l *recordLog) segmentPath(id uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%020d.log", id))
}

// startSegment makes segment id, from the spare when one is ready, active
// and fsyncs the directory so that the new file survives a power loss; then
// it has the spare after it prepared. Needs l.mu (or sole ownership).
func (l *recordLog) startSegment(id uint64) error {
	f, direct, filled := l.spare, l.spareDirect, l.spare != nil
	l.spare, l.spareDirect = nil, nil
	if filled {
		if err := os.Rename(l.sparePath(), l.segmentPath(id)); err != nil {
			closeFiles(f, direct)
			_ = os.Remove(l.sparePath())
			f, direct, filled = nil, nil, false
		}
	}
	if f == nil {
		var err error
		if f, err = os.OpenFile(l.segmentPath(id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return err
		}
	}
	if err := syncDir(l.dir); err != nil {
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// append writes frames (whole frames, one or more) to the active segment
// in one write and then calls index with where they start, still holding
// the log's lock, so that what index records (the frames' references in
// pebble) is applied in log order (see reindexLog). It rolls to a new
// segment first when the frames would not fit, or when a spare is ready
// for a segment not made from one (spare.go), fsyncing the old one. The
// frames are in the OS's page cache when it returns (they survive a
// process crash); sync makes them durable.
func (l *recordLog) append(frames []byte, index func(seg uint64, off int64) error) (seg uint64, off int64, err error) {
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
		if err := l.cutFilled(); err != nil {
			return 0, 0, err
		}
		if err := l.syncLocked(l.active); err != nil {
			return 0, 0, err
		}
		if err := l.startSegment(l.activeID + 1); err != nil {
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
	// Frames without references must not stay: reindexLog would take
	// them for records whose references were lost, while their sequence
	// numbers go to the next write.
	if terr := l.active.Truncate(off); terr == nil {
		l.size = off
	} else {
		err = errors.Join(err, terr)
	}
	return 0, 0, err
}

// sync makes everything appended before end (in segment seg) durable.
// Concurrent callers share fsyncs: one waiting behind another finds its
// frames already covered.
func (l *recordLog) sync(seg uint64, end int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if seg < l.syncedID || seg == l.syncedID && end <= l.syncedEnd {
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
	if err := l.fsync(f); err != nil {
		l.mu.Lock()
		l.stopLocked(err)
		l.mu.Unlock()
		return err
	}
	l.syncedID, l.syncedEnd = id, size
	return nil
}

// logReader reads frames through a window of the log, so that the records
// of a GetRecords answer that lie one after the other in the log cost one
// read between them rather than one each. It is one reader's, not safe for
// concurrent use.
type logReader struct {
	log *recordLog
	buf []byte
	seg uint64
	off int64 // of buf[0] in segment seg

	// fresh makes read hand out slices of kept, frames read into memory
	// of their own instead of the window: they stay valid after later
	// reads and are the caller's to keep. kept starts at keptOff in
	// segment keptSeg.
	fresh   bool
	kept    []byte
	keptSeg uint64
	keptOff int64

	// spanMin and head, with fresh: a frame whose record has more than
	// spanMin bytes of data is read only up to its first head bytes of
	// data, and the rest of the data handed out as a span of its segment
	// (readSpan). heads is the piece such reads go into; advisedSeg and
	// advisedEnd how far the kernel was told a span reader is coming.
	spanMin, head int
	heads         []byte
	advisedSeg    uint64
	advisedEnd    int64
}

// spanKeyRoom is how long a key a span read reads past; a frame with a
// longer one is read whole. spanHeadsPiece is the memory span reads share.
const (
	spanKeyRoom    = 64
	spanHeadsPiece = 4 << 10
)

// freshPiece bounds how many bytes of frames a fresh reader reads into one
// piece of memory: small records share a piece, so that they cost one
// allocation between them, and a record kept alone keeps at most this much
// memory alive besides its own; a larger frame gets a piece of its own.
const freshPiece = 64 << 10

// logRecord is a record read from the log. Its key and data alias the
// reader's memory; with a span read, data holds the first head bytes of
// the record's data only and rest the remainder, left in its file.
type logRecord struct {
	ts        int64
	key, data []byte
	rest      disclient.FileSpan
}

// errCorruptRecord is a record whose checksum, frame or place in the log
// does not match its reference.
func errCorruptRecord(seq int64, ref recordRef) error {
	return fmt.Errorf("corrupt record %d in log segment %d at %d", seq, ref.seg, ref.off)
}

// read returns the record at refs[0]: a record frame checked to be record
// seq of partition part of the stream with key skey and against its
// checksum, a run member against its data's checksum, unless it is read
// as a span (spanMin: then only a record frame's length and place are
// checked). refs are the records the caller will read
// next, in order: a window refilled here covers those that lie one after
// the other in the log. Unless fresh, the record is valid until the next
// read.
func (r *logReader) read(refs []recordRef, skey uint64, part int32, seq int64) (logRecord, error) {
	ref := refs[0]
	end := ref.off + int64(ref.n)
	inKept := ref.seg == r.keptSeg && ref.off >= r.keptOff && end <= r.keptOff+int64(len(r.kept))
	if r.fresh && !inKept && r.spans(ref) {
		rec, spanned, err := r.readSpan(refs, skey, part, seq)
		if err != nil || spanned {
			return rec, err
		}
	}
	w, base := r.buf, r.off
	switch {
	case r.fresh:
		if !inKept {
			if err := r.readPiece(refs); err != nil {
				return logRecord{}, err
			}
		}
		w, base = r.kept, r.keptOff
	case ref.seg != r.seg || ref.off < r.off || end > r.off+int64(len(r.buf)):
		if err := r.fill(ref, contiguous(refs)); err != nil {
			return logRecord{}, err
		}
		w, base = r.buf, r.off
	}
	b := w[ref.off-base : end-base]
	if ref.member {
		if crc32.Checksum(b, castagnoli) != ref.crc {
			return logRecord{}, errCorruptRecord(seq, ref)
		}
		return logRecord{ts: ref.ts, data: b}, nil
	}
	fskey, fpart, fseq, value, ok := checkFrame(b)
	var rec logRecord
	if ok {
		rec.ts, rec.key, rec.data, ok = decodeRecordValue(value)
	}
	if !ok || fskey != skey || fpart != part || fseq != seq {
		return logRecord{}, errCorruptRecord(seq, ref)
	}
	return rec, nil
}

// spans reports whether the record of ref may have more than spanMin
// bytes of data (its key counted), to be read with readSpan.
func (r *logReader) spans(ref recordRef) bool {
	return r.spanMin > 0 && ref.dataLen() > r.spanMin
}

// readSpan reads the record at refs[0] up to the first head bytes of its
// data and hands out the rest as a span of the segment's file, which the
// caller sends from the file rather than reading it. It reports false,
// having read nothing, for a record with a key longer than spanKeyRoom or
// no more data than head; read then reads it whole. The kernel is told to
// read ahead what the run of records at refs[0] holds, so that the spans
// are in the page cache when they are sent.
func (r *logReader) readSpan(refs []recordRef, skey uint64, part int32, seq int64) (rec logRecord, ok bool, err error) {
	ref := refs[0]
	if ref.member && int(ref.n) <= r.head {
		return logRecord{}, false, nil
	}
	r.log.filesMu.RLock()
	defer r.log.filesMu.RUnlock()
	f := r.log.files[ref.seg]
	if f == nil {
		return logRecord{}, false, errSegmentGone
	}
	if ref.seg != r.advisedSeg || ref.off >= r.advisedEnd {
		r.advisedSeg, r.advisedEnd = ref.seg, ref.off+contiguous(refs)
		adviseWillNeed(f, ref.off, r.advisedEnd-ref.off)
	}
	if ref.member {
		head := ref.head
		if len(head) < r.head {
			// Not kept in the reference: read from the log.
			if head, err = r.readHead(f, ref, r.head); err != nil {
				return logRecord{}, false, err
			}
			r.heads = r.heads[:len(r.heads)+r.head]
		}
		rest := disclient.FileSpan{File: f, Off: ref.off + int64(r.head), Len: int(ref.n) - r.head}
		return logRecord{ts: ref.ts, data: head[:r.head:r.head], rest: rest}, true, nil
	}
	want := min(int(ref.n), framePrefixLen+8+binary.MaxVarintLen64+spanKeyRoom+r.head)
	buf, err := r.readHead(f, ref, want)
	if err != nil {
		return logRecord{}, false, err
	}
	if int(binary.BigEndian.Uint32(buf)) != int(ref.n)-frameHeaderLen {
		return logRecord{}, false, errCorruptRecord(seq, ref)
	}
	payload := buf[frameHeaderLen:]
	_, _, data, valid := decodeRecordValue(payload[20:])
	at := want - len(data) // where the data starts in the frame
	size := int(ref.n) - at
	if !valid || len(data) < r.head || size <= r.head {
		return logRecord{}, false, nil
	}
	if binary.BigEndian.Uint64(payload) != skey || int32(binary.BigEndian.Uint32(payload[8:])) != part ||
		int64(binary.BigEndian.Uint64(payload[12:])) != seq {
		return logRecord{}, false, errCorruptRecord(seq, ref)
	}
	used := at + r.head
	r.heads = r.heads[:len(r.heads)+used]
	rec.ts, rec.key, rec.data, _ = decodeRecordValue(payload[20 : used-frameHeaderLen : used-frameHeaderLen])
	rec.rest = disclient.FileSpan{File: f, Off: ref.off + int64(used), Len: size - r.head}
	return rec, true, nil
}

// readHead reads want bytes of f from ref.off on into the free end of the
// reader's heads piece; the caller keeps what it uses by extending
// r.heads over it.
func (r *logReader) readHead(f *os.File, ref recordRef, want int) ([]byte, error) {
	if cap(r.heads)-len(r.heads) < want {
		r.heads = make([]byte, 0, max(want, spanHeadsPiece))
	}
	buf := r.heads[len(r.heads) : len(r.heads)+want]
	n, err := f.ReadAt(buf, ref.off)
	if n < want {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read record log segment %d at %d: %w", ref.seg, ref.off, err)
	}
	return buf, nil
}

// readPiece reads the frames at the start of refs that lie one after the
// other in one segment, as many whole ones as fit in freshPiece bytes
// (refs[0]'s at least) and up to one to be read as a span, straight into a
// new kept piece: read through the window they would be copied once more.
func (r *logReader) readPiece(refs []recordRef) error {
	n := int64(refs[0].n)
	for i := 1; i < len(refs) && refs[i].seg == refs[0].seg && refs[i].off == refs[0].off+n && n+int64(refs[i].n) <= freshPiece && !r.spans(refs[i]); i++ {
		n += int64(refs[i].n)
	}
	buf := make([]byte, n)
	got, err := r.readAt(buf, refs[0])
	if err != nil {
		return err
	}
	r.kept, r.keptSeg, r.keptOff = buf[:got], refs[0].seg, refs[0].off
	return nil
}

// readAt reads len(buf) bytes of segment ref.seg from ref.off on into buf,
// and fails unless it gets at least ref's frame; it returns how many it got.
func (r *logReader) readAt(buf []byte, ref recordRef) (int, error) {
	r.log.filesMu.RLock()
	f := r.log.files[ref.seg]
	if f == nil {
		r.log.filesMu.RUnlock()
		return 0, errSegmentGone
	}
	n, err := f.ReadAt(buf, ref.off)
	r.log.filesMu.RUnlock()
	if n >= int(ref.n) {
		return n, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, fmt.Errorf("read record log segment %d at %d: %w", ref.seg, ref.off, err)
}

// fill reads span bytes (at least the frame) from ref on into the window.
func (r *logReader) fill(ref recordRef, span int64) error {
	want := int(max(span, int64(ref.n)))
	r.buf = slices.Grow(r.buf[:0], want)[:want]
	n, err := r.readAt(r.buf, ref)
	r.buf, r.seg, r.off = r.buf[:n], ref.seg, ref.off
	return err
}

// removeBefore deletes every segment older than id, never the active one.
func (l *recordLog) removeBefore(id uint64) error {
	l.mu.Lock()
	id = min(id, l.activeID)
	l.mu.Unlock()
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	var first error
	for seg := range l.files {
		if seg >= id {
			continue
		}
		// Not closed: spans handed out may still be read from it
		// (disclient.SpanGetter). The file is closed once the last
		// reference to it is gone (os.File's cleanup), its space freed
		// then.
		delete(l.files, seg)
		if err := os.Remove(l.segmentPath(seg)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// activeSegment is the id appends go to.
func (l *recordLog) activeSegment() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.activeID
}

// cutFilled ends appends to an active segment made from a spare: it
// closes its O_DIRECT descriptor and cuts the zeros off its end. Needs mu.
func (l *recordLog) cutFilled() error {
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

// close abandons a spare under way, deletes a spare, cuts the active
// segment to its frames and closes every segment.
func (l *recordLog) close() error {
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
		_ = os.Remove(l.sparePath())
		l.spare, l.spareDirect = nil, nil
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
	return first
}
