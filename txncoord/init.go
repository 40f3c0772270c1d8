package txncoord

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID serves a transactional InitProducerId: it fences every
// earlier producer of the id by bumping the epoch (a new producer id once
// the epoch runs out), after aborting a transaction still open. A request
// carrying its producer id and epoch (KIP-360) recovers that producer: it
// must be the current one, or a retry of the bump just made.
func (c *Coordinator) initProducerID(now time.Time, id uint64, r *kmsg.InitProducerIDRequest) {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	fail := func(code int16) {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
		c.respond(id, resp)
	}
	if r.TransactionalID == nil || *r.TransactionalID == "" {
		fail(kerr.InvalidRequest.Code)
		return
	}
	if r.TransactionTimeoutMillis <= 0 || int64(r.TransactionTimeoutMillis) > c.cfg.MaxTimeout.Milliseconds() {
		fail(kerr.InvalidTransactionTimeout.Code)
		return
	}
	expected := r.Version >= 3 && (r.ProducerID >= 0 || r.ProducerEpoch >= 0)
	if expected && (r.ProducerID < 0 || r.ProducerEpoch < 0) {
		fail(kerr.InvalidRequest.Code)
		return
	}
	txnID := *r.TransactionalID
	t, code := c.lookup(txnID)
	if code != 0 {
		fail(code)
		return
	}
	if t == nil {
		if len(c.txns) >= c.cfg.MaxIDs {
			c.log.Warn().Str("txn", txnID).Int("ids", len(c.txns)).Msg("new transactional id refused: the coordinator holds as many as --max-transactional-ids allows")
			fail(kerr.CoordinatorNotAvailable.Code)
			return
		}
		t = c.newTxn(now, txnID, r.TransactionTimeoutMillis)
	}
	if t.write != nil {
		fail(kerr.ConcurrentTransactions.Code)
		return
	}
	rec := &t.rec
	fenced := fencedCode(r.Version < 4)
	if expected && rec.Epoch >= 0 && r.ProducerID != rec.ProducerID &&
		(r.ProducerID != rec.LastProducerID || r.ProducerEpoch < exhaustedEpoch) {
		fail(fenced)
		return
	}
	switch rec.State {
	case PrepareCommit, PrepareAbort:
		fail(kerr.ConcurrentTransactions.Code)
		return
	case Ongoing:
		// Abort it first; the client asks again and gets the epoch after.
		c.prepareEnd(now, t, endFence, false, func(code int16) {
			if code == 0 {
				code = kerr.ConcurrentTransactions.Code
			}
			fail(code)
		})
		return
	}
	next := rec.clone()
	next.idle()
	next.State = Empty
	next.TimeoutMillis = r.TransactionTimeoutMillis
	next.UpdateMillis = millis(now)
	next.Version2 = false
	next.NextProducerID = -1
	switch {
	case rec.Epoch >= exhaustedEpoch && (!expected || r.ProducerEpoch == rec.Epoch):
		next.LastProducerID = rec.ProducerID
		next.LastEpoch = -1
		if expected {
			next.LastEpoch = rec.Epoch
		}
		next.ProducerID, next.Epoch = c.cfg.NewProducerID(), 0
	case !expected:
		next.Epoch, next.LastEpoch = rec.Epoch+1, -1
	case rec.Epoch < 0 || r.ProducerEpoch == rec.Epoch:
		next.Epoch, next.LastEpoch = rec.Epoch+1, rec.Epoch
	case r.ProducerEpoch == rec.LastEpoch:
		// A retry of the bump just made: the same answer again.
	default:
		fail(fenced)
		return
	}
	c.persist(t, next, []func(int16){func(code int16) {
		if code != 0 {
			fail(code)
			return
		}
		resp.ProducerID, resp.ProducerEpoch = next.ProducerID, next.Epoch
		c.respond(id, resp)
	}}, nil)
}

// newTxn makes an id seen for the first time: a producer id, no epoch
// yet, held only until its first record is persisted.
func (c *Coordinator) newTxn(now time.Time, txnID string, timeoutMillis int32) *txn {
	t := &txn{
		rec: Record{
			TxnID:          txnID,
			ProducerID:     c.cfg.NewProducerID(),
			Epoch:          -1,
			LastProducerID: -1,
			LastEpoch:      -1,
			NextProducerID: -1,
			TimeoutMillis:  timeoutMillis,
			State:          Empty,
			StartMillis:    -1,
			UpdateMillis:   millis(now),
		},
		part:      c.cfg.PartitionOf(txnID),
		fresh:     true,
		heapIndex: -1,
	}
	c.txns[txnID] = t
	return t
}
