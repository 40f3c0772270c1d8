package recordlog

import (
	"errors"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// Spare segments. With SyncAlways every acknowledged write waits for an
// fsync of the active segment. An fsync after an append that grows the file
// also commits the file's new size and its newly allocated blocks through
// the file system's journal; an fsync after overwriting blocks that were
// already written and made durable commits only the data, and on the disks
// measured took about half as long (docs/design.md §10).
// So while a segment fills, a goroutine prepares the next one: it writes a
// file of segmentBytes zeros, a chunk at a time (spareStep). While no append
// came for spareIdle, to a log that has taken a quarter of a segment since
// it opened, it writes them at the disk's speed: nothing waits for
// the disk then, and a burst of appends after the pause finds the spare
// ready. While appends come, the zeros and the log's fsyncs share the disk,
// and an fsync that queues behind a chunk of zeros waits for it: under a
// producer of 1 KiB records in 16 KiB batches, zeros written alongside at
// half again the appends' rate cost a quarter of its throughput
// (docs/design.md §10). So then they
// go in small chunks, at most spareBusyRate bytes a second, and only while
// the spare is less than half as much again and spareLead ahead of the
// active segment's size: a slow writer, whose fsyncs gain most from zeros
// written before, finds the spare ready when its segment is two-thirds
// full; a fast one fills segments faster than that and rolls onto the spare
// when it is ready, as below. Where the file system
// allows, the zeros are written with O_DIRECT, straight from one buffer to
// the disk: through the page cache they cost a kernel copy and page
// allocation per byte, about a quarter of the gateway's CPU under a fast
// producer (docs/design.md §10), and each chunk would have to be written
// back before the next. Appends to such a segment are written as whole pages
// from an aligned staging buffer (writeDirect): the segment's last, partial
// page again, then the frames, then zeros to the next page boundary, so that
// no write ends inside a page that is on the disk but not cached, which the
// kernel would first have to read. Those of directMin bytes or more go with
// O_DIRECT too: the kernel's copy of every record into the page cache was a
// third of the gateway's CPU under a producer of large batches, and writing
// the pages back made each fsync wait for them; a direct write leaves the
// fsync only the disk's cache to flush. Every file system that takes the
// spare's O_DIRECT writes takes these, as its blocks are at most a page.
// Reads go through another descriptor without O_DIRECT, and what a direct
// append wrote is read back into the page cache in the background (warm.go).
// Where the file system refuses O_DIRECT, appends pad their frames with
// zeros to the next page boundary in the same write, for the same reason.
// The roll renames the spare into place. A segment made from a spare keeps
// zeros after its frames until it is rolled or the log is closed, when it is
// cut to its frames; after a crash, open finds the frames' end as it finds a
// torn tail (a zero length ends the scan, see scanFrames) and cuts it there.
// A spare that is not ready when the segment rolls is not waited for: the
// next segment is created empty, as without spares, and rolls onto the spare
// as soon as it is ready, as the first segment after open does.
const (
	// spareName is the file a spare is prepared in. It is not a segment
	// name, so open never takes a spare for data; open deletes it.
	spareName = "spare"
	// spareChunk is how many zeros are written at a time while the log is
	// idle, spareBusyChunk while appends come.
	spareChunk     = 1 << 20
	spareBusyChunk = 128 << 10
	// pageBytes is the alignment O_DIRECT writes need and the page size
	// appends to a spare-made segment pad to.
	pageBytes = 4096
	// directMin is the smallest append written with O_DIRECT; smaller
	// ones go through the page cache. A direct write holds the log's lock
	// until the disk has the bytes, so the small appends of several
	// partitions would wait for each other's writes instead of sharing
	// one fsync; against the page cache, gateway runs with 16 KiB batches
	// measured no gain from it (docs/design.md §10).
	directMin = 256 << 10
	// stageUnit is the step the staging buffer of appends grows by, and
	// stageKeep the most it keeps between appends that need no more.
	stageUnit = 1 << 20
	stageKeep = 4 << 20
	// spareLead is how far the spare keeps ahead of 1.5 times the active
	// segment's size.
	spareLead = 8 << 20
	// While the spare is far enough ahead, its preparation sleeps, from
	// sparePauseMin doubling to sparePauseMax while that lasts.
	sparePauseMin = 5 * time.Millisecond
	sparePauseMax = 100 * time.Millisecond
	// spareIdle is how long after the last append the log counts as idle,
	// once it has taken a segment's 1/spareIdleShare since it opened: a
	// server that takes little (a quiet topic, a test) writes no whole
	// segment of zeros it may never use.
	spareIdle      = 50 * time.Millisecond
	spareIdleShare = 4
	// spareBusyRate bounds, in bytes a second, the zeros written while
	// appends come: 16 MiB/s, a few percent of the disks measured.
	spareBusyRate = 16 << 20
)

// createSpareFile creates (or empties) the spare file, opened with
// O_DIRECT (direct) unless the file system refuses it, as tmpfs does.
func (l *Log) createSpareFile() (f logfs.File, direct bool, err error) {
	const flags = os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if logfs.Direct != 0 {
		if f, err = l.fs.OpenFile(l.sparePath(), flags|logfs.Direct, 0o600); err == nil {
			return f, true, nil
		}
	}
	f, err = l.fs.OpenFile(l.sparePath(), flags, 0o600)
	return f, false, err
}

// errSpareAbandoned ends the preparation of a spare when the log closes.
var errSpareAbandoned = errors.New("record log closed")

func (l *Log) sparePath() string { return filepath.Join(l.dir, spareName) }

// prepareSpare starts preparing the next segment unless the log makes no
// spares, one is ready or being prepared, or the log is closing. Needs mu.
func (l *Log) prepareSpare() {
	if !l.spares || l.spare != nil || l.preparing || l.closing {
		return
	}
	l.preparing = true
	l.prepared.Add(1)
	go func() {
		defer l.prepared.Done()
		f, direct, err := l.writeSpare()
		l.mu.Lock()
		l.preparing = false
		if err == nil && l.closing {
			err = errSpareAbandoned
		}
		if err == nil {
			l.spare, l.spareDirect = f, direct
		}
		l.mu.Unlock()
		if err == nil {
			return
		}
		closeFiles(f, direct)
		_ = l.fs.Remove(l.sparePath())
		if !errors.Is(err, errSpareAbandoned) {
			l.log.Warn().Err(err).Msg("dislocal: preparing a spare record log segment failed; the next segment starts empty")
		}
	}()
}

// zeroPage is what pads an append to a page boundary.
var zeroPage [pageBytes]byte

// writeSpare writes the spare file full of zeros (segmentBytes rounded up
// to whole pages), makes it durable and returns it opened, and where the
// file system allows O_DIRECT, opened a second time with it for appends
// (appendFile). On failure f is what there is to close.
func (l *Log) writeSpare() (f, appendFile logfs.File, err error) {
	f, direct, err := l.createSpareFile()
	if err != nil {
		return nil, nil, err
	}
	size := (l.segmentBytes + pageBytes - 1) &^ (pageBytes - 1)
	zeros := alignedZeros(int(min(spareChunk, size)))
	timer := time.NewTimer(0)
	defer timer.Stop()
	// sleep waits d unless the log closes first.
	sleep := func(d time.Duration) bool {
		timer.Reset(d)
		select {
		case <-timer.C:
			return true
		case <-l.abandon:
			return false
		}
	}
	pause := sparePauseMin
	for off := int64(0); off < size; {
		chunk, after := l.spareStep(off, size)
		if chunk == 0 {
			if !sleep(pause) {
				return f, nil, errSpareAbandoned
			}
			pause = min(2*pause, sparePauseMax)
			continue
		}
		select {
		case <-l.abandon:
			return f, nil, errSpareAbandoned
		default:
		}
		pause = sparePauseMin
		n := min(chunk, size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return f, nil, err
		}
		if !direct {
			// Through the page cache: written back now, a chunk at a
			// time, not by the kernel in a burst later.
			if err := logfs.WriteBack(f, off, n); err != nil {
				return f, nil, err
			}
		}
		off += n
		if after > 0 && !sleep(after) {
			return f, nil, errSpareAbandoned
		}
	}
	if err := f.Sync(); err != nil || !direct {
		return f, nil, err
	}
	// Appends keep the O_DIRECT descriptor (writeDirect); reads, fsyncs
	// and the cut go through one without it.
	r, err := l.fs.OpenFile(l.sparePath(), os.O_RDWR, 0)
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return r, f, nil
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
// same write (see the comment at the top of this file), and with O_DIRECT
// where the spare was written so. Needs mu.
func (l *Log) writeFrames(frames []byte, off int64) (int, error) {
	if l.direct != nil {
		return l.writeDirect(frames, off)
	}
	pad := int(-(off + int64(len(frames))) & (pageBytes - 1))
	if !l.filled || pad == 0 {
		return l.active.WriteAt(frames, off)
	}
	n, err := logfs.WriteAtv(l.active, [][]byte{frames, zeroPage[:pad]}, off)
	return min(n, len(frames)), err
}

// writeDirect writes frames at off to a segment with an O_DIRECT
// descriptor: through it when there are directMin bytes or more, through
// the page cache otherwise. A direct write must start and end on page
// boundaries and come from memory that starts on one, so both go through
// the staging buffer, which starts with the bytes of the segment's last,
// partial page (from stageStart up to off): they are written again in
// front of the frames, and zeros after them up to the next boundary. Written
// through the page cache, whole pages need no read of a page a direct
// write left on the disk only. Needs mu.
func (l *Log) writeDirect(frames []byte, off int64) (int, error) {
	if off-l.stageStart >= pageBytes {
		// Keep only the last partial page of what was written before.
		start := off &^ (pageBytes - 1)
		copy(l.stage, l.stage[start-l.stageStart:off-l.stageStart])
		l.stageStart = start
	}
	tail := int(off - l.stageStart)
	end := tail + len(frames)
	padded := (end + pageBytes - 1) &^ (pageBytes - 1)
	// Grown in whole stageUnits to what an append needs, and back to
	// stageKeep after one larger, so that a rare large append does not
	// leave its buffer behind for good.
	size := (padded + stageUnit - 1) &^ (stageUnit - 1)
	if size > len(l.stage) || len(l.stage) > stageKeep && size <= stageKeep {
		stage := alignedZeros(max(size, min(len(l.stage), stageKeep)))
		copy(stage, l.stage[:tail])
		l.stage = stage
	}
	copy(l.stage[tail:], frames)
	clear(l.stage[end:padded])
	f := l.direct
	if len(frames) < directMin {
		f = l.active
	}
	n, err := f.WriteAt(l.stage[:padded], l.stageStart)
	if f == l.direct && err == nil {
		l.warmLocked(l.stageStart, int64(padded))
	}
	return min(max(n-tail, 0), len(frames)), err
}

// spareStep decides the next step of preparing a spare of size bytes,
// zeroed up to done (see the comment at the top of this file): how many
// zeros to write next, none for a pause, and how long to wait after them.
func (l *Log) spareStep(done, size int64) (chunk int64, after time.Duration) {
	l.mu.Lock()
	idle := l.appended >= l.segmentBytes/spareIdleShare && time.Since(l.lastAppend) >= spareIdle
	active := l.size
	l.mu.Unlock()
	return spareStep(idle, done, size, active)
}

// spareStep is Log.spareStep for a log that is idle or not, whose
// active segment holds active bytes.
func spareStep(idle bool, done, size, active int64) (chunk int64, after time.Duration) {
	switch {
	case idle:
		return spareChunk, 0
	case done >= min(size, active+active/2+spareLead):
		return 0, 0
	default:
		return spareBusyChunk, spareBusyChunk * time.Second / spareBusyRate
	}
}
