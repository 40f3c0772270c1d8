package dislocal

import (
	"errors"
	"os"
	"path/filepath"
	"time"
	"unsafe"
)

// Spare segments. With SyncAlways every acknowledged write waits for an
// fsync of the active segment. An fsync after an append that grows the file
// also commits the file's new size and its newly allocated blocks through
// the file system's journal; an fsync after overwriting blocks that were
// already written and made durable commits only the data, and on the disks
// measured took about half as long (docs/benchmarks.md, "Spare segments").
// So while a segment fills, a goroutine prepares the next one: it writes a
// file of segmentBytes zeros, a chunk at a time, keeping ahead of the
// active segment's size by half as much again and spareLead more, so that
// the zeros reach the disk in small pieces spread over the segment's life,
// between the log's own fsyncs, rather than in one burst in front of them,
// and the spare is ready when the segment is two-thirds full. Where the
// file system allows, the zeros are written with O_DIRECT, straight from
// one buffer to the disk: through the page cache they cost a kernel copy
// and page allocation per byte, up to a fifth of the gateway's CPU under a
// fast producer (docs/benchmarks.md), and each chunk would have to be
// written back before the next. Blocks written that way are on the disk but
// not in the page cache, and a write that ends inside such a page makes the
// kernel read the page first; so appends to a segment made from a spare pad
// their frames with zeros to the next page boundary (writeFrames), and the
// next append, which starts in that page, finds it cached. The roll renames
// the spare into place. A segment made from a spare keeps zeros after its
// frames until it is rolled or the log is closed, when it is cut to its
// frames; after a crash, open finds the frames' end as it finds a torn tail
// (a zero length ends the scan, see scanFrames) and cuts it there. A spare
// that is not ready when the segment rolls is not waited for: the next
// segment is created empty, as without spares, and rolls onto the spare as
// soon as it is ready, as the first segment after open does.
const (
	// spareName is the file a spare is prepared in. It is not a segment
	// name, so open never takes a spare for data; open deletes it.
	spareName = "spare"
	// spareChunk is how many zeros are written at a time.
	spareChunk = 1 << 20
	// pageBytes is the alignment O_DIRECT writes need and the page size
	// appends to a spare-made segment pad to.
	pageBytes = 4096
	// spareLead is how far the spare keeps ahead of 1.5 times the active
	// segment's size.
	spareLead = 8 << 20
	// While the spare is far enough ahead, its preparation sleeps, from
	// sparePauseMin doubling to sparePauseMax while the log is idle.
	sparePauseMin = 5 * time.Millisecond
	sparePauseMax = 100 * time.Millisecond
)

// errSpareAbandoned ends the preparation of a spare when the log closes.
var errSpareAbandoned = errors.New("record log closed")

func (l *recordLog) sparePath() string { return filepath.Join(l.dir, spareName) }

// prepareSpare starts preparing the next segment unless the log makes no
// spares, one is ready or being prepared, or the log is closing. Needs mu.
func (l *recordLog) prepareSpare() {
	if !l.spares || l.spare != nil || l.preparing || l.closing {
		return
	}
	l.preparing = true
	l.prepared.Add(1)
	go func() {
		defer l.prepared.Done()
		f, err := l.writeSpare()
		l.mu.Lock()
		l.preparing = false
		if err == nil && l.closing {
			err = errSpareAbandoned
		}
		if err == nil {
			l.spare = f
		}
		l.mu.Unlock()
		if err == nil {
			return
		}
		if f != nil {
			_ = f.Close()
		}
		_ = os.Remove(l.sparePath())
		if !errors.Is(err, errSpareAbandoned) {
			l.log.Warn().Err(err).Msg("dislocal: preparing a spare record log segment failed; the next segment starts empty")
		}
	}()
}

// zeroPage is what pads an append to a page boundary.
var zeroPage [pageBytes]byte

// writeSpare writes the spare file full of zeros (segmentBytes rounded up
// to whole pages), makes it durable and returns it opened for appends.
func (l *recordLog) writeSpare() (*os.File, error) {
	f, direct, err := createSpareFile(l.sparePath())
	if err != nil {
		return nil, err
	}
	size := (l.segmentBytes + pageBytes - 1) &^ (pageBytes - 1)
	zeros := alignedZeros(int(min(spareChunk, size)))
	timer := time.NewTimer(0)
	defer timer.Stop()
	pause := sparePauseMin
	for off := int64(0); off < size; {
		if l.spareAhead(off, size) {
			timer.Reset(pause)
			select {
			case <-timer.C:
			case <-l.abandon:
				return f, errSpareAbandoned
			}
			pause = min(2*pause, sparePauseMax)
			continue
		}
		select {
		case <-l.abandon:
			return f, errSpareAbandoned
		default:
		}
		pause = sparePauseMin
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return f, err
		}
		if !direct {
			// Through the page cache: written back now, a chunk at a
			// time, not by the kernel in a burst later.
			if err := writeBack(f, off, n); err != nil {
				return f, err
			}
		}
		off += n
	}
	if err := f.Sync(); err != nil || !direct {
		return f, err
	}
	// Appends go through the page cache: reopen without O_DIRECT.
	if err := f.Close(); err != nil {
		return nil, err
	}
	return os.OpenFile(l.sparePath(), os.O_RDWR, 0)
}

// alignedZeros returns n zero bytes starting on a page boundary, as
// O_DIRECT writes need.
func alignedZeros(n int) []byte {
	b := make([]byte, n+pageBytes)
	skip := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (pageBytes - 1))
	return b[skip : skip+n]
}

// writeFrames writes frames to the active segment at off; in a segment
// made from a spare, padded with zeros to the next page boundary in the
// same write (see the comment at the top of this file). Needs mu.
func (l *recordLog) writeFrames(frames []byte, off int64) (int, error) {
	pad := int(-(off + int64(len(frames))) & (pageBytes - 1))
	if !l.filled || pad == 0 {
		return l.active.WriteAt(frames, off)
	}
	n, err := writeAtv(l.active, [][]byte{frames, zeroPage[:pad]}, off)
	return min(n, len(frames)), err
}

// spareAhead reports whether a spare of size bytes, zeroed up to done, is
// far enough ahead of the active segment for its preparation to wait.
func (l *recordLog) spareAhead(done, size int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return done >= min(size, l.size+l.size/2+spareLead)
}
