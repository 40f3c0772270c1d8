package txncoord

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addition is what a request adds to an id's transaction.
type addition struct {
	txnID      string
	producerID int64
	epoch      int16
	partitions []TopicPartition
	group      string   // AddOffsetsToTxn, TxnOffsetCommit
	offsets    []Offset // TxnOffsetCommit
	// inGroup requires the group to be in the Ongoing transaction already
	// (TxnOffsetCommit before version 5) rather than adding it.
	inGroup bool
	// v2 marks a request only a transaction version 2 producer sends.
	v2 bool
	// oldFence answers a stale epoch with INVALID_PRODUCER_EPOCH.
	oldFence bool
}

// add validates a and adds it to the id's transaction, opening one if
// none is; done gets the answer, at once when nothing is to be written,
// else when the write reports.
func (c *Coordinator) add(now time.Time, a addition, done func(code int16)) {
	t, code := c.validate(a.txnID, a.producerID, a.epoch, a.oldFence, true)
	if code != 0 {
		done(code)
		return
	}
	rec := &t.rec
	if a.inGroup && (rec.State != Ongoing || !slices.Contains(rec.Groups, a.group)) {
		done(kerr.InvalidTxnState.Code)
		return
	}
	if rec.State == Ongoing && len(a.offsets) == 0 && (!a.v2 || rec.Version2) &&
		(a.group == "" || slices.Contains(rec.Groups, a.group)) &&
		!slices.ContainsFunc(a.partitions, func(tp TopicPartition) bool { return !rec.hasPartition(tp) }) {
		done(0)
		return
	}
	next := rec.clone()
	if rec.State != Ongoing {
		next.idle()
		next.StartMillis = millis(now)
		next.State = Ongoing
	}
	next.UpdateMillis = millis(now)
	next.Version2 = next.Version2 || a.v2
	for _, tp := range a.partitions {
		if i, found := slices.BinarySearchFunc(next.Partitions, tp, compareTP); !found {
			next.Partitions = slices.Insert(next.Partitions, i, tp)
		}
	}
	if len(next.Partitions) > c.cfg.MaxPartitions {
		c.log.Warn().Str("txn", a.txnID).Int("max", c.cfg.MaxPartitions).Msg("refusing partitions past the cap of one transaction")
		done(kerr.InvalidRequest.Code)
		return
	}
	if a.group != "" && !slices.Contains(next.Groups, a.group) {
		next.Groups = append(next.Groups, a.group)
	}
	if len(a.offsets) > 0 {
		if !next.addOffsets(a.group, a.offsets, c.cfg.MaxPendingOffsets) {
			c.log.Warn().Str("txn", a.txnID).Int("max", c.cfg.MaxPendingOffsets).Msg("refusing offsets past the cap of one transaction")
			done(kerr.InvalidRequest.Code)
			return
		}
	}
	c.persist(t, next, []func(int16){done}, nil)
}

// validate checks a request against the id's state, in Kafka's order
// except that a write in flight is answered first
// (CONCURRENT_TRANSACTIONS), before any epoch check, so a client retrying
// while its own change is being written is not told it is fenced. With
// writing, a prepared transaction is CONCURRENT_TRANSACTIONS too.
func (c *Coordinator) validate(txnID string, producerID int64, epoch int16, oldFence, writing bool) (*txn, int16) {
	t, code := c.lookup(txnID)
	switch {
	case txnID == "":
		return nil, kerr.InvalidRequest.Code
	case code != 0:
		return nil, code
	case t == nil || t.fresh:
		return nil, kerr.InvalidProducerIDMapping.Code
	case writing && t.write != nil:
		return nil, kerr.ConcurrentTransactions.Code
	}
	rec := &t.rec
	switch {
	case rec.State.preparing() && rec.NextProducerID >= 0 && producerID == rec.NextProducerID && epoch == 0:
		// The next producer id, handed out by a version 2 EndTxn that
		// ran out of epochs, before the transaction completed.
		return nil, kerr.ConcurrentTransactions.Code
	case producerID != rec.ProducerID:
		return nil, kerr.InvalidProducerIDMapping.Code
	case epoch != rec.Epoch:
		return nil, fencedCode(oldFence)
	case rec.State.preparing():
		return nil, kerr.ConcurrentTransactions.Code
	}
	return t, 0
}

