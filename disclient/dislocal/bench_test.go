package dislocal

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"strconv"
	"testing"

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
