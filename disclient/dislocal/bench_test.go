package dislocal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

// BenchmarkPutRecords measures PutRecords through HTTP: 100 records of
// 1 KiB per request to one partition, from parallel clients.
func BenchmarkPutRecords(b *testing.B) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		b.Run(string(mode), func(b *testing.B) {
			e := &env{tb: b, dir: b.TempDir(), clock: newFakeClock(), sync: mode}
			e.open()
			defer e.close()
			e.createStream("s", 4)
			const records, size = 100, 1024
			req := disclient.PutRecordsRequest{StreamName: "s"}
			for i := range records {
				req.Records = append(req.Records, disclient.PutRecordsEntry{Data: bytes.Repeat([]byte{byte(i)}, size), PartitionID: "0"})
			}
			body, err := json.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			client := e.hs.Client()
			target := e.hs.URL + v2("/records")
			b.SetBytes(records * size)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(target, "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGetRecords measures GetRecords through HTTP: 1000 records of
// 1 KiB per call, read from a partition of 10000.
func BenchmarkGetRecords(b *testing.B) {
	e := &env{tb: b, dir: b.TempDir(), clock: newFakeClock(), sync: SyncNone}
	e.open()
	defer e.close()
	e.createStream("s", 1)
	const total, perCall, size = 10000, 1000, 1024
	for range total / perCall {
		var recs []disclient.PutRecordsEntry
		for i := range perCall {
			recs = append(recs, disclient.PutRecordsEntry{Data: bytes.Repeat([]byte{byte(i)}, size), PartitionKey: "key"})
		}
		e.put("s", recs...)
	}
	var cursors []string
	for start := 0; start < total; start += perCall {
		cursors = append(cursors, e.cursor("s", "0", disclient.CursorAtSequenceNumber, "starting-sequence-number", strconv.Itoa(start)))
	}
	client := e.hs.Client()
	b.SetBytes(perCall * size)
	for i := 0; b.Loop(); i++ {
		resp, err := client.Get(e.hs.URL + v2("/records?limit=1000&partition-cursor=%s", url.QueryEscape(cursors[i%len(cursors)])))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < perCall*size {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}

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
					l, _, _, err := openRecordLog(b.TempDir(), 16<<20, spares, zerolog.Nop())
					if err != nil {
						b.Fatal(err)
					}
					defer func() { _ = l.close() }()
					frame := appendFrame(nil, 1, 0, 0, 0, "", bytes.Repeat([]byte{'x'}, size-framePrefixLen-16))
					noIndex := func(uint64, int64) error { return nil }
					b.SetBytes(int64(len(frame)))
					var next atomic.Int64
					var wg sync.WaitGroup
					for range writers {
						wg.Go(func() {
							for next.Add(1) <= int64(b.N) {
								seg, off, err := l.append(frame, noIndex)
								if err == nil {
									err = l.sync(seg, off+int64(len(frame)))
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
