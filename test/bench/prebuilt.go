package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/protocol"
)

// The prebuilt phases' Produce timeout, and the longest a Fetch of theirs
// waits on the server for data (it never should: the records are there).
const (
	prebuiltTimeoutMillis = 30000
	prebuiltFetchWait     = 500
)

// batchLengthEnd is where a record batch's length field ends: the length
// counts the bytes after it.
const batchLengthEnd = 12

// runPrebuilt sends the direct client phase's batches to target t in raw
// Produce requests of the same shape (request k holds the k-th batch of
// every partition, -direct-client-inflight requests in flight) and reads
// them back with raw Fetch requests as a Kafka consumer sends them (one in
// flight, every partition, fetch.max.partition.bytes each), counting
// records from the batch headers. Nothing is built, compressed or decoded
// while the clock runs, so against the direct client phase the ratio is
// what the server adds over DIS alone, without the Kafka client's CPU,
// which on this machine shares the server's two cores.
func (b *bench) runPrebuilt(ctx context.Context, t target, topic string, size int, batches [][][]byte) (produced, consumed throughput, err error) {
	if err := b.createTopic(ctx, t, topic); err != nil {
		return throughput{}, throughput{}, fmt.Errorf("create topic: %w", err)
	}
	cl, err := newClient(t)
	if err != nil {
		return throughput{}, throughput{}, err
	}
	defer cl.Close()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	resp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return throughput{}, throughput{}, fmt.Errorf("metadata: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != b.s.partitions {
		return throughput{}, throughput{}, fmt.Errorf("metadata of %s: %d topics", topic, len(resp.Topics))
	}
	leader := resp.Topics[0].Partitions[0].Leader
	for _, p := range resp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return throughput{}, throughput{}, fmt.Errorf("metadata of partition %d: %w", p.Partition, err)
		}
		if p.Leader != leader {
			// The bench's servers are one broker each; a cluster's
			// requests would need splitting by leader.
			return throughput{}, throughput{}, errors.New("the prebuilt phases need one leader for every partition")
		}
	}
	broker := cl.Broker(int(leader))
	if produced, err = b.producePrebuilt(ctx, t, broker, topic, resp.Topics[0].TopicID, size, batches); err != nil {
		return throughput{}, throughput{}, fmt.Errorf("produce: %w", err)
	}
	if consumed, err = b.consumePrebuilt(ctx, t, broker, topic, resp.Topics[0].TopicID, size, batches); err != nil {
		return throughput{}, throughput{}, fmt.Errorf("consume: %w", err)
	}
	return produced, consumed, nil
}

// batchRecords is how many records a batch built by buildBatches holds.
func batchRecords(data []byte) (int, error) {
	info, ok := protocol.ParseBatchInfo(data)
	if !ok {
		return 0, fmt.Errorf("not a record batch (%d bytes)", len(data))
	}
	return int(info.NumRecords), nil
}

// producePrebuilt writes batches with acks=all in raw Produce requests,
// -direct-client-inflight at a time on the broker's produce connection, as
// produceDirectClient calls DIS.
func (b *bench) producePrebuilt(ctx context.Context, t target, leader *kgo.Broker, topic string, id [16]byte, size int, batches [][][]byte) (throughput, error) {
	var requests []*kmsg.ProduceRequest
	records := 0
	for k := 0; ; k++ {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, prebuiltTimeoutMillis
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p, bs := range batches {
			if k < len(bs) {
				n, err := batchRecords(bs[k])
				if err != nil {
					return throughput{}, err
				}
				records += n
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = int32(p), bs[k]
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		if len(rt.Partitions) == 0 {
			break
		}
		req.Topics = append(req.Topics, rt)
		requests = append(requests, req)
	}
	if records != b.s.records {
		return throughput{}, fmt.Errorf("the batches hold %d records, want %d", records, b.s.records)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	inflight := make(chan struct{}, b.s.directClientInflight)
	var wg sync.WaitGroup
	sw := startStopwatch(t.pid)
	for k, req := range requests {
		if ctx.Err() != nil {
			break
		}
		inflight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inflight }()
			if err := producedAll(leader.Request(ctx, req)); err != nil {
				cancel(fmt.Errorf("request %d: %w", k, err))
			}
		})
	}
	wg.Wait()
	tp := throughput{records: records, bytes: int64(records) * int64(size)}
	sw.stop(&tp)
	return tp, context.Cause(ctx)
}

// producedAll fails unless a Produce answer took every partition.
func producedAll(resp kmsg.Response, err error) error {
	if err != nil {
		return err
	}
	for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("partition %d: %w", rp.Partition, err)
			}
		}
	}
	return nil
}

// consumePrebuilt reads topic from the start of every partition with raw
// Fetch requests, one in flight, until it has every batch of batches, and
// checks the record counts.
func (b *bench) consumePrebuilt(ctx context.Context, t target, leader *kgo.Broker, topic string, id [16]byte, size int, batches [][][]byte) (throughput, error) {
	want := make([]int, len(batches))
	for p, bs := range batches {
		for _, data := range bs {
			n, err := batchRecords(data)
			if err != nil {
				return throughput{}, err
			}
			want[p] += n
		}
	}
	next := make([]int64, len(batches))
	got := make([]int, len(batches))
	total := 0
	sw := startStopwatch(t.pid)
	for total < b.s.records {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, prebuiltFetchWait, 1, 50<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p := range batches {
			if got[p] < want[p] {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), next[p], clientFetchBytes
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
		raw, err := leader.Request(ctx, req)
		if err != nil {
			return throughput{}, err
		}
		resp := raw.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return throughput{}, err
		}
		for _, ft := range resp.Topics {
			for _, fp := range ft.Partitions {
				if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
					return throughput{}, fmt.Errorf("partition %d: %w", fp.Partition, err)
				}
				p := fp.Partition
				for data := fp.RecordBatches; len(data) >= batchLengthEnd; {
					n := batchLengthEnd + int(int32(binary.BigEndian.Uint32(data[batchLengthEnd-4:])))
					if n > len(data) {
						break // a partial batch at the end: fetched again next time
					}
					info, ok := protocol.ParseBatchInfo(data[:n])
					if !ok {
						return throughput{}, fmt.Errorf("partition %d: a fetched batch does not parse", p)
					}
					if info.BaseOffset >= next[p] {
						got[p] += int(info.NumRecords)
						total += int(info.NumRecords)
						next[p] = info.LastOffset() + 1
					}
					data = data[n:]
				}
			}
		}
	}
	tp := throughput{records: total, bytes: int64(total) * int64(size)}
	sw.stop(&tp)
	for p := range got {
		if got[p] != want[p] {
			return throughput{}, fmt.Errorf("partition %d: read %d records, want %d", p, got[p], want[p])
		}
	}
	return tp, nil
}
