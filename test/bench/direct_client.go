package main

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
)

// clientFetchBytes is what a Kafka consumer asks of one partition in one
// fetch unless told otherwise (fetch.max.partition.bytes, franz-go's
// FetchMaxPartitionBytes): the direct client phase's max_fetch_bytes.
const clientFetchBytes = 1 << 20

// keyedRecords is, per partition and in order, the records franz-go's
// default partitioner sends there in the gateway phases: Kafka's murmur2
// hash of the record's key modulo the partition count.
func (b *bench) keyedRecords() [][]int {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("")
	out := make([][]int, b.s.partitions)
	for i := range b.s.records {
		p := part.Partition(&kgo.Record{Key: key(i)}, b.s.partitions)
		out[p] = append(out[p], i)
	}
	return out
}

// keyedBatches builds the batches of the gateway phase of size-byte values
// in batch-byte batches, partitioned as franz-go partitions them: what the
// direct client and prebuilt phases send.
func (b *bench) keyedBatches(size, batch int) ([][][]byte, error) {
	keyed := b.keyedRecords()
	return b.buildBatches(size, batch, func(p int) iter.Seq[int] { return slices.Values(keyed[p]) })
}

// runDirectClient writes batches (keyedBatches) to a new stream with
// produceDirectClient and reads them with consumeDirectClient. Against it
// the gateway phases' ratio leaves out what the client's request shape
// costs: the window, the fetch size and the fetches in flight bound both
// alike.
func (b *bench) runDirectClient(ctx context.Context, size int, batches [][][]byte, stream, labels string) (produced, consumed throughput, err error) {
	if produced, err = b.produceDirectClient(ctx, stream, size, batches); err != nil {
		return throughput{}, throughput{}, fmt.Errorf("direct client produce, %s: %w", labels, err)
	}
	if consumed, err = b.consumeDirectClient(ctx, stream, batches, size); err != nil {
		return throughput{}, throughput{}, fmt.Errorf("direct client consume, %s: %w", labels, err)
	}
	return produced, consumed, nil
}

// produceDirectClient writes batches straight to a new DIS stream, one DIS
// record per Kafka batch, in the shape a Kafka producer gives the gateway:
// a Produce request carries at most one batch per partition, so call k
// holds the k-th batch of every partition that has one, and franz-go's
// idempotent producer keeps at most five requests in flight per broker,
// so at most -direct-client-inflight calls are. Calls in flight together
// carry batches of the same partitions, which DIS may then store out of
// order; the gateway keeps each partition's order with one call in flight
// per partition (docs/design.md §4), so this is a bound it cannot reach
// with more than one call in flight here.
func (b *bench) produceDirectClient(ctx context.Context, stream string, size int, batches [][][]byte) (throughput, error) {
	if err := b.createStream(ctx, stream); err != nil {
		return throughput{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	inflight := make(chan struct{}, b.s.directClientInflight)
	var wg sync.WaitGroup
	sw := startStopwatch(b.disgw.pid)
	for k := 0; ctx.Err() == nil; k++ {
		call := make([]disclient.PutRecordsEntry, 0, len(batches))
		for p, bs := range batches {
			if k < len(bs) {
				call = append(call, disclient.PutRecordsEntry{Data: bs[k], PartitionID: disclient.PartitionID(int32(p))})
			}
		}
		if len(call) == 0 {
			break
		}
		inflight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inflight }()
			if err := b.putRecords(ctx, stream, call); err != nil {
				cancel(fmt.Errorf("call %d: %w", k, err))
			}
		})
	}
	wg.Wait()
	t := throughput{records: b.s.records, bytes: int64(b.s.records) * int64(size)}
	sw.stop(&t)
	return t, context.Cause(ctx)
}

// consumeDirectClient reads batches back from stream in the shape a Kafka
// consumer reads the gateway: one fetch at a time (a consumer keeps one
// Fetch request in flight per broker), each fetch one GetRecords of at
// most clientFetchBytes (fetch.max.partition.bytes) from every partition
// not yet read to its end, made at once, the fetch over when all have
// answered. It counts records from the batches' headers, as
// consumeDirectBatches does; that phase's readers, one per partition
// without waiting for each other, are the bound a consumer of DIS alone
// could reach.
func (b *bench) consumeDirectClient(ctx context.Context, stream string, batches [][][]byte, size int) (throughput, error) {
	cursors := make([]string, b.s.partitions)
	for p := range cursors {
		cur, err := b.dis.GetCursor(ctx, &disclient.GetCursorRequest{
			StreamName:  stream,
			PartitionID: disclient.PartitionID(int32(p)),
			CursorType:  disclient.CursorTrimHorizon,
		})
		if err != nil {
			return throughput{}, err
		}
		cursors[p] = cur.PartitionCursor
	}
	read := make([]int, b.s.partitions)    // DIS records, one per batch
	counted := make([]int, b.s.partitions) // Kafka records in them
	sw := startStopwatch(b.disgw.pid)
	for {
		var failed firstError
		var wg sync.WaitGroup
		for p := range b.s.partitions {
			if read[p] >= len(batches[p]) {
				continue
			}
			wg.Go(func() {
				resp, err := b.dis.GetRecords(ctx, cursors[p], clientFetchBytes)
				if err == nil && len(resp.Records) == 0 {
					err = fmt.Errorf("read %d of %d DIS records, then no more", read[p], len(batches[p]))
				}
				if err != nil {
					failed.set(fmt.Errorf("partition %d: %w", p, err))
					return
				}
				for _, r := range resp.Records {
					n, err := headerRecords(r.Data)
					if err != nil {
						failed.set(fmt.Errorf("partition %d: %w", p, err))
						return
					}
					counted[p] += n
				}
				read[p] += len(resp.Records)
				cursors[p] = resp.NextPartitionCursor
			})
		}
		wg.Wait()
		if failed.err != nil {
			return throughput{}, failed.err
		}
		if slices.EqualFunc(read, batches, func(n int, bs [][]byte) bool { return n >= len(bs) }) {
			break
		}
	}
	return b.batchesRead(sw, counted, size)
}
