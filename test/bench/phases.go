package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
)

// key is the small key of record i; franz-go hashes it to pick the partition.
func key(i int) []byte { return strconv.AppendInt([]byte{'k'}, int64(i), 10) }

// firstError keeps the first of many concurrent errors.
type firstError struct {
	once sync.Once
	err  error
}

func (f *firstError) set(err error) { f.once.Do(func() { f.err = err }) }

// newKafkaClient is a franz-go client of the gateway with the client's
// defaults (acks=all, idempotent, snappy, 10 ms linger) unless opts say else.
func (b *bench) newKafkaClient(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.c.Addr)}, opts...)...)
}

// createTopic creates topic with the configured partition count through the
// gateway, outside any timed section.
func (b *bench) createTopic(ctx context.Context, topic string) error {
	cl, err := b.newKafkaClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(b.s.partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	return err
}

// produceGateway produces every record asynchronously, as fast as franz-go
// accepts them, and returns the time until the last is acknowledged and each
// record's latency from the Produce call to its promise. Under this load the
// latency is mostly time spent queued in the client.
func (b *bench) produceGateway(ctx context.Context, topic string) (throughput, []time.Duration, error) {
	if err := b.createTopic(ctx, topic); err != nil {
		return throughput{}, nil, fmt.Errorf("create topic: %w", err)
	}
	cl, err := b.newKafkaClient(kgo.DefaultProduceTopic(topic))
	if err != nil {
		return throughput{}, nil, err
	}
	defer cl.Close()

	n := b.s.records
	lat := make([]time.Duration, n)
	var failed firstError
	var wg sync.WaitGroup
	wg.Add(n)
	sw := startStopwatch()
	for i := range n {
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Key: key(i), Value: b.payload.value(i)}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(sent)
			if err != nil {
				failed.set(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	t := throughput{records: n, bytes: int64(n) * int64(b.s.size)}
	sw.stop(&t)
	return t, lat, failed.err
}

// produceGatewayUnloaded produces records one at a time, each waiting for
// the previous acknowledgement, so the latency is the gateway's and DIS's
// round trip without queueing. Linger is off: with one record in flight it
// would only add its own delay.
func (b *bench) produceGatewayUnloaded(ctx context.Context, topic string) ([]time.Duration, error) {
	if err := b.createTopic(ctx, topic); err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	cl, err := b.newKafkaClient(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// The first record also fetches metadata and a producer id; leave it out.
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: key(-1), Value: b.payload.value(0)}).FirstErr(); err != nil {
		return nil, err
	}
	lat := make([]time.Duration, b.s.unloaded)
	for i := range lat {
		sent := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: key(i), Value: b.payload.value(i)}).FirstErr(); err != nil {
			return nil, err
		}
		lat[i] = time.Since(sent)
	}
	return lat, nil
}

// consumeGateway reads topic from the start of every partition until it has
// every record produced into it, and fails if it gets another count.
func (b *bench) consumeGateway(ctx context.Context, topic string) (throughput, error) {
	starts := make(map[int32]kgo.Offset, b.s.partitions)
	for p := range int32(b.s.partitions) {
		starts[p] = kgo.NewOffset().AtStart()
	}
	sw := startStopwatch()
	cl, err := b.newKafkaClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
	if err != nil {
		return throughput{}, err
	}
	defer cl.Close()

	var t throughput
	for t.records < b.s.records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return throughput{}, fmt.Errorf("consumed %d of %d records: %w", t.records, b.s.records, err)
		}
		var fetchErr error
		fs.EachError(func(topic string, p int32, err error) {
			fetchErr = errors.Join(fetchErr, fmt.Errorf("fetch %s/%d: %w", topic, p, err))
		})
		if fetchErr != nil {
			return throughput{}, fetchErr
		}
		fs.EachRecord(func(r *kgo.Record) {
			t.records++
			t.bytes += int64(len(r.Value))
		})
	}
	sw.stop(&t)
	return t, b.checkCount("consumed", t)
}

// checkCount fails unless t moved exactly the records and bytes produced.
func (b *bench) checkCount(what string, t throughput) error {
	if want := int64(b.s.records) * int64(b.s.size); t.records != b.s.records || t.bytes != want {
		return fmt.Errorf("%s %d records of %d bytes in all, want %d of %d", what, t.records, t.bytes, b.s.records, want)
	}
	return nil
}

// directRecords is how many of the records go to partition p when record i
// goes to partition i mod partitions.
func (b *bench) directRecords(p int) int {
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

// produceDirect writes the records straight to a new DIS stream the way the
// gateway does: one writer per partition, one PutRecords in flight each,
// partition_id set on every record.
func (b *bench) produceDirect(ctx context.Context, stream string) (throughput, error) {
	err := b.c.Client.CreateStream(ctx, &disclient.CreateStreamRequest{
		StreamName:     stream,
		PartitionCount: int32(b.s.partitions),
		StreamType:     disclient.StreamTypeCommon,
		DataType:       disclient.DataTypeBlob,
	})
	if err != nil {
		return throughput{}, fmt.Errorf("create stream: %w", err)
	}
	sw := startStopwatch()
	err = b.forEachPartition(func(p int) error {
		pid := disclient.PartitionID(int32(p))
		batch := make([]disclient.PutRecordsEntry, 0, b.s.directBatch)
		for i := p; i < b.s.records; i += b.s.partitions {
			batch = append(batch, disclient.PutRecordsEntry{Data: b.payload.value(i), PartitionID: pid})
			if len(batch) == b.s.directBatch || i+b.s.partitions >= b.s.records {
				if err := b.putRecords(ctx, stream, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	})
	t := throughput{records: b.s.records, bytes: int64(b.s.records) * int64(b.s.size)}
	sw.stop(&t)
	return t, err
}

func (b *bench) putRecords(ctx context.Context, stream string, batch []disclient.PutRecordsEntry) error {
	resp, err := b.c.Client.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: stream, Records: batch})
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

// consumeDirect reads every partition of stream from its start with
// GetCursor and GetRecords, one reader per partition, until it has what
// produceDirect wrote there.
func (b *bench) consumeDirect(ctx context.Context, stream string) (throughput, error) {
	got := make([]throughput, b.s.partitions)
	sw := startStopwatch()
	err := b.forEachPartition(func(p int) error {
		cur, err := b.c.Client.GetCursor(ctx, &disclient.GetCursorRequest{
			StreamName:  stream,
			PartitionID: disclient.PartitionID(int32(p)),
			CursorType:  disclient.CursorTrimHorizon,
		})
		if err != nil {
			return err
		}
		cursor, want := cur.PartitionCursor, b.directRecords(p)
		for got[p].records < want {
			resp, err := b.c.Client.GetRecords(ctx, cursor, 0)
			if err != nil {
				return err
			}
			if len(resp.Records) == 0 {
				return fmt.Errorf("read %d of %d records, then no more", got[p].records, want)
			}
			for _, r := range resp.Records {
				got[p].records++
				got[p].bytes += int64(len(r.Data))
			}
			cursor = resp.NextPartitionCursor
		}
		return nil
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
	return t, b.checkCount("read", t)
}
