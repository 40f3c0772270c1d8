package plog

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Transaction markers (docs/design.md §13) go through the partition's
// writer like data, so they are ordered with it and fenced like it. The
// writer judges them by its own view of each producer's transaction,
// writerTxn, which covers what it accepted and not only what is
// published: a retried marker whose first copy is still queued is then
// answered without a second write.

// Marker is a transaction's end in one partition: a control batch.
type Marker struct {
	ProducerID int64
	// Epoch is the epoch the marker is written with (transaction
	// version 2: the bumped epoch).
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
}

// writerTxn is the writer's view of a producer's transaction on the
// partition: open, and the coordinator epoch, kind (markerAbort,
// markerCommit) and epoch of its last marker. seeded is set once it was
// taken from the partition's transaction state; after that the writer
// keeps it itself.
type writerTxn struct {
	seeded      bool
	open        bool
	coordEpoch  int32
	marker      int8
	markerEpoch int16
}

// seedTxnLocked takes st's transaction view from the partition's
// transaction state the first time the writer judges the producer, and
// raises its epoch to the one its markers fenced. Called with w.mu held;
// the partition's mu is a leaf.
func (w *partitionWriter) seedTxnLocked(id int64, st *producerState) {
	if st.txn.seeded {
		return
	}
	ps := w.state
	ps.mu.Lock()
	p := ps.txn.producers[id]
	_, open := ps.txn.open[id]
	ps.mu.Unlock()
	st.txn = writerTxn{seeded: true, open: open, coordEpoch: -1}
	if p == nil {
		return
	}
	st.txn.coordEpoch, st.txn.marker, st.txn.markerEpoch = p.CoordinatorEpoch, p.Marker, p.MarkerEpoch
	if p.Epoch > st.epoch {
		st.epoch, st.lastSeq, st.recent = p.Epoch, -1, nil
	}
}

// checkMarker judges a marker op under w.mu. It returns op itself when
// there is nothing to write: the producer has no state here at all, or
// no open transaction and its last marker was this one (a retry). A
// marker of an epoch below the producer's is INVALID_PRODUCER_EPOCH, of a
// coordinator epoch below the last one applied
// TRANSACTION_COORDINATOR_FENCED. An accepted marker closes the view and
// makes its epoch the producer's, so that older data is fenced.
func (w *partitionWriter) checkMarker(op *Append) (*Append, int16) {
	m := op.marker
	st := w.producers[m.ProducerID]
	if st == nil {
		ps := w.state
		ps.mu.Lock()
		known := ps.txn.producers[m.ProducerID] != nil
		ps.mu.Unlock()
		if !known {
			return op, 0
		}
		now := time.Now()
		w.makeRoomForProducer(now)
		st = &producerState{epoch: m.Epoch, lastSeq: -1, lastSeen: now, lastTimestamp: -1}
		w.producers[m.ProducerID] = st
	}
	w.seedTxnLocked(m.ProducerID, st)
	kind := markerKind(m.Commit)
	switch {
	case m.Epoch < st.epoch:
		return nil, kerr.InvalidProducerEpoch.Code
	case m.CoordinatorEpoch < st.txn.coordEpoch:
		return nil, kerr.TransactionCoordinatorFenced.Code
	case !st.txn.open && st.txn.marker == kind && st.txn.markerEpoch == m.Epoch:
		return op, 0
	}
	op.prevTxn = st.txn
	if m.Epoch > st.epoch {
		st.epoch, st.lastSeq, st.recent = m.Epoch, -1, nil
	}
	st.txn = writerTxn{seeded: true, coordEpoch: m.CoordinatorEpoch, marker: kind, markerEpoch: m.Epoch}
	st.lastSeen = time.Now()
	return nil, 0
}

// WriteMarker writes m as a control batch through the partition's writer
// (so it is ordered with data and fenced like it) and returns 0 or a Kafka
// error code with a message. A marker with nothing to end (a retry of one
// written, or a producer that wrote nothing here) is answered 0 without a
// write, which keeps DIS writes down for transactions that added a
// partition and wrote nothing to it.
func (ps *Partition) WriteMarker(ctx context.Context, m Marker) (code int16, msg string) {
	now := time.Now().UnixMilli()
	data := protocol.AppendEndTxnMarker(nil, m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch, now)
	op := NewAppend(true)
	op.ProducerID, op.Epoch, op.FirstSeq, op.LastSeq = m.ProducerID, m.Epoch, -1, -1
	op.Transactional, op.marker = true, &m
	op.Entries = []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(ps.key.Partition), Data: data, Timestamp: &now}}
	op.Bytes = len(data)
	if dl, ok := ctx.Deadline(); ok {
		op.Deadline = dl
	}
	dup, code := ps.Enqueue(ctx, op)
	switch {
	case code != 0:
		return code, markerRefusal(code)
	case dup == op:
		return 0, ""
	}
	select {
	case <-op.Done():
	case <-ctx.Done():
		if op.Cancel() {
			return kerr.RequestTimedOut.Code, "the marker was not written before the request timed out"
		}
		<-op.Done()
	}
	return op.ErrCode, op.ErrMsg
}

// markerRefusal says why a marker was refused before it was queued.
func markerRefusal(code int16) string {
	switch code {
	case kerr.InvalidProducerEpoch.Code:
		return "the marker's producer epoch is below the producer's epoch on this partition"
	case kerr.TransactionCoordinatorFenced.Code:
		return "a marker of a newer coordinator epoch was written for this producer"
	case kerr.KafkaStorageError.Code:
		return "disgw could not recover the partition's transaction state from DIS; retry"
	}
	return kerr.ErrorForCode(code).Error()
}
