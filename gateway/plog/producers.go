package plog

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/protocol"
)

// Idempotent producers (docs/design.md §4): for each producer id the writer
// remembers the last batches, to answer a retried batch with its original
// offsets and refuse one out of sequence as Kafka does.

// producerState is what an idempotent producer last wrote to one partition:
// enough to answer a retried batch with its original offsets. Its fields
// are guarded by the mu of the writer whose producers map holds it.
type producerState struct {
	epoch   int16
	lastSeq int32
	recent  []*Append // the last idempotentWindow batches, oldest first
	// lastSeen is when its last batch was accepted, for expiry;
	// lastTimestamp that batch's max timestamp, for DescribeProducers.
	lastSeen      time.Time
	lastTimestamp int64
	// txn is the writer's view of its transaction on the partition
	// (markers.go).
	txn writerTxn
}

// ProducerSnapshot is one idempotent producer's state as DescribeProducers
// reports it: `kafka-transactions.sh abort` takes the coordinator epoch
// and the open transaction's first offset from it.
type ProducerSnapshot struct {
	ID            int64
	Epoch         int16
	LastSeq       int32
	LastTimestamp int64
	// CoordinatorEpoch is that of the producer's last marker here, -1
	// none; TxnStartOffset its open transaction's first offset, -1 none.
	CoordinatorEpoch int32
	TxnStartOffset   int64
}