// addPartitions serves AddPartitionsToTxn: a client's (v0-3) or a
// partition owner's batch (v4+), each transaction of which either verifies
// its partitions (KIP-890 part 1) or adds them for a version 2 producer.
func (c *Coordinator) addPartitions(now time.Time, id uint64, r *kmsg.AddPartitionsToTxnRequest) {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	rep := newReply(id, resp)
	if r.Version >= 4 {
		resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(r.Transactions))
		for i := range r.Transactions {
			tx := &r.Transactions[i]
			rt := &resp.Transactions[i]
			rt.TransactionalID = tx.TransactionalID
			var tps []TopicPartition
			for _, tt := range tx.Topics {
				for _, p := range tt.Partitions {
					tps = append(tps, TopicPartition{tt.Topic, p})
				}
			}
			if tx.VerifyOnly {
				rt.Topics = batchTopics(tps, c.verify(tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tps))
				continue
			}
			rep.left++
			c.add(now, addition{txnID: tx.TransactionalID, producerID: tx.ProducerID, epoch: tx.ProducerEpoch, partitions: tps, v2: true},
				func(code int16) {
					rt.Topics = batchTopics(tps, func(TopicPartition) int16 { return code })
					c.release(rep)
				})
		}
		c.release(rep)
		return
	}
	var tps []TopicPartition
	bad := make(map[TopicPartition]bool)
	for _, tt := range r.Topics {
		for _, p := range tt.Partitions {
			tp := TopicPartition{tt.Topic, p}
			tps = append(tps, tp)
			if tt.Topic == "" || p < 0 {
				bad[tp] = true
			}
		}
	}
	if len(bad) > 0 {
		// As Kafka: the partitions at fault get their error, the rest
		// were not attempted.
		resp.Topics = clientTopics(tps, func(tp TopicPartition) int16 {
			if bad[tp] {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		})
		c.release(rep)
		return
	}
	c.add(now, addition{txnID: r.TransactionalID, producerID: r.ProducerID, epoch: r.ProducerEpoch, partitions: tps, oldFence: r.Version < 2},
		func(code int16) {
			resp.Topics = clientTopics(tps, func(TopicPartition) int16 { return code })
			c.release(rep)
		})
}

// verify answers a partition owner asking whether the partitions are in
// the producer's Ongoing transaction at that epoch, without changing
// anything: 0 for those in it, INVALID_TXN_STATE for the others (the
// owner turns it into its Produce version's error), or the id's error for
// all. A write in flight does not matter: partitions join the state only
// once persisted.
func (c *Coordinator) verify(txnID string, producerID int64, epoch int16, tps []TopicPartition) func(TopicPartition) int16 {
	t, code := c.validate(txnID, producerID, epoch, false, false)
	if code != 0 {
		return func(TopicPartition) int16 { return code }
	}
	return func(tp TopicPartition) int16 {
		if t.rec.State == Ongoing && t.rec.hasPartition(tp) {
			return 0
		}
		return kerr.InvalidTxnState.Code
	}
}

// addOffsets serves AddOffsetsToTxn: the group joins the transaction, so
// its offsets may be committed in it.
func (c *Coordinator) addOffsets(now time.Time, id uint64, r *kmsg.AddOffsetsToTxnRequest) {
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		c.respond(id, resp)
		return
	}
	c.add(now, addition{txnID: r.TransactionalID, producerID: r.ProducerID, epoch: r.ProducerEpoch, group: r.Group, oldFence: r.Version < 2},
		func(code int16) {
			resp.ErrorCode = code
			c.respond(id, resp)
		})
}

// clientTopics answers a v0-3 AddPartitionsToTxn, partition by partition,
// in the request's order.
func clientTopics(tps []TopicPartition, code func(TopicPartition) int16) []kmsg.AddPartitionsToTxnResponseTopic {
	var out []kmsg.AddPartitionsToTxnResponseTopic
	for _, tp := range tps {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, kmsg.AddPartitionsToTxnResponseTopic{Topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: tp.Partition, ErrorCode: code(tp)})
	}
	return out
}

// batchTopics is clientTopics for one transaction of a v4+ batch.
func batchTopics(tps []TopicPartition, code func(TopicPartition) int16) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	var out []kmsg.AddPartitionsToTxnResponseTransactionTopic
	for _, tp := range tps {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: tp.Partition, ErrorCode: code(tp)})
	}
	return out
}
