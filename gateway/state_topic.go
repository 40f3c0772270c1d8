package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/protocol"
)

// stateTopic is an internal topic a coordinator keeps its state in, one
// per tenant: kafka-format and compacted, so it outlives DIS's retention
// (a kept topic, docs/design.md §12) and stays the size of the live keys.
// The transaction state (§13) and the share-group state (§14) each have
// one; its partition count comes from a flag every gateway of a DIS
// account must agree on, since each key's partition is derived from it.
type stateTopic struct {
	gw         *Gateway
	name       string
	partitions int32
	// flag sets partitions, and what is what the topic holds: both are
	// for the messages.
	flag, what string
}

// txnState is the tenant's transaction state topic.
func (gw *Gateway) txnState() stateTopic {
	return stateTopic{gw: gw, name: txnStateTopic, partitions: gw.cfg.TransactionStatePartitions,
		flag: "--transaction-state-partitions", what: "transaction state"}
}

// shareState is the tenant's share-group state topic.
func (gw *Gateway) shareState() stateTopic {
	return stateTopic{gw: gw, name: shareStateTopic, partitions: gw.cfg.ShareStatePartitions,
		flag: "--share-state-partitions", what: "share-group state"}
}

// topic describes the state topic, creating it on first use.
func (s stateTopic) topic(ctx context.Context, tn *tenant) (*topics.Meta, error) {
	gw := s.gw
	t, err := tn.catalog.Get(ctx, s.name)
	if errors.Is(err, topics.ErrUnknownTopic) {
		spec := topics.Spec{RetentionHours: gw.cfg.DefaultRetentionHours, Format: FormatKafka, StreamType: disclient.StreamTypeCommon}
		if err := spec.Apply("cleanup.policy", kmsg.StringPtr("compact")); err != nil {
			return nil, err
		}
		if err := gw.topicCfg.CheckSpec(s.name, &spec); err != nil {
			return nil, err
		}
		err = tn.catalog.Create(ctx, s.name, s.partitions, &spec, FormatKafka)
		switch {
		case err == nil:
			gw.log.Info().Str("topic", s.name).Int32("partitions", s.partitions).Msg("created the " + s.what + " topic")
		case !disclient.IsCode(err, disclient.CodeStreamExists):
			return nil, err
		}
		t, err = tn.catalog.Refresh(ctx, s.name)
	}
	if err != nil {
		return nil, err
	}
	if n := int32(len(t.Partitions)); n != s.partitions || t.Format != FormatKafka {
		return nil, fmt.Errorf("the %s topic has %d partitions of format %s; %s is %d and the format must be kafka", s.name, n, t.Format, s.flag, s.partitions)
	}
	return t, nil
}

// Exists reports whether tn's state topic exists.
func (s stateTopic) Exists(ctx context.Context, tn *tenant) (bool, error) {
	_, err := tn.catalog.Get(ctx, s.name)
	if errors.Is(err, topics.ErrUnknownTopic) {
		return false, nil
	}
	return err == nil, err
}

// stateReadBytes is how much of a state partition one read asks for, and
// stateEmptyReads how many empty reads in a row end a state partition
// below its high watermark.
const (
	stateReadBytes  = 1 << 20
	stateEmptyReads = 3
)

// read hands every record of state partition p, from its log start on,
// to each, oldest first.
func (s stateTopic) read(ctx context.Context, tn *tenant, p int32, each func(key, value []byte)) error {
	t, err := s.topic(ctx, tn)
	if err != nil {
		return err
	}
	ps := s.gw.partitionFor(tn.key(t, p))
	pm := t.Partitions[p]
	empty := 0 // reads in a row that found nothing below the high watermark
	for offset := int64(0); ; {
		part := &plog.FetchPart{Partition: ps, Kafka: true, Offset: offset, Limit: stateReadBytes,
			Earliest: pm.Earliest, Next: pm.Next, HighWatermark: -1, LogStartOffset: -1}
		tn.parts.Fetch(ctx, []*plog.FetchPart{part}, time.Now(), 0, stateReadBytes, nil)
		switch {
		case part.ErrorCode == kerr.OffsetOutOfRange.Code && part.LogStartOffset > offset:
			offset = part.LogStartOffset
			continue
		case part.ErrorCode != 0:
			return kerr.ErrorForCode(part.ErrorCode)
		case part.Throttled:
			return errors.New("DIS throttled reading the " + s.what)
		case len(part.Batches) == 0 && offset >= part.HighWatermark:
			return nil
		case len(part.Batches) == 0:
			// Compaction may leave no batch between offset and the high
			// watermark: after a few empty reads that is the end, rather
			// than a spin until the deadline.
			if empty++; empty == stateEmptyReads {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		empty = 0
		for _, b := range part.Batches {
			data := b.Data
			if b.File.Len > 0 {
				if data, err = b.File.AppendTo(nil); err != nil {
					return err
				}
			}
			batches, err := protocol.DecodeBatches(data, nil)
			if err != nil {
				return err
			}
			for _, pb := range batches {
				if !pb.Control() {
					for _, r := range pb.Records {
						each(r.Key, r.Value)
					}
				}
				offset = max(offset, pb.BaseOffset+int64(pb.LastOffsetDelta)+1)
			}
		}
	}
}

// Append writes one record to state partition p through its writer and
// waits until DIS holds it; a nil value is a tombstone. The writer
// refuses it when another gateway owns p now.
func (s stateTopic) Append(ctx context.Context, tn *tenant, p int32, key, value []byte) error {
	t, err := s.topic(ctx, tn)
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	data, err := protocol.AppendBatch(nil, []protocol.Record{{Timestamp: now, Key: key, Value: value}}, protocol.CodecNone, 0)
	if err != nil {
		return err
	}
	op := plog.NewAppend(true)
	op.Entries = []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(p), Data: data, Timestamp: &now}}
	op.Bytes = len(data)
	op.Deadline, _ = ctx.Deadline()
	if _, code := s.gw.partitionFor(tn.key(t, p)).Enqueue(ctx, op); code != 0 {
		return kerr.ErrorForCode(code)
	}
	select {
	case <-op.Done():
	case <-ctx.Done():
		if op.Cancel() {
			return ctx.Err()
		}
		<-op.Done()
	}
	if op.ErrCode != 0 {
		return fmt.Errorf("%w: %s", kerr.ErrorForCode(op.ErrCode), op.ErrMsg)
	}
	return nil
}
