package recordlog

import "github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"

// Warming the page cache behind direct appends. A write through the page
// cache leaves the records there for the consumers that read them next; a
// direct append (writeDirect) leaves them on the disk only, and consumers
// reading right behind a producer of 1 MB batches then read them from the
// disk at about 0.6 times the speed (docs/design.md §10). So each range a
// direct append wrote is handed to a goroutine that asks the kernel to read
// it back into the page cache (POSIX_FADV_WILLNEED, readahead without a
// copy to user space), off the append's path and outside the log's lock.
// It is a hint: a range the goroutine has no room for is dropped, and on
// systems without the call nothing is read ahead.

// pageRange is a byte range of a segment to read into the page cache.
type pageRange struct {
	f   logfs.File
	off int64
	n   int64
}

// warmBacklog is how many ranges may wait for the warming goroutine.
const warmBacklog = 64

// startWarming starts the goroutine that reads the ranges of warm into
// the page cache; close ends it.
func (l *Log) startWarming() {
	l.warm = make(chan pageRange, warmBacklog)
	l.warmed.Add(1)
	go func() {
		defer l.warmed.Done()
		for r := range l.warm {
			_ = logfs.WillNeed(r.f, r.off, r.n)
		}
	}()
}

// warmLocked hands n bytes of the active segment from off to the warming
// goroutine unless it is busy or the log closing. Needs mu.
func (l *Log) warmLocked(off, n int64) {
	if l.warm == nil || l.closing {
		return
	}
	select {
	case l.warm <- pageRange{f: l.active, off: off, n: n}:
	default:
	}
}
