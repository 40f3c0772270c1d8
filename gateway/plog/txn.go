package plog

import (
	"cmp"
	"context"
	"slices"
	"sort"

	"github.com/disgw/disgw/protocol"
)

// The partition side of transactions (docs/design.md §13): what the
// partition's published batches say of transactions, followed batch by
// batch as they are published (Partition.appended) and rebuilt the same
// way after a restart from a snapshot and the batches after it
// (txn_snapshot.go). Being built from published batches only, it never
// holds a batch that failed to be written: the writer's own view of what
// it accepted (markers.go) may run ahead of it.

// Aborted is one aborted transaction of a partition: its producer, its
// first offset and the offset of the marker that aborted it, the range a
// read_committed consumer drops the producer's records in.
type Aborted struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// txnProducer is what the partition knows of a transactional producer:
// its epoch and the coordinator epoch and kind of its last marker, which
// fence zombies, and when it last wrote, which expires it.
type txnProducer struct {
	Epoch            int16 `json:"e"`
	CoordinatorEpoch int32 `json:"c"`
	// Marker is 0 before any marker, 1 after an abort, 2 after a commit;
	// MarkerEpoch the epoch of that marker.
	Marker      int8  `json:"m,omitempty"`
	MarkerEpoch int16 `json:"me,omitempty"`
	// LastTimestamp is the max timestamp of its last batch.
	LastTimestamp int64 `json:"t"`
}

// Marker kinds of txnProducer.Marker.
const (
	markerNone int8 = iota
	markerAbort
	markerCommit
)

func markerKind(commit bool) int8 {
	if commit {
		return markerCommit
	}
	return markerAbort
}

// txnState is a kafka-format partition's transactions, guarded by
// Partition.mu.
type txnState struct {
	// loaded is set once the state is rebuilt (or known empty); until
	// then read_committed reads, markers and idempotent batches wait for
	// ensureTxn.
	loaded bool
	// open maps each producer with an open transaction to its first
	// offset; aborted lists aborted transactions by marker offset.
	open      map[int64]int64
	aborted   []Aborted
	producers map[int64]*txnProducer
	// version counts changes, so a snapshot knows whether it is still
	// the state.
	version int64
	// ptr is the pointer the watermark checkpoint holds (txn_snapshot.go);
	// snapVersion the version its snapshot holds, -1 none.
	ptr         txnPointer
	snapVersion int64
}

// lsoLocked is the last stable offset: the first offset of the oldest
// open transaction, or the high watermark.
func (ps *Partition) lsoLocked() int64 {
	lso := ps.next
	for _, first := range ps.txn.open {
		lso = min(lso, first)
	}
	return lso
}

// applyLocked follows one batch published at the partition's end (data is
// at least its header; a control batch is whole, being small). It is the
// one rule set both the live partition and a recovery's replay follow, so
// that both reach the same state.
func (ps *Partition) applyLocked(info protocol.BatchInfo, data []byte) {
	tx := &ps.txn
	if info.ProducerID < 0 || !info.Transactional() {
		return
	}
	p := tx.producers[info.ProducerID]
	if p == nil {
		p = &txnProducer{Epoch: info.ProducerEpoch, CoordinatorEpoch: -1}
		if tx.producers == nil {
			tx.producers = make(map[int64]*txnProducer)
		}
		tx.producers[info.ProducerID] = p
	}
	p.Epoch = max(p.Epoch, info.ProducerEpoch)
	p.LastTimestamp = info.MaxTimestamp
	tx.version++
	if !info.Control() {
		if _, ok := tx.open[info.ProducerID]; !ok {
			if tx.open == nil {
				tx.open = make(map[int64]int64)
			}
			tx.open[info.ProducerID] = info.BaseOffset
		}
		return
	}
	commit, coordEpoch, err := protocol.ParseEndTxnMarker(data)
	if err != nil {
		ps.d.Log.Warn().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
			Int64("offset", info.BaseOffset).Msg("a control batch that is no transaction marker is ignored")
		return
	}
	p.CoordinatorEpoch = max(p.CoordinatorEpoch, coordEpoch)
	p.Marker, p.MarkerEpoch = markerKind(commit), info.ProducerEpoch
	first, ok := tx.open[info.ProducerID]
	if !ok {
		return
	}
	delete(tx.open, info.ProducerID)
	if !commit {
		tx.aborted = append(tx.aborted, Aborted{ProducerID: info.ProducerID, FirstOffset: first, LastOffset: info.BaseOffset})
	}
}

