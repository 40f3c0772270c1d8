package dislocal

import (
	"errors"
	"os"
	"path/filepath"
	"time"
)

// Spare segments. With SyncAlways every acknowledged write waits for an
// fsync of the active segment. An fsync after an append that grows the file
// also commits the file's new size and its newly allocated blocks through
// the file system's journal; an fsync after overwriting blocks that were
// already written and made durable commits only the data, and on the disks
// measured took about half as long (docs/benchmarks.md, "Spare segments").
// So while a segment fills, a goroutine prepares the next one: it writes a
// file of segmentBytes zeros, a chunk at a time, each chunk written back
// before the next so that the zeros reach the disk in small pieces between
// the log's own fsyncs rather than in one burst in front of them, and
// pauses between chunks while it is well ahead of the active segment. The
// roll renames the spare into place. A segment made from a spare keeps
// zeros after its frames until it is rolled or the log is closed, when it
// is cut to its frames; after a crash, open finds the frames' end as it
// finds a torn tail (a zero length ends the scan, see scanFrames) and cuts
// it there. A spare that is not ready when the segment rolls is simply not
// used: the next segment is created empty, as without spares, and the
// spare serves the roll after.
const (
	// spareName is the file a spare is prepared in. It is not a segment
	// name, so open never takes a spare for data; open deletes it.
	spareName = "spare"
	// spareChunk is how many zeros are written, then written back, at a
	// time.
	spareChunk = 1 << 20
	// sparePause is the pause after a chunk while the spare is more than
	// twice as far along as the active segment.
	sparePause = 5 * time.Millisecond
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

// writeSpare writes the spare file full of zeros and makes it durable.
func (l *recordLog) writeSpare() (*os.File, error) {
	f, err := os.OpenFile(l.sparePath(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, min(spareChunk, l.segmentBytes))
	pause := time.NewTimer(0)
	defer pause.Stop()
	for off := int64(0); off < l.segmentBytes; {
		n := min(int64(len(zeros)), l.segmentBytes-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return f, err
		}
		if err := writeBack(f, off, n); err != nil {
			return f, err
		}
		off += n
		if !l.spareAhead(off) {
			continue
		}
		pause.Reset(sparePause)
		select {
		case <-pause.C:
		case <-l.abandon:
			return f, errSpareAbandoned
		}
	}
	return f, f.Sync()
}

// spareAhead reports whether a spare zeroed up to done is more than twice
// as far along as the active segment, so that its preparation can wait.
func (l *recordLog) spareAhead(done int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return done > 2*l.size
}