// activeProducers lists the idempotent producers the writer tracks and has
// not expired, by producer id: what the partition's leader knows of them.
func (w *partitionWriter) activeProducers(now time.Time) []ProducerSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]ProducerSnapshot, 0, len(w.producers))
	ps := w.state
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for id, st := range w.producers {
		if now.Sub(st.lastSeen) <= w.d.ProducerIDExpiration || st.txn.open {
			snap := ProducerSnapshot{ID: id, Epoch: st.epoch, LastSeq: st.lastSeq, LastTimestamp: st.lastTimestamp,
				CoordinatorEpoch: -1, TxnStartOffset: -1}
			if p := ps.txn.producers[id]; p != nil {
				snap.CoordinatorEpoch = p.CoordinatorEpoch
			}
			if first, ok := ps.txn.open[id]; ok {
				snap.TxnStartOffset = first
			}
			out = append(out, snap)
		}
	}
	slices.SortFunc(out, func(a, b ProducerSnapshot) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// maxTimestamp is the largest timestamp of op's records, as its producer
// state keeps it; a LogAppendTime batch is stamped when it is written, so
// it gets the time it was accepted, which that stamp follows closely.
func (op *Append) maxTimestamp(now time.Time) int64 {
	if op.LogAppendTime {
		return now.UnixMilli()
	}
	ts := int64(-1)
	for i := range op.Entries {
		if e := &op.Entries[i]; e.Timestamp != nil {
			ts = max(ts, *e.Timestamp)
		}
	}
	return ts
}

// idempotentWindow is how many batches per producer and partition are
// remembered for de-duplication; Kafka allows at most 5 in flight.
const idempotentWindow = 5

// producerPruneInterval is how often a writer looks for expired producers
// when new ones arrive (Kafka's producer.id.expiration.check.interval.ms
// is 10 minutes; a cheaper scan can run more often).
const producerPruneInterval = time.Minute

// ActiveProducers lists the idempotent producers the partition's writer
// tracks and has not expired as of now, by producer id. On a kafka-format
// partition call EnsureProducers first, so that they are rebuilt from its
// tail after a restart.
func (ps *Partition) ActiveProducers(now time.Time) []ProducerSnapshot {
	return ps.writer.activeProducers(now)
}

// checkSequence applies Kafka's idempotent-producer rules, and its
// transaction rules (docs/design.md §13): a batch of an epoch below the
// producer's (its last marker's included) is fenced, a transactional
// batch opens the producer's transaction when none is open, and a batch
// without the bit is refused while one is. A producer the writer has no
// state for (new, expired, evicted, or state lost in a gateway restart)
// may start at any sequence.
func (w *partitionWriter) checkSequence(op *Append) (*Append, int16) {
	now := time.Now()
	st := w.producers[op.ProducerID]
	if st != nil && now.Sub(st.lastSeen) > w.d.ProducerIDExpiration && !st.txn.open {
		delete(w.producers, op.ProducerID)
		st = nil
	}
	fresh := st == nil
	if fresh {
		w.makeRoomForProducer(now)
		st = &producerState{epoch: op.Epoch}
		w.producers[op.ProducerID] = st
	}
	w.seedTxnLocked(op.ProducerID, st)
	switch {
	case op.Epoch < st.epoch:
		return nil, kerr.InvalidProducerEpoch.Code
	case fresh:
	case op.Epoch > st.epoch:
		if op.FirstSeq != 0 {
			return nil, kerr.OutOfOrderSequenceNumber.Code
		}
		*st = producerState{epoch: op.Epoch, txn: st.txn}
	default:
		for _, r := range st.recent {
			if r.FirstSeq == op.FirstSeq && r.LastSeq == op.LastSeq {
				return r, 0
			}
		}
		if op.FirstSeq != nextSequence(st.lastSeq) {
			if len(st.recent) > 0 && op.FirstSeq < st.recent[0].FirstSeq {
				return nil, kerr.DuplicateSequenceNumber.Code
			}
			return nil, kerr.OutOfOrderSequenceNumber.Code
		}
	}
	if !op.Transactional && st.txn.open {
		return nil, kerr.InvalidTxnState.Code
	}
	// A transactional batch that fails to be written leaves the view
	// open: harmless, since the coordinator always ends the transaction
	// with a marker, which closes it (the partition's own state opens
	// only with a published batch, at its real offset).
	st.txn.open = st.txn.open || op.Transactional
	st.lastSeq = op.LastSeq
	st.lastSeen, st.lastTimestamp = now, op.maxTimestamp(now)
	st.recent = append(st.recent, op)
	if len(st.recent) > idempotentWindow {
		st.recent[0] = nil
		st.recent = st.recent[1:]
	}
	return nil, 0
}

// makeRoomForProducer runs before a new producer's state is added. It drops
// producers idle longer than ProducerIDExpiration, as Kafka's
// producer.id.expiration.ms does, and when the partition still holds
// MaxProducersPerPartition of them evicts the one idle longest, so a client
// minting producer ids cannot grow the map without limit. An evicted
// producer's next batch is accepted at any sequence, as after a restart.
func (w *partitionWriter) makeRoomForProducer(now time.Time) {
	limit := w.d.MaxProducersPerPartition
	if len(w.producers) < limit && now.Sub(w.lastPruned) < producerPruneInterval {
		return
	}
	w.lastPruned = now
	// A producer with an open transaction stays: forgetting it would let
	// its non-transactional batches in mid-transaction.
	for id, st := range w.producers {
		if now.Sub(st.lastSeen) > w.d.ProducerIDExpiration && !st.txn.open {
			delete(w.producers, id)
		}
	}
	for len(w.producers) >= limit {
		oldest, first := int64(0), true
		for id, st := range w.producers {
			if !st.txn.open && (first || st.lastSeen.Before(w.producers[oldest].lastSeen)) {
				oldest, first = id, false
			}
		}
		if first {
			return
		}
		delete(w.producers, oldest)
	}
}

// nextSequence follows s, wrapping at int32 max as Kafka does.
func nextSequence(s int32) int32 {
	if s == 1<<31-1 {
		return 0
	}
	return s + 1
}

// producerFailed handles a failed write of an idempotent producer's op, as
// Kafka does (docs/design.md §4): the producer's sequence goes back to
// before the op, so its retry is in sequence, and its later batches still
// queued fail with OUT_OF_ORDER_SEQUENCE_NUMBER without being written, so
// the log never holds its batches out of order.
func (w *partitionWriter) producerFailed(op *Append) {
	w.mu.Lock()
	if st := w.producers[op.ProducerID]; st != nil && op.marker != nil {
		// A marker that failed was not written: its retry writes it.
		st.txn = op.prevTxn
	} else if st != nil && st.epoch == op.Epoch {
		// An earlier failed batch of the producer may already have taken
		// the sequence back past this one.
		for i, r := range st.recent {
			if r == op {
				clear(st.recent[i:])
				st.recent = st.recent[:i]
				st.lastSeq = op.FirstSeq - 1
				if op.FirstSeq == 0 {
					st.lastSeq = -1
				}
				break
			}
		}
	}
	var later []*Append
	kept := w.queue[:0]
	for _, q := range w.queue {
		if q.ProducerID == op.ProducerID && q.state.CompareAndSwap(opQueued, opTaken) {
			later = append(later, q)
			continue
		}
		kept = append(kept, q)
	}
	clear(w.queue[len(kept):])
	w.queue = kept
	w.mu.Unlock()
	var cost int64
	for _, q := range later {
		cost += q.queueCost()
		q.fail(kerr.OutOfOrderSequenceNumber.Code, "an earlier batch of this producer failed, so this one was not written")
		q.finish()
	}
	if cost > 0 {
		w.d.Queues.release(w, cost)
	}
}

// rebuildProducers takes the idempotent producers' state from the
// partition's tail, read when the writer starts: a retry of a batch written
// before a restart, or by another gateway, is answered with its original
// offsets rather than written twice. Producers the writer already tracks
// keep their state, which follows their queued batches too.
func (w *partitionWriter) rebuildProducers(tail []Batch) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	rebuilt := make(map[int64]bool)
	for i := range tail {
		info, ok := protocol.ParseBatchInfo(tail[i].Data)
		if !ok || info.ProducerID < 0 || info.Control() {
			// A marker's epoch reaches the writer through the
			// partition's transaction state (seedTxnLocked).
			continue
		}
		st := w.producers[info.ProducerID]
		switch {
		case st != nil && !rebuilt[info.ProducerID]:
			continue
		case st == nil && len(w.producers) >= w.d.MaxProducersPerPartition:
			continue
		case st == nil || info.ProducerEpoch > st.epoch:
			st = &producerState{epoch: info.ProducerEpoch}
			w.producers[info.ProducerID] = st
			rebuilt[info.ProducerID] = true
		case info.ProducerEpoch < st.epoch:
			continue
		}
		st.takeStored(info, now)
	}
}