// applyBatchesLocked follows batches published in order.
func (ps *Partition) applyBatchesLocked(batches []Batch) {
	if !ps.txn.loaded {
		// Recovery replays these: nothing transactional is written
		// before it ends (ensureTxn comes first), and what others
		// wrote is in its range.
		return
	}
	for i := range batches {
		b := &batches[i]
		if b.Data == nil {
			continue
		}
		if info, ok := protocol.ParseBatchHead(b.Data, b.Size()); ok {
			ps.applyLocked(info, b.Data)
		}
	}
}

// txnFloorLocked is the offset below which no aborted transaction is
// needed: the log start, or a kept topic's cut, below which the
// generation holds no aborted data (rewrite.go).
func (ps *Partition) txnFloorLocked() int64 {
	floor := ps.logStart
	if ps.earliestSeq >= 0 {
		floor = max(floor, ps.earliestOff)
	}
	if ps.gen != nil {
		floor = max(floor, ps.gen.cut())
	}
	return floor
}

// trimAbortedLocked drops the aborted transactions wholly below the
// floor, as retention, DeleteRecords or a kept topic's rewrite moved it.
func (ps *Partition) trimAbortedLocked() {
	floor := ps.txnFloorLocked()
	tx := &ps.txn
	i := 0
	for i < len(tx.aborted) && tx.aborted[i].LastOffset < floor {
		i++
	}
	if i > 0 {
		tx.aborted = slices.Delete(tx.aborted, 0, i)
		tx.version++
	}
}

// LastStableOffset is the partition's last stable offset (docs/design.md
// §13): read_committed consumers read below it, and ListOffsets latest
// answers it to them. It rebuilds the transaction state on first use.
func (ps *Partition) LastStableOffset(ctx context.Context) (int64, error) {
	if err := ps.ensureTxn(ctx); err != nil {
		return 0, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.lsoLocked(), nil
}

// AbortedIn lists the aborted transactions whose range overlaps [from,
// to), by first offset, as a read_committed fetch of that range reports
// them so that the consumer drops their records. The state must be
// loaded (LastStableOffset or ensureTxn first).
func (ps *Partition) AbortedIn(from, to int64) []Aborted {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.trimAbortedLocked()
	return abortedIn(ps.txn.aborted, from, to)
}

// abortedIn is AbortedIn over aborted, ascending by last offset.
func abortedIn(aborted []Aborted, from, to int64) []Aborted {
	i := sort.Search(len(aborted), func(i int) bool { return aborted[i].LastOffset >= from })
	var out []Aborted
	for ; i < len(aborted); i++ {
		if a := aborted[i]; a.FirstOffset < to {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Aborted) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return out
}

// OpenTransactions maps each producer with a transaction open on the
// partition to its first offset, for DescribeProducers and tests.
func (ps *Partition) OpenTransactions() map[int64]int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(map[int64]int64, len(ps.txn.open))
	for id, first := range ps.txn.open {
		out[id] = first
	}
	return out
}

// txnEmptyLocked reports whether the partition has no transaction state
// to keep: nothing open, aborted or fencing a producer.
func (ps *Partition) txnEmptyLocked() bool {
	tx := &ps.txn
	return len(tx.open) == 0 && len(tx.aborted) == 0 && len(tx.producers) == 0
}

// expireTxnProducersLocked forgets producers with no open transaction
// that wrote nothing here for ProducerIDExpiration, as Kafka expires
// producer state, so that the state of a partition whose transactions
// stopped becomes empty.
func (ps *Partition) expireTxnProducersLocked(nowMs int64) {
	tx := &ps.txn
	for id, p := range tx.producers {
		if _, open := tx.open[id]; !open && nowMs-p.LastTimestamp > ps.d.ProducerIDExpiration.Milliseconds() {
			delete(tx.producers, id)
			tx.version++
		}
	}
}
