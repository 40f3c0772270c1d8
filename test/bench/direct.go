package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// directCallBytes bounds the record data of one PutRecords call of the
// direct batch phase: the gateway's default PutRecordsMaxBytes.
const directCallBytes = 1 << 20

// batchRecordCountPos is where a v2 record batch holds its record count.
const batchRecordCountPos = protocol.BatchHeaderSize - 4

// partitionRecords is how many of the records go to partition p when record
// i goes to partition i mod partitions.
func (b *bench) partitionRecords(p int) int {
	return (b.s.records - p + b.s.partitions - 1) / b.s.partitions
}

// forEachPartition runs fn for every partition at once and returns the
// first error.
func (b *bench) forEachPartition(fn func(p int) error) error {
	var failed firstError
	var wg sync.WaitGroup
	for p := range b.s.partitions {
		wg.Go(func() {
			if err := fn(p); err != nil {
				failed.set(fmt.Errorf("partition %d: %w", p, err))
			}
		})
	}
	wg.Wait()
	return failed.err
}

// createStream creates a DIS stream with the configured partition count,
// outside any timed section.
func (b *bench) createStream(ctx context.Context, stream string) error {
	err := b.dis.CreateStream(ctx, &disclient.CreateStreamRequest{
		StreamName:     stream,
		PartitionCount: int32(b.s.partitions),
		StreamType:     disclient.StreamTypeCommon,
		DataType:       disclient.DataTypeBlob,
	})
	if err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	return nil
}

