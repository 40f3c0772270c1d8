package recordlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// Recovery. A bad frame (a length that runs past the end, a wrong
// checksum) is one of two things, and recovery tells them apart
// (docs/dis-embedded.md, "Crashes and recovery"):
//
//   - A torn tail: the end of the newest segment, written after its last
//     successful fsync, that a crash left partly on the disk. Nothing in it
//     was acknowledged under SyncAlways, so recovery cuts it off.
//   - Damage: bytes that were durable and changed since, or a bad frame
//     that valid frames follow. Recovery never cuts it: it reports it
//     (Damage, an error in the log, the count the server exports) and
//     leaves it where it is, its records quarantined: a read of one gets
//     a CorruptError naming it, every other record stays readable.
//
// How far the newest segment is known durable is the marker's: a small
// file, written after each successful fsync with the position it made
// durable. It is not fsynced itself (a marker write the crash lost leaves an
// older one, which claims less), except when the log stops taking writes:
// then it is fsynced with a failure flag and the position the next open must
// cut the active segment at, because the page cache may still hold pages a
// failed fsync never wrote and would serve them as if they were on the disk.
// Without a flagged marker the next open still drops the page cache of the
// part not known durable before reading it (logfs.DropCache).
const (
	markerName = "synced"
	// markerSlot is where each of the marker's two copies lies: written in
	// turn, so that a torn write leaves the other whole.
	markerSlot = 512
	markerLen  = 8 + 8 + 8 + 1 + 4
	// scanChunk is how much a scan reads at a time.
	scanChunk = 1 << 20
	// maxRecordFrame bounds the length of a record frame a search for the
	// next valid frame considers (a record holds at most 1 MiB of data),
	// maxPartition its partition: random bytes seldom pass both, so the
	// search seldom computes a checksum in vain.
	maxRecordFrame = 2 << 20
	maxPartition   = 1 << 16
	// defaultScanRate bounds how fast the background scan of the older
	// segments reads: 64 MiB/s, a small part of a disk's bandwidth.
	defaultScanRate = 64 << 20
)

// mark is what the marker says: end bytes of segment seg are durable, and
// with failed, the log stopped taking writes and segment seg is to be cut
// at end.
type mark struct {
	seg    uint64
	end    int64
	failed bool
}

