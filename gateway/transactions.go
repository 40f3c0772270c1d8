package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/txns"
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
		Coord:          txncoord.Config{MaxTimeout: gw.cfg.TransactionMaxTimeout, MaxIDs: gw.cfg.MaxTransactionalIDs, NewProducerID: gw.producers.next},
		Partitions:     gw.cfg.TransactionStatePartitions,
		Owns:           gw.coordinatesTxnPartition,
		Log:            gw.log,
		Tenant:         func(tn *tenant) string { return tn.id },
		Go:             gw.panics.Go,
		Ctx:            gw.ctx,
		RequestTimeout: gw.cfg.RequestTimeout,
		State:          txnStateLog{gw.txnState()},
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
// topic, one record a transactional id.
type txnStateLog struct{ stateTopic }

// Read returns every record of state partition p from its log start on.
func (l txnStateLog) Read(ctx context.Context, tn *tenant, p int32) ([]txns.Entry, error) {
	var out []txns.Entry
	err := l.read(ctx, tn, p, func(key, value []byte) { out = append(out, txns.Entry{Key: key, Value: value}) })
	if err != nil {
		return nil, err
	}
	return out, nil
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