// produceDirectRecords writes the records straight to a new DIS stream, one
// DIS record per Kafka record, the way the gateway's partition writers do
// today: one writer per partition, one PutRecords of -direct-batch records
// in flight each, partition_id set on every record.
func (b *bench) produceDirectRecords(ctx context.Context, stream string, size int) (throughput, error) {
	if err := b.createStream(ctx, stream); err != nil {
		return throughput{}, err
	}
	pl := b.payload(size)
	sw := startStopwatch(b.disgw.pid)
	err := b.forEachPartition(func(p int) error {
		pid := disclient.PartitionID(int32(p))
		batch := make([]disclient.PutRecordsEntry, 0, b.s.directBatch)
		for i := p; i < b.s.records; i += b.s.partitions {
			batch = append(batch, disclient.PutRecordsEntry{Data: pl.value(i), PartitionID: pid})
			if len(batch) == b.s.directBatch || i+b.s.partitions >= b.s.records {
				if err := b.putRecords(ctx, stream, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	})
	t := throughput{records: b.s.records, bytes: int64(b.s.records) * int64(size)}
	sw.stop(&t)
	return t, err
}

func (b *bench) putRecords(ctx context.Context, stream string, batch []disclient.PutRecordsEntry) error {
	resp, err := b.dis.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: stream, Records: batch})
	if err != nil {
		return err
	}
	if resp.FailedRecordCount > 0 {
		for _, r := range resp.Records {
			if r.ErrorCode != "" {
				return fmt.Errorf("PutRecords failed %d of %d records, first: %s %s",
					resp.FailedRecordCount, len(batch), r.ErrorCode, r.ErrorMessage)
			}
		}
	}
	return nil
}

// readPartition reads partition p of stream from its start with GetCursor
// and GetRecords of the server's default size until it has want DIS
// records, handing each to fn.
func (b *bench) readPartition(ctx context.Context, stream string, p, want int, fn func(data []byte)) error {
	cur, err := b.dis.GetCursor(ctx, &disclient.GetCursorRequest{
		StreamName:  stream,
		PartitionID: disclient.PartitionID(int32(p)),
		CursorType:  disclient.CursorTrimHorizon,
	})
	if err != nil {
		return err
	}
	cursor, got := cur.PartitionCursor, 0
	for got < want {
		resp, err := b.dis.GetRecords(ctx, cursor, 0)
		if err != nil {
			return err
		}
		if len(resp.Records) == 0 {
			return fmt.Errorf("read %d of %d DIS records, then no more", got, want)
		}
		for _, r := range resp.Records {
			got++
			fn(r.Data)
		}
		cursor = resp.NextPartitionCursor
	}
	return nil
}

// consumeDirectRecords reads what produceDirectRecords wrote, one reader
// per partition.
func (b *bench) consumeDirectRecords(ctx context.Context, stream string, size int) (throughput, error) {
	got := make([]throughput, b.s.partitions)
	sw := startStopwatch(b.disgw.pid)
	err := b.forEachPartition(func(p int) error {
		return b.readPartition(ctx, stream, p, b.partitionRecords(p), func(data []byte) {
			got[p].records++
			got[p].bytes += int64(len(data))
		})
	})
	if err != nil {
		return throughput{}, err
	}
	var t throughput
	sw.stop(&t)
	for _, g := range got {
		t.records += g.records
		t.bytes += g.bytes
	}
	return t, b.checkCount("read", t, size)
}

// buildBatches builds, per partition, the Kafka record batches a producer
// with batch-byte batches would send of the records, those of records(p)
// to partition p: as many records as fit in batch bytes, snappy compressed
// like franz-go's. It runs outside any timed section.
func (b *bench) buildBatches(size, batch int, records func(p int) iter.Seq[int]) ([][][]byte, error) {
	out := make([][][]byte, b.s.partitions)
	for p := range b.s.partitions {
		err := b.buildPartition(records(p), size, batch, func(data []byte) error {
			out[p] = append(out[p], data)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// modRecords is, in order, the records of partition p when record i goes
// to partition i mod partitions.
func (b *bench) modRecords(p int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := p; i < b.s.records; i += b.s.partitions {
			if !yield(i) {
				return
			}
		}
	}
}

// buildPartition builds the batches of one partition's records, in order,
// handing each to emit.
func (b *bench) buildPartition(records iter.Seq[int], size, batch int, emit func([]byte) error) error {
	pl, now := b.payload(size), time.Now().UnixMilli()
	var recs []protocol.Record
	used := protocol.BatchHeaderSize
	flush := func() error {
		data, err := protocol.AppendBatch(nil, recs, protocol.CodecSnappy, -1)
		recs, used = recs[:0], protocol.BatchHeaderSize
		if err != nil {
			return err
		}
		return emit(data)
	}
	for i := range records {
		r := protocol.Record{Offset: int64(len(recs)), Timestamp: now, Key: key(i), Value: pl.value(i)}
		n := protocol.RecordSizeInBatch(&r, int32(len(recs)), 0)
		if len(recs) > 0 && used+n > batch {
			if err := flush(); err != nil {
				return err
			}
			r.Offset = 0
			n = protocol.RecordSizeInBatch(&r, 0, 0)
		}
		recs, used = append(recs, r), used+n
	}
	if len(recs) > 0 {
		return flush()
	}
	return nil
}

// produceDirectNative is what a DIS-native program pays to store the
// records of the gateway phase in the kafka format: it builds the batches
// as franz-go would (timed, unlike produceDirectBatches) and writes them
// as it goes, one writer per partition with one PutRecords of at most
// directCallBytes in flight. Against it the gateway phase's ratio counts
// what the Kafka client, the protocol and the gateway add together.
// It returns how many batches each partition got.
func (b *bench) produceDirectNative(ctx context.Context, stream string, size, batch int) (throughput, []int, error) {
	if err := b.createStream(ctx, stream); err != nil {
		return throughput{}, nil, err
	}
	counts := make([]int, b.s.partitions)
	sw := startStopwatch(b.disgw.pid)
	err := b.forEachPartition(func(p int) error {
		pid := disclient.PartitionID(int32(p))
		var call []disclient.PutRecordsEntry
		bytes := 0
		err := b.buildPartition(b.modRecords(p), size, batch, func(data []byte) error {
			if len(call) > 0 && bytes+len(data) > directCallBytes {
				if err := b.putRecords(ctx, stream, call); err != nil {
					return err
				}
				call, bytes = call[:0], 0
			}
			call, bytes = append(call, disclient.PutRecordsEntry{Data: data, PartitionID: pid}), bytes+len(data)
			counts[p]++
			return nil
		})
		if err == nil && len(call) > 0 {
			err = b.putRecords(ctx, stream, call)
		}
		return err
	})
	t := throughput{records: b.s.records, bytes: int64(b.s.records) * int64(size)}
	sw.stop(&t)
	return t, counts, err
}

// consumeDirectNative reads what produceDirectNative wrote and decodes
// every record, decompressing, as a consumer does; it fails unless it gets
// every value.
func (b *bench) consumeDirectNative(ctx context.Context, stream string, size int, counts []int) (throughput, error) {
	got := make([]throughput, b.s.partitions)
	budget := protocol.NewDecompressBudget(1 << 62)
	sw := startStopwatch(b.disgw.pid)
	err := b.forEachPartition(func(p int) error {
		var bad error
		err := b.readPartition(ctx, stream, p, counts[p], func(data []byte) {
			decoded, err := protocol.DecodeBatches(data, budget)
			if err != nil {
				bad = err
				return
			}
			for _, batch := range decoded {
				for _, r := range batch.Records {
					got[p].records++
					got[p].bytes += int64(len(r.Value))
				}
			}
		})
		if err == nil {
			err = bad
		}
		return err
	})
	if err != nil {
		return throughput{}, err
	}
	var t throughput
	sw.stop(&t)
	for _, g := range got {
		t.records += g.records
		t.bytes += g.bytes
	}
	return t, b.checkCount("decoded", t, size)
}

// produceDirectBatches writes batches straight to a new DIS stream, one DIS
// record per Kafka batch, with the gateway's shape: one writer per
// partition, one PutRecords of at most directCallBytes in flight each.
func (b *bench) produceDirectBatches(ctx context.Context, stream string, size int, batches [][][]byte) (throughput, error) {
	if err := b.createStream(ctx, stream); err != nil {
		return throughput{}, err
	}
	sw := startStopwatch(b.disgw.pid)
	err := b.forEachPartition(func(p int) error {
		pid := disclient.PartitionID(int32(p))
		var call []disclient.PutRecordsEntry
		bytes := 0
		for i, data := range batches[p] {
			call, bytes = append(call, disclient.PutRecordsEntry{Data: data, PartitionID: pid}), bytes+len(data)
			last := i == len(batches[p])-1
			if last || bytes+len(batches[p][i+1]) > directCallBytes {
				if err := b.putRecords(ctx, stream, call); err != nil {
					return err
				}
				call, bytes = call[:0], 0
			}
		}
		return nil
	})
	t := throughput{records: b.s.records, bytes: int64(b.s.records) * int64(size)}
	sw.stop(&t)
	return t, err
}

// consumeDirectBatches reads batches back from stream, where
// produceDirectBatches wrote them, one reader per partition with
// GetRecords of the server's default size, and counts the Kafka records in
// each batch's header.
func (b *bench) consumeDirectBatches(ctx context.Context, stream string, batches [][][]byte, size int) (throughput, error) {
	got := make([]int, b.s.partitions)
	sw := startStopwatch(b.disgw.pid)
	err := b.forEachPartition(func(p int) error {
		var bad error
		err := b.readPartition(ctx, stream, p, len(batches[p]), func(data []byte) {
			n, err := headerRecords(data)
			got[p] += n
			if bad == nil {
				bad = err
			}
		})
		if err == nil {
			err = bad
		}
		return err
	})
	if err != nil {
		return throughput{}, err
	}
	return b.batchesRead(sw, got, size)
}

// headerRecords is the record count in the header of a batch read back as
// a DIS record.
func headerRecords(data []byte) (int, error) {
	if len(data) < protocol.BatchHeaderSize {
		return 0, fmt.Errorf("a DIS record of %d bytes is no record batch", len(data))
	}
	return int(binary.BigEndian.Uint32(data[batchRecordCountPos:])), nil
}

// batchesRead ends a timed read of batches: it stops sw and checks that
// the records counted per partition are every record produced.
func (b *bench) batchesRead(sw stopwatch, counted []int, size int) (throughput, error) {
	var t throughput
	sw.stop(&t)
	for _, n := range counted {
		t.records += n
	}
	t.bytes = int64(t.records) * int64(size)
	if t.records != b.s.records {
		return throughput{}, fmt.Errorf("read batches of %d records in all, want %d", t.records, b.s.records)
	}
	return t, nil
}
