package recordlog

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
)

// BenchmarkRecordLogDurableAppend measures the record log alone under
// SyncAlways's pattern: appends, each followed by an fsync covering it, by
// one writer or by three at once (as three partitions' writers do, sharing
// fsyncs), with and without spare segments (spare.go). 16 MiB segments, so
// that a run rolls onto many of them.
func BenchmarkRecordLogDurableAppend(b *testing.B) {
	for _, size := range []int{16 << 10, 48 << 10, 1 << 20} {
		for _, writers := range []int{1, 3} {
			for _, spares := range []bool{false, true} {
				b.Run(fmt.Sprintf("bytes=%d/writers=%d/spares=%v", size, writers, spares), func(b *testing.B) {
					l, _, _, err := Open(Options{Dir: b.TempDir(), SegmentBytes: 16 << 20, Spares: spares, Logger: zerolog.Nop()})
					if err != nil {
						b.Fatal(err)
					}
					defer func() { _ = l.Close() }()
					frame := AppendFrame(nil, 1, 0, 0, 0, "", bytes.Repeat([]byte{'x'}, size-framePrefixLen-16))
					noIndex := func(uint64, int64) error { return nil }
					b.SetBytes(int64(len(frame)))
					var next atomic.Int64
					var wg sync.WaitGroup
					for range writers {
						wg.Go(func() {
							for next.Add(1) <= int64(b.N) {
								seg, off, err := l.Append(frame, noIndex)
								if err == nil {
									err = l.Sync(seg, off+int64(len(frame)))
								}
								if err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
				})
			}
		}
	}
}
