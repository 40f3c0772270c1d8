package plog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/protocol"
)

// countingDIS counts the bytes of the records stored in the keep stream
// and of every record read.
type countingDIS struct {
	disclient.API
	keepStream    string
	written, read atomic.Int64
}

func (d *countingDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	resp, err := d.API.PutRecords(ctx, req)
	if err == nil && req.StreamName == d.keepStream && len(resp.Records) == len(req.Records) {
		for i, r := range resp.Records {
			if r.ErrorCode == "" {
				d.written.Add(int64(len(req.Records[i].Data)))
			}
		}
	}
	return resp, err
}

func (d *countingDIS) GetRecords(ctx context.Context, cursor string, n int) (*disclient.GetRecordsResponse, error) {
	resp, err := d.API.GetRecords(ctx, cursor, n)
	if err == nil {
		for _, r := range resp.Records {
			d.read.Add(int64(len(r.Data)))
		}
	}
	return resp, err
}

// BenchmarkRewrite measures what keeping a compacted topic costs
// (docs/design.md §12, docs/benchmarks.md). One op is one DIS retention
// period (24 h of the fixture's clock) of a partition with keys live keys of
// valueBytes-byte values, in which every key is updated updates times,
// spread over the period, and the two rewrites the period needs (one each
// half period, keep.Due). Only the rewrites are timed. Metrics, per period:
// the bytes the rewrites stored in the keep stream (generations and commit
// records) per byte of live data (the last generation's batches), the bytes
// they read from DIS per live byte, and the rate they stored at. The
// embedded DIS runs in the same process without fsync, so the rate is the
// gateway's and DIS's CPU, not a DIS partition's quota.
func BenchmarkRewrite(b *testing.B) {
	const keys, valueBytes = 10_000, 1024
	for _, updates := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("keys=%d/value=%d/updates=%d", keys, valueBytes, updates), func(b *testing.B) {
			benchRewrite(b, keys, valueBytes, updates)
		})
	}
}

func benchRewrite(b *testing.B, keys, valueBytes, updates int) {
	const steps = 4 // clock steps per half period, each with its share of the updates
	f := newKeptFixture(b, keep.Policy{Compact: true, DeleteRetentionMs: 24 * 3600_000})
	dis := &countingDIS{API: f.dis, keepStream: "k"}
	ps := f.gateway(dis)
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, valueBytes)
	next := 0 // the key the next update is of
	produce := func(n int) {
		for n > 0 {
			recs := make([]protocol.Record, min(n, 100))
			for i := range recs {
				for j := range value {
					value[j] = byte(rng.Uint32())
				}
				k := next % keys
				recs[i] = protocol.Record{Offset: int64(i), Timestamp: f.clock.Now().UnixMilli(),
					Key: strconv.AppendInt([]byte{'k'}, int64(k), 10), Value: append([]byte(nil), value...)}
				next++
			}
			f.append(ps, recs)
			n -= len(recs)
		}
	}
	run := KeepRun{Now: f.clock.Now, DISRetention: 24 * time.Hour, Keys: keep.NewOffsetMap(64 << 20), Writer: "bench"}
	rewrite := func() KeepResult {
		res, err := ps.Keep(f.ctx, run)
		if err != nil || !res.Written {
			b.Fatalf("rewrite: %+v, %v", res, err)
		}
		return res
	}
	produce(keys)
	rewrite()
	var elapsed time.Duration
	var written, read, live int64
	b.ResetTimer()
	for range b.N {
		for range 2 {
			b.StopTimer()
			for range steps {
				produce(keys * updates / (2 * steps))
				f.advance(12 * time.Hour / steps)
			}
			w, r := dis.written.Load(), dis.read.Load()
			b.StartTimer()
			start := time.Now()
			live = rewrite().Bytes
			elapsed += time.Since(start)
			written += dis.written.Load() - w
			read += dis.read.Load() - r
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(written)/float64(live)/float64(b.N), "rewritten-bytes/live-byte")
	b.ReportMetric(float64(read)/float64(live)/float64(b.N), "read-bytes/live-byte")
	b.ReportMetric(float64(written)/1e6/elapsed.Seconds(), "rewrite-MB/s")
	b.ReportMetric(float64(live)/1e6, "live-MB")
}
