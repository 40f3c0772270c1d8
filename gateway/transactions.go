package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/txns"
	"github.com/disgw/disgw/protocol"
	"github.com/disgw/disgw/txncoord"
)

// Transactions (docs/design.md §13): each tenant's transaction state lives
// in an internal compacted topic of its own DIS account, the coordinator
// is the txncoord state machine under the txns driver, and markers are
// control batches the partition log writes.

// txnStateTopic is the internal topic a tenant's transaction state lives
// in, under Kafka's name, so admin tools show it as they show Kafka's.
const txnStateTopic = "__transaction_state"

// newTxnDriver makes the driver of every tenant's transactions.
func newTxnDriver(gw *Gateway) *txns.Driver[*tenant] {
	return txns.New(txns.Deps[*tenant]{
		Coord:          txncoord.Config{MaxTimeout: gw.cfg.TransactionMaxTimeout, NewProducerID: gw.producers.next},
		Partitions:     gw.cfg.TransactionStatePartitions,
		Owns:           gw.coordinatesTxnPartition,
		Log:            gw.log,
		Tenant:         func(tn *tenant) string { return tn.id },
		Go:             gw.panics.Go,
		Ctx:            gw.ctx,
		RequestTimeout: gw.cfg.RequestTimeout,
		State:          txnStateLog{gw},
		WriteMarker:    gw.writeMarker,
		CommitOffsets:  gw.commitTxnOffsets,
		Ended: func(commit bool) {
			outcome := "abort"
			if commit {
				outcome = "commit"
			}
			gw.metrics.TxnsEnded.WithLabelValues(outcome).Inc()
		},
		Marker: func(code int16) {
			result := "written"
			if code != 0 {
				result = "failed"
			}
			gw.metrics.TxnMarkers.WithLabelValues(result).Inc()
		},
	})
}

// txnStateLog keeps transaction state in the tenant's __transaction_state
// topic: kafka-format, compacted, so it outlives DIS's retention (a kept
// topic, docs/design.md §12) and stays the size of the live ids.
type txnStateLog struct{ gw *Gateway }

// topic describes the state topic, creating it on first use.
func (l txnStateLog) topic(ctx context.Context, tn *tenant) (*topics.Meta, error) {
	gw := l.gw
	t, err := tn.catalog.Get(ctx, txnStateTopic)
	if errors.Is(err, topics.ErrUnknownTopic) {
		spec := topics.Spec{RetentionHours: gw.cfg.DefaultRetentionHours, Format: FormatKafka, StreamType: disclient.StreamTypeCommon}
		if err := spec.Apply("cleanup.policy", kmsg.StringPtr("compact")); err != nil {
			return nil, err
		}
		if err := gw.topicCfg.CheckSpec(txnStateTopic, &spec); err != nil {
			return nil, err
		}
		err = tn.catalog.Create(ctx, txnStateTopic, gw.cfg.TransactionStatePartitions, &spec, FormatKafka)
		switch {
		case err == nil:
			gw.log.Info().Str("topic", txnStateTopic).Int32("partitions", gw.cfg.TransactionStatePartitions).Msg("created the transaction state topic")
		case !disclient.IsCode(err, disclient.CodeStreamExists):
			return nil, err
		}
		t, err = tn.catalog.Refresh(ctx, txnStateTopic)
	}
	if err != nil {
		return nil, err
	}
	if n := int32(len(t.Partitions)); n != gw.cfg.TransactionStatePartitions || t.Format != FormatKafka {
		return nil, fmt.Errorf("the %s topic has %d partitions of format %s; --transaction-state-partitions is %d and the format must be kafka", txnStateTopic, n, t.Format, gw.cfg.TransactionStatePartitions)
	}
	return t, nil
}

// Exists reports whether tn's state topic exists.
func (l txnStateLog) Exists(ctx context.Context, tn *tenant) (bool, error) {
	_, err := tn.catalog.Get(ctx, txnStateTopic)
	if errors.Is(err, topics.ErrUnknownTopic) {
		return false, nil
	}
	return err == nil, err
}

// pendingTxnOffsets marks the partitions of out whose group has offsets
// pending in an open transaction UNSTABLE_OFFSET_COMMIT, for an
// OffsetFetch with require_stable: the consumer asks again once the
// transaction ends, and a transaction cannot stay open past
// --transaction-max-timeout. The transactions this gateway coordinates
// are looked at here, the others at the gateways that coordinate them.
func (gw *Gateway) pendingTxnOffsets(ctx context.Context, tn *tenant, out *kmsg.OffsetFetchResponseGroup) {
	if !gw.transactional(tn) || out.ErrorCode != 0 {
		return
	}
	if code := gw.txns.LoadAll(ctx, tn); code != 0 {
		out.ErrorCode = code
		return
	}
	gw.txns.With(tn, func(c *txncoord.Coordinator) {
		markUnstable(out, func(topic string, partition int32) bool { return c.PendingOffsets(out.Group, topic, partition) })
	})
	if gw.cfg.Membership.Changed() != nil {
		gw.pendingAtPeers(ctx, out)
	}
}