// openMarker opens (or creates) the marker and returns what it says, the
// zero mark when nothing valid.
func (l *Log) openMarker() (mark, error) {
	f, err := l.fs.OpenFile(filepath.Join(l.dir, markerName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return mark{}, err
	}
	l.marker = f
	var best mark
	var buf [markerLen]byte
	for slot := range 2 {
		if n, _ := f.ReadAt(buf[:], int64(slot*markerSlot)); n < markerLen {
			continue
		}
		if crc32.Checksum(buf[:markerLen-4], castagnoli) != binary.BigEndian.Uint32(buf[markerLen-4:]) {
			continue
		}
		gen := binary.BigEndian.Uint64(buf[:])
		if gen <= l.markGen {
			continue
		}
		l.markGen = gen
		best = mark{seg: binary.BigEndian.Uint64(buf[8:]), end: int64(binary.BigEndian.Uint64(buf[16:])), failed: buf[24] == 1}
	}
	return best, nil
}

// writeMarker records that end bytes of segment seg are durable, with
// failed that the log stopped and the segment is to be cut there; a failed
// mark is fsynced.
func (l *Log) writeMarker(seg uint64, end int64, failed bool) error {
	if l.marker == nil {
		return nil
	}
	l.markMu.Lock()
	defer l.markMu.Unlock()
	l.markGen++
	var buf [markerLen]byte
	binary.BigEndian.PutUint64(buf[:], l.markGen)
	binary.BigEndian.PutUint64(buf[8:], seg)
	binary.BigEndian.PutUint64(buf[16:], uint64(end))
	if failed {
		buf[24] = 1
	}
	binary.BigEndian.PutUint32(buf[markerLen-4:], crc32.Checksum(buf[:markerLen-4], castagnoli))
	if _, err := l.marker.WriteAt(buf[:], int64(l.markGen%2)*markerSlot); err != nil {
		return err
	}
	if failed {
		return l.marker.Sync()
	}
	return nil
}

// recoverNewest recovers segment id, the newest, as the comment at the top
// of this file says, makes it durable and returns how far references into
// it stay valid: the end of its last valid frame, or of the part known
// durable when damage ends that.
func (l *Log) recoverNewest(id uint64, m mark) (int64, error) {
	f := l.files[id]
	size, err := fileSize(f)
	if err != nil {
		return 0, err
	}
	durable := int64(0)
	if m.seg == id {
		durable = min(m.end, size)
	}
	switch {
	case m.failed && m.seg == id && size > durable:
		l.log.Error().Str("file", f.Name()).Int64("cut_at", durable).Int64("bytes", size-durable).
			Msg("dislocal: the record log had stopped taking writes; cutting what was written after its last successful fsync (never acknowledged)")
		if err := f.Truncate(durable); err != nil {
			return 0, err
		}
		size = durable
	case size > durable:
		if err := logfs.DropCache(f, durable, size-durable); err != nil {
			return 0, err
		}
	}
	tail, err := scanSegment(f, 0, size, nil, func(off, end int64) {
		l.addDamage(Damage{Seg: id, Path: f.Name(), Off: off, End: end})
	})
	if err != nil {
		return 0, err
	}
	cut := tail
	if tail < durable {
		// Durable bytes nothing valid follows are damage all the same.
		l.addDamage(Damage{Seg: id, Path: f.Name(), Off: tail, End: durable})
		cut = durable
	}
	if cut < size {
		if err := f.Truncate(cut); err != nil {
			return 0, err
		}
	}
	return cut, f.Sync()
}

func fileSize(f logfs.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Damage is a range of a segment that holds no valid frame where records
// were (docs/dis-embedded.md, "Damaged records").
type Damage struct {
	Seg      uint64
	Path     string
	Off, End int64
}

func (d Damage) String() string {
	return fmt.Sprintf("%s bytes %d to %d", d.Path, d.Off, d.End)
}

// CorruptError is a read of a record that lies in damaged bytes. It names
// where, so that an operator can move readers past it.
type CorruptError struct {
	Seq int64
	Damage
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("record %d is damaged in the record log (%s); move readers past it (docs/dis-embedded.md, Damaged records)", e.Seq, e.Damage)
}

// addDamage records d unless it overlaps damage known already, and logs it
// as an error.
func (l *Log) addDamage(d Damage) {
	l.damageMu.Lock()
	for _, k := range l.damage {
		if k.Seg == d.Seg && k.Off < d.End && d.Off < k.End {
			l.damageMu.Unlock()
			return
		}
	}
	l.damage = append(l.damage, d)
	l.damageFound++
	l.hasDamage.Store(true)
	l.damageMu.Unlock()
	l.log.Error().Str("file", d.Path).Int64("from", d.Off).Int64("to", d.End).
		Msg("dislocal: record log damaged; its records there cannot be read, every other record can (docs/dis-embedded.md, Damaged records)")
}

// damaged is the known damage that bytes [off, end) of segment seg
// overlap, if any.
func (l *Log) damaged(seg uint64, off, end int64) (Damage, bool) {
	if !l.hasDamage.Load() {
		return Damage{}, false
	}
	l.damageMu.RLock()
	defer l.damageMu.RUnlock()
	for _, d := range l.damage {
		if d.Seg == seg && d.Off < end && off < d.End {
			return d, true
		}
	}
	return Damage{}, false
}

// forgetDamage drops the damage of the segments before id, deleted.
func (l *Log) forgetDamage(id uint64) {
	l.damageMu.Lock()
	defer l.damageMu.Unlock()
	l.damage = slices.DeleteFunc(l.damage, func(d Damage) bool { return d.Seg < id })
	l.hasDamage.Store(len(l.damage) > 0)
}

// Damaged lists the damage known in the segments there are, what readiness
// reports.
func (l *Log) Damaged() []Damage {
	l.damageMu.RLock()
	defer l.damageMu.RUnlock()
	return slices.Clone(l.damage)
}

// DamageFound counts the damaged ranges found since open, deleted
// segments' included: what the server exports as a metric.
func (l *Log) DamageFound() int64 {
	l.damageMu.RLock()
	defer l.damageMu.RUnlock()
	return l.damageFound
}

// errScanStopped ends the background scan when the log closes.
var errScanStopped = errors.New("record log closed")

// scanOlder scans the segments ids, all but the newest found at open, for
// damage in the background, at most scanRate bytes a second, so that it is
// reported before a reader meets it. ScanDone waits for it.
func (l *Log) scanOlder(ids []uint64) {
	l.scanned.Go(func() {
		for _, id := range ids {
			f := l.segmentFile(id)
			if f == nil {
				continue
			}
			size, err := fileSize(f)
			if err == nil {
				var tail int64
				tail, err = l.scanPaced(f, size, func(off, end int64) {
					l.addDamage(Damage{Seg: id, Path: f.Name(), Off: off, End: end})
				})
				if err == nil && tail < size {
					l.addDamage(Damage{Seg: id, Path: f.Name(), Off: tail, End: size})
				}
			}
			if errors.Is(err, errScanStopped) {
				return
			}
			if err != nil && l.segmentFile(id) != nil {
				l.log.Warn().Err(err).Str("file", f.Name()).Msg("dislocal: scanning the record log for damage failed")
			}
		}
	})
}

// scanPaced is scanSegment over a whole segment at the scan rate.
func (l *Log) scanPaced(f logfs.File, size int64, onDamage func(off, end int64)) (int64, error) {
	pace := func(n int) error {
		d := time.Duration(0)
		if l.scanRate > 0 {
			d = time.Duration(int64(n) * int64(time.Second) / l.scanRate)
		}
		select {
		case <-l.stopScan:
			return errScanStopped
		case <-time.After(d):
			return nil
		}
	}
	return scanWindow(&window{f: f, pace: pace}, 0, size, nil, onDamage)
}

// ScanDone waits until the background scan of the older segments ended.
func (l *Log) ScanDone() { l.scanned.Wait() }

// Scan hands fn every valid frame from offset off of segment seg on, in log
// order, and onDamage, in order among them, each damaged range it steps
// over, which it also records. It returns where the frames end: the
// segment and the end of its last valid frame.
func (l *Log) Scan(seg uint64, off int64, fn func(Frame) error, onDamage func(Damage)) (endSeg uint64, end int64, err error) {
	endSeg, end = seg, off
	for _, id := range l.Segments() {
		if id < seg {
			continue
		}
		f := l.segmentFile(id)
		if f == nil {
			continue
		}
		size, err := fileSize(f)
		if err != nil {
			return 0, 0, err
		}
		start := int64(0)
		if id == seg {
			start = off
		}
		report := func(from, to int64) {
			d := Damage{Seg: id, Path: f.Name(), Off: from, End: to}
			l.addDamage(d)
			onDamage(d)
		}
		var ferr error
		tail, err := scanSegment(f, start, size, func(o int64, buf []byte) {
			if ferr == nil {
				ferr = fn(parseFrame(id, o, buf))
			}
		}, report)
		if err == nil {
			err = ferr
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", f.Name(), err)
		}
		if tail < size && id != l.ActiveSegment() {
			report(tail, size)
		}
		endSeg, end = id, tail
	}
	return endSeg, end, nil
}

// scanSegment reads the frames of f in [from, end), handing each valid one
// and its offset to fn (nil: none; the frame is valid until fn returns),
// and onDamage each range of bad bytes a valid frame follows. It returns
// where the last valid frame ends: nothing valid follows there.
func scanSegment(f logfs.File, from, end int64, fn func(off int64, frame []byte), onDamage func(off, end int64)) (int64, error) {
	return scanWindow(&window{f: f}, from, end, fn, onDamage)
}

func scanWindow(w *window, from, end int64, fn func(off int64, frame []byte), onDamage func(off, end int64)) (int64, error) {
	off := from
	for off < end {
		frame, err := frameAt(w, off, end)
		if err != nil {
			return 0, err
		}
		if frame != nil {
			if fn != nil {
				fn(off, frame)
			}
			off += int64(len(frame))
			continue
		}
		next, err := findFrame(&window{f: w.f, pace: w.pace}, w.f, off+1, end)
		if err != nil {
			return 0, err
		}
		if next < 0 {
			break
		}
		onDamage(off, next)
		off = next
	}
	return off, nil
}

// frameAt is the valid frame at off, nil for none.
func frameAt(w *window, off, end int64) ([]byte, error) {
	if off+frameHeaderLen > end {
		return nil, nil
	}
	hdr, err := w.get(off, frameHeaderLen)
	if err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(hdr) &^ runFlag)
	if n < framePrefixLen-frameHeaderLen || off+frameHeaderLen+n > end {
		return nil, nil
	}
	buf, err := w.get(off, int(frameHeaderLen+n))
	if err != nil || !frameValid(buf) {
		return nil, err
	}
	return buf, nil
}

// findFrame is where the first valid frame at or after from starts in
// [from, end), -1 for none. It looks at every offset: runs of zeros (a
// spare's) are skipped a word at a time, and only a plausible header is
// checked whole.
func findFrame(w *window, f logfs.File, from, end int64) (int64, error) {
	check := &window{f: f}
	for p := from; p+frameHeaderLen <= end; {
		chunk, err := w.get(p, int(min(scanChunk, end-p)))
		if err != nil {
			return -1, err
		}
		i := 0
		for ; i+frameHeaderLen <= len(chunk); i++ {
			if binary.BigEndian.Uint32(chunk[i:]) == 0 {
				// A length inside a run of zeros is 0: go to the last
				// offset whose length reaches past the run.
				i += max(zeroRun(chunk[i:])-4, 0)
				continue
			}
			if !plausible(chunk[i:], end-p-int64(i)) {
				continue
			}
			frame, err := frameAt(check, p+int64(i), end)
			if err != nil {
				return -1, err
			}
			if frame != nil {
				return p + int64(i), nil
			}
		}
		p += int64(i)
	}
	return -1, nil
}

// zeroRun is how many zero bytes b starts with.
func zeroRun(b []byte) int {
	i := 0
	for i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == 0 {
		i += 8
	}
	for i < len(b) && b[i] == 0 {
		i++
	}
	return i
}

// plausible reports whether b may start a frame of at most room bytes.
func plausible(b []byte, room int64) bool {
	word := binary.BigEndian.Uint32(b)
	n := int64(word &^ runFlag)
	if n < framePrefixLen-frameHeaderLen || frameHeaderLen+n > room {
		return false
	}
	if word&runFlag == 0 && n > maxRecordFrame {
		return false
	}
	if len(b) >= frameHeaderLen+12 && binary.BigEndian.Uint32(b[frameHeaderLen+8:]) >= maxPartition {
		return false
	}
	if word&runFlag != 0 && len(b) >= frameHeaderLen+runHeadFixed {
		count := int64(binary.BigEndian.Uint32(b[frameHeaderLen+20:]))
		return count >= 1 && count <= n/runEntryLen
	}
	return true
}

// window reads a file through a buffer; pace, when set, is called with
// each read's size and may stop the reading.
type window struct {
	f    logfs.File
	buf  []byte
	off  int64
	pace func(n int) error
}

// get returns n bytes of the file from off, valid until the next get.
func (w *window) get(off int64, n int) ([]byte, error) {
	if off >= w.off && off+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[off-w.off:][:n], nil
	}
	size := max(n, scanChunk)
	w.buf = slices.Grow(w.buf[:0], size)[:size]
	m, err := w.f.ReadAt(w.buf, off)
	w.buf, w.off = w.buf[:m], off
	if m < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if w.pace != nil {
		if err := w.pace(m); err != nil {
			return nil, err
		}
	}
	return w.buf[:n], nil
}