// settleLanded takes the batches a write whose outcome the gateway could
// not learn stored after all, as the partition's recovery read them back
// (Partition.readLanded). The write's producers were answered with an
// error and their sequences set back (producerFailed); a producer whose
// state ends right before such a batch of its epoch gets it back, so
// that its retry is answered with the stored batch's offsets instead of
// being stored a second time.
func (w *partitionWriter) settleLanded(landed []Batch) {
	if len(landed) == 0 {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range landed {
		info, ok := protocol.ParseBatchInfo(landed[i].Data)
		if !ok || info.ProducerID < 0 || info.Control() {
			continue
		}
		if st := w.producers[info.ProducerID]; st != nil && st.epoch == info.ProducerEpoch && info.BaseSequence == nextSequence(st.lastSeq) {
			st.takeStored(info, now)
		}
	}
}

// takeStored makes a batch found stored in DIS the producer's latest, as
// if the writer had written it: a retry of it is answered with its
// offsets.
func (st *producerState) takeStored(info protocol.BatchInfo, now time.Time) {
	op := &Append{ProducerID: info.ProducerID, Epoch: info.ProducerEpoch, FirstSeq: info.BaseSequence,
		LastSeq: info.LastSequence(), BaseOffset: info.BaseOffset, Kafka: true, done: make(chan struct{})}
	op.state.Store(opTaken)
	close(op.done)
	st.lastSeq, st.lastSeen, st.lastTimestamp = op.LastSeq, now, info.MaxTimestamp
	st.recent = append(st.recent, op)
	if len(st.recent) > idempotentWindow {
		st.recent[0] = nil
		st.recent = st.recent[1:]
	}
}