// stateReadBytes is how much of a state partition one read asks for, and
// stateEmptyReads how many empty reads in a row end a state partition
// below its high watermark.
const (
	stateReadBytes  = 1 << 20
	stateEmptyReads = 3
)

// Read returns every record of state partition p from its log start on.
func (l txnStateLog) Read(ctx context.Context, tn *tenant, p int32) ([]txns.Entry, error) {
	t, err := l.topic(ctx, tn)
	if err != nil {
		return nil, err
	}
	ps := l.gw.partitionFor(tn.key(t, p))
	pm := t.Partitions[p]
	var out []txns.Entry
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
			return nil, kerr.ErrorForCode(part.ErrorCode)
		case part.Throttled:
			return nil, errors.New("DIS throttled reading the transaction state")
		case len(part.Batches) == 0 && offset >= part.HighWatermark:
			return out, nil
		case len(part.Batches) == 0:
			// Compaction may leave no batch between offset and the high
			// watermark: after a few empty reads that is the end, rather
			// than a spin until the deadline.
			if empty++; empty == stateEmptyReads {
				return out, nil
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			continue
		}
		empty = 0
		for _, b := range part.Batches {
			data := b.Data
			if b.File.Len > 0 {
				if data, err = b.File.AppendTo(nil); err != nil {
					return nil, err
				}
			}
			batches, err := protocol.DecodeBatches(data, nil)
			if err != nil {
				return nil, err
			}
			for _, pb := range batches {
				if !pb.Control() {
					for _, r := range pb.Records {
						out = append(out, txns.Entry{Key: r.Key, Value: r.Value})
					}
				}
				offset = max(offset, pb.BaseOffset+int64(pb.LastOffsetDelta)+1)
			}
		}
	}
}

// Append writes one record to state partition p through its writer and
// waits until DIS holds it.
func (l txnStateLog) Append(ctx context.Context, tn *tenant, p int32, key, value []byte) error {
	t, err := l.topic(ctx, tn)
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
	if _, code := l.gw.partitionFor(tn.key(t, p)).Enqueue(ctx, op); code != 0 {
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

// writeMarker writes a transaction's marker into one data partition
// (plog.Partition.WriteMarker), here or at the peer that owns it. A
// deleted topic counts as written; a raw topic holds no transactional
// batches (Produce refuses them), so there is nothing to end.
func (gw *Gateway) writeMarker(ctx context.Context, tn *tenant, tp txncoord.TopicPartition, m plog.Marker) int16 {
	t, err := tn.catalog.Get(ctx, tp.Topic)
	switch {
	case errors.Is(err, topics.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case err != nil:
		return kafkaCodeForDIS(err)
	case tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions):
		return kerr.UnknownTopicOrPartition.Code
	case t.Format != FormatKafka:
		return 0
	}
	if owner := gw.partitionOwner(tp.Topic, tp.Partition); owner.ID != gw.cfg.NodeID {
		return gw.peerMarker(ctx, owner, tp, m)
	}
	code, msg := gw.partitionFor(tn.key(t, tp.Partition)).WriteMarker(ctx, m)
	if code != 0 {
		gw.log.Warn().Str("topic", tp.Topic).Int32("partition", tp.Partition).Int64("producer_id", m.ProducerID).
			Str("error", kerr.ErrorForCode(code).Error()).Str("reason", msg).Msg("writing a transaction marker failed")
	}
	return code
}

// commitTxnOffsets commits a committed transaction's offsets to its
// group's DIS checkpoints, as OffsetCommit writes them.
func (gw *Gateway) commitTxnOffsets(ctx context.Context, tn *tenant, c txncoord.CommitOffsets) error {
	for _, o := range c.Offsets {
		if code := gw.groups.CommitOffset(ctx, tn, c.Group, o.Topic, o.Partition, o.Offset, o.Metadata); code != 0 {
			return fmt.Errorf("offset of %s[%d]: %w", o.Topic, o.Partition, kerr.ErrorForCode(code))
		}
	}
	return nil
}

// txnRefusal is the error a request for transactional id gets before it
// reaches the coordinator, or 0: a passthrough client of gateways with
// peers is served no transactions (transactional), an empty id is
// invalid, and every transactional API needs WRITE on its id, as in Kafka.
func (gw *Gateway) txnRefusal(r *request, id string) int16 {
	switch {
	case !gw.transactional(r.Tenant()):
		r.Log().Info().Str("transactional_id", id).Msg("refused a transactional request: gateways with peers serve transactions to clients of their own DIS credentials, not passthrough ones")
		return kerr.TransactionalIDAuthorizationFailed.Code
	case id == "":
		return kerr.InvalidRequest.Code
	case !gw.authorize(r, authz.OpWrite, authz.ResourceTransactionalID, id):
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	return 0
}

// stepTxn hands req for transactional id to r's tenant's coordinator and
// returns its answer, or fail's when the coordinator could not answer
// (loading failed, the deadline passed, the gateway is stopping).
func (gw *Gateway) stepTxn(ctx context.Context, r *request, id string, req kmsg.Request, fail func(code int16) kmsg.Response) kmsg.Response {
	resp, code := gw.txns.Step(ctx, r.Tenant(), id, req)
	if resp == nil {
		return fail(code)
	}
	return resp
}
