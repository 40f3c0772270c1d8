package plog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// A partition's transaction state survives restarts and ownership moves
// exactly (docs/design.md §13): a snapshot of it is one record of the
// tenant's TxnIndexStream, and the partition's watermark checkpoint
// points at the snapshot and the offset it holds the state at. Recovery
// loads the snapshot and replays the batch headers from that offset to the
// high watermark. No pointer means the partition never had transactional
// data: one saying "empty up to the next offset" is written before the
// first transactional batch or marker is queued (ensureTxnPointer).

// TxnIndexStream is the per-tenant DIS stream of transaction state
// snapshots: plain, one partition, DIS's longest retention; created on
// first need.
const TxnIndexStream = "disgw-txn-index"

// txnIndexRetentionHours is the index stream's retention: DIS's longest.
const txnIndexRetentionHours = 72

// txnSnapshotInterval is the least time between two snapshots of a
// partition whose state keeps changing; txnSnapshotRefresh is how often a
// snapshot of a state that has not changed is written again, so that the
// record a pointer names never expires before its successor exists.
const (
	txnSnapshotInterval = 5 * time.Second
	txnSnapshotRefresh  = 12 * time.Hour
)

// txnPointer is the watermark checkpoint's pointer: the transaction state
// at offset UpTo is the snapshot record at sequence number Seq of
// TxnIndexStream, or empty when Seq is -1.
type txnPointer struct {
	Seq  int64 `json:"seq"`
	UpTo int64 `json:"upto"`
	// set says there is a pointer; forced that it is written whether the
	// rest of the checkpoint moved or not.
	set, forced bool
}

// txnSnapshot is a snapshot record: the state after the batches below
// UpTo. Stream and partition name it for a DIS-native reader.
type txnSnapshot struct {
	Stream    string         `json:"stream"`
	Partition int32          `json:"partition"`
	UpTo      int64          `json:"upto"`
	Open      [][2]int64     `json:"open"`
	Aborted   [][3]int64     `json:"aborted"`
	Producers []snapProducer `json:"producers"`
}

// snapProducer is a txnProducer with its id.
type snapProducer struct {
	ID int64 `json:"id"`
	txnProducer
}

// txnPointerLocked is the pointer a watermark write carries: the
// partition's, moved up to the next offset when the state is what its
// snapshot holds (nothing transactional was published since), so that a
// recovery replays little.
func (ps *Partition) txnPointerLocked() *txnPointer {
	ptr := ps.txn.ptr
	if ptr.set && ps.txn.loaded && ps.txn.snapVersion == ps.txn.version {
		ptr.UpTo = max(ptr.UpTo, ps.next)
	}
	return &ptr
}

// snapshotLocked is the state as a snapshot record's content.
func (ps *Partition) snapshotLocked() *txnSnapshot {
	tx := &ps.txn
	s := &txnSnapshot{Stream: ps.key.Stream, Partition: ps.key.Partition, UpTo: ps.next,
		Open: [][2]int64{}, Aborted: [][3]int64{}, Producers: []snapProducer{}}
	for id, first := range tx.open {
		s.Open = append(s.Open, [2]int64{id, first})
	}
	slices.SortFunc(s.Open, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for _, a := range tx.aborted {
		s.Aborted = append(s.Aborted, [3]int64{a.ProducerID, a.FirstOffset, a.LastOffset})
	}
	for id, p := range tx.producers {
		s.Producers = append(s.Producers, snapProducer{ID: id, txnProducer: *p})
	}
	slices.SortFunc(s.Producers, func(a, b snapProducer) int { return cmp.Compare(a.ID, b.ID) })
	return s
}

// restoreLocked makes s the state.
func (ps *Partition) restoreLocked(s *txnSnapshot) {
	tx := &ps.txn
	tx.open, tx.aborted, tx.producers = make(map[int64]int64), nil, make(map[int64]*txnProducer)
	for _, o := range s.Open {
		tx.open[o[0]] = o[1]
	}
	for _, a := range s.Aborted {
		tx.aborted = append(tx.aborted, Aborted{ProducerID: a[0], FirstOffset: a[1], LastOffset: a[2]})
	}
	for _, p := range s.Producers {
		tp := p.txnProducer
		tx.producers[p.ID] = &tp
	}
}

// ensureTxn rebuilds the partition's transaction state on first use,
// after its offsets: until it is done, nothing answers from a partial
// state.
func (ps *Partition) ensureTxn(ctx context.Context) error {
	if err := ps.ensure(ctx); err != nil {
		return err
	}
	loaded := func() bool {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		return ps.txn.loaded
	}
	if loaded() {
		return nil
	}
	ps.recoverMu.Lock()
	defer ps.recoverMu.Unlock()
	if loaded() {
		return nil
	}
	return ps.loadTxn(ctx)
}

// loadTxn loads the snapshot the pointer names and replays the batches
// from its offset to the high watermark. A snapshot DIS no longer has
// (the partition lay untouched past the index stream's retention) is
// replaced by a replay of all the partition still holds, which misses
// only transactions whose data expired too.
func (ps *Partition) loadTxn(ctx context.Context) error {
	ps.mu.Lock()
	ptr, to := ps.txn.ptr, ps.next
	ps.mu.Unlock()
	snap := &txnSnapshot{}
	from := ptr.UpTo
	if !ptr.set {
		from = to
	} else if ptr.Seq >= 0 {
		s, err := ps.readTxnSnapshot(ctx, ptr.Seq)
		switch {
		case errors.Is(err, errNoSnapshot):
			ps.d.Log.Warn().Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).Int64("sequence_number", ptr.Seq).
				Msg("the partition's transaction snapshot expired; its transactions are rebuilt from what the partition holds")
			from = 0
		case err != nil:
			return err
		default:
			snap = s
		}
	}
	ps.mu.Lock()
	ps.restoreLocked(snap)
	clean := ps.txn.version
	ps.mu.Unlock()
	if from < to {
		earliestSeq, _, ok, err := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition)
		if err != nil {
			return err
		}
		if !ok {
			return errNotRecovered
		}
		earliest, err := ps.storedEarliest(ctx, earliestSeq)
		if err != nil {
			return err
		}
		if err := ps.replayTxn(ctx, max(from, earliest), to); err != nil {
			return err
		}
	}
	ps.mu.Lock()
	ps.txn.loaded = true
	if ptr.set {
		ps.txn.snapVersion = clean
	} else {
		ps.txn.snapVersion = -1
	}
	dirty := ptr.set && ps.txn.version != clean
	open := len(ps.txn.open) > 0
	ps.mu.Unlock()
	if dirty {
		ps.scheduleTxnSnapshot()
	}
	if open {
		ps.d.TxnsOpen()
		ps.catchUpLater()
	}
	return nil
}

// catchUpDelays are when, after a recovery that found transactions open,
// the partition looks in DIS for records written after it read its end: a
// write another gateway had in flight when the partition moved here (a
// marker among them) lands up to a request timeout later, and must not
// keep a transaction open here on a partition nobody writes again.
var catchUpDelays = []time.Duration{time.Second, 0}

// catchUpLater looks for such late records once a second after recovery
// and once a request timeout after it.
func (ps *Partition) catchUpLater() {
	for _, d := range catchUpDelays {
		if d == 0 {
			d = ps.d.RequestTimeout
		}
		time.AfterFunc(d, func() {
			if cur, ok := ps.t.Peek(ps.key); !ok || cur != ps || ps.d.Ctx.Err() != nil {
				return
			}
			ps.d.Go("partition catch-up", func() {
				ctx, cancel := context.WithTimeout(ps.d.Ctx, ps.d.RequestTimeout)
				defer cancel()
				if err := ps.catchUp(ctx); err != nil && ps.d.Ctx.Err() == nil {
					ps.d.Log.Warn().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
						Msg("looking for records written after the partition's recovery failed; its next write finds them")
				}
			})
		})
	}
}

// catchUp reads what was written past the partition's known end, as the
// writer's fence does (readBack), taking the writer's place meanwhile so
// that none of this gateway's own writes is in flight and taken for
// another's; while the writer runs it does nothing, since the writer's
// next write finds those records itself.
func (ps *Partition) catchUp(ctx context.Context) error {
	w := ps.writer
	w.mu.Lock()
	if w.running || w.evicted || w.completing || len(w.queue) > 0 {
		w.mu.Unlock()
		return nil
	}
	w.running = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if len(w.queue) > 0 {
			go w.run()
		} else {
			w.running = false
		}
		w.mu.Unlock()
	}()
	_, nextSeq, ok, err := ps.d.Refresh(ctx, ps.key.Topic, ps.key.Partition)
	if err != nil || !ok {
		return err
	}
	ps.mu.Lock()
	known, recovered := ps.nextSeq, ps.recovered
	ps.mu.Unlock()
	if !recovered || nextSeq <= known {
		return nil
	}
	if _, err := ps.readBack(ctx, known, nil); err != nil {
		ps.forget()
		return err
	}
	return nil
}

// replayTxn applies the batches of [from, to) to the state, in order,
// reading their headers with the partition's cursor.
func (ps *Partition) replayTxn(ctx context.Context, from, to int64) error {
	ps.reads.readMu.Lock()
	defer ps.reads.readMu.Unlock()
	for off := from; off < to; {
		batches, err := ps.readDIS(ctx, off, 0)
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			return fmt.Errorf("replaying the partition's transactions: nothing at offset %d below the high watermark %d", off, to)
		}
		ps.mu.Lock()
		for i := range batches {
			b := &batches[i]
			if b.Data == nil || b.base < off || b.base >= to {
				continue
			}
			if info, ok := protocol.ParseBatchHead(b.Data, b.Size()); ok {
				ps.applyLocked(info, b.Data)
			}
		}
		ps.mu.Unlock()
		off = max(off, batches[len(batches)-1].last+1)
	}
	return nil
}

// errNoSnapshot is a snapshot record DIS no longer holds.
var errNoSnapshot = errors.New("the transaction snapshot is gone")

// readTxnSnapshot reads the snapshot record at seq.
func (ps *Partition) readTxnSnapshot(ctx context.Context, seq int64) (*txnSnapshot, error) {
	c, err := ps.d.DIS.GetCursor(ctx, &disclient.GetCursorRequest{
		StreamName: TxnIndexStream, PartitionID: disclient.PartitionID(0),
		CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: strconv.FormatInt(seq, 10),
	})
	if disclient.IsCode(err, disclient.CodeSequenceOutOfRange) || disclient.IsCode(err, disclient.CodeStreamNotFound) {
		return nil, errNoSnapshot
	}
	if err != nil {
		return nil, err
	}
	resp, err := ps.d.DIS.GetRecords(ctx, c.PartitionCursor, ps.d.ReadBytes)
	if err != nil {
		return nil, err
	}
	if len(resp.Records) == 0 || resp.Records[0].SequenceNumber != strconv.FormatInt(seq, 10) {
		return nil, errNoSnapshot
	}
	s := &txnSnapshot{}
	if err := json.Unmarshal(resp.Records[0].Data, s); err != nil {
		return nil, fmt.Errorf("the transaction snapshot at sequence number %d does not parse: %w", seq, err)
	}
	if s.Stream != ps.key.Stream || s.Partition != ps.key.Partition {
		return nil, fmt.Errorf("the transaction snapshot at sequence number %d is of %s/%d", seq, s.Stream, s.Partition)
	}
	return s, nil
}

// ensureTxnPointer writes the pointer "empty up to the next offset"
// before the partition's first transactional batch or marker, when it has
// none, so that a partition without a pointer never had transactions and
// its recovery reads nothing for them.
func (ps *Partition) ensureTxnPointer(ctx context.Context) error {
	ps.mu.Lock()
	set := ps.txn.ptr.set
	ps.mu.Unlock()
	if set {
		return nil
	}
	ps.markMu.Lock()
	defer ps.markMu.Unlock()
	ps.mu.Lock()
	if ps.txn.ptr.set {
		ps.mu.Unlock()
		return nil
	}
	ptr := &txnPointer{Seq: -1, UpTo: ps.next, set: true, forced: true}
	version, empty := ps.txn.version, ps.txnEmptyLocked()
	ps.mu.Unlock()
	if !empty {
		return errors.New("the partition has transaction state but no pointer to it")
	}
	if err := ps.writeWatermarkLocked(ctx, -1, ptr); err != nil {
		return err
	}
	ps.mu.Lock()
	ps.txn.snapVersion = version
	ps.mu.Unlock()
	return nil
}

// scheduleTxnSnapshot has a snapshot written txnSnapshotInterval after
// the last one written or failed, at most one at a time: a write that
// failed is tried again that much later, not at once, which would call
// DIS in a loop for as long as it keeps failing.
func (ps *Partition) scheduleTxnSnapshot() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.txnSnapDo {
		return
	}
	ps.txnSnapDo = true
	delay := max(txnSnapshotInterval-time.Since(ps.txnSnapAt), txnSnapshotInterval-time.Since(ps.txnSnapFailed), 0)
	time.AfterFunc(delay, func() {
		ps.d.Go("transaction snapshot", func() {
			ps.mu.Lock()
			ps.txnSnapDo = false
			ps.mu.Unlock()
			if cur, ok := ps.t.Peek(ps.key); !ok || cur != ps || ps.d.Ctx.Err() != nil || ps.gone.Load() {
				return // dropped (moved to another gateway) or gone
			}
			ctx, cancel := context.WithTimeout(ps.d.Ctx, ps.d.RequestTimeout)
			defer cancel()
			if err := ps.writeTxnSnapshot(ctx); err != nil {
				ps.txnSnapshotFailed(err, "writing the partition's transaction snapshot failed; it is tried again")
			}
		})
	})
}

// txnSnapshotFailed logs a snapshot write's failure and schedules the
// next try, unless the partition's stream is gone.
func (ps *Partition) txnSnapshotFailed(err error, msg string) {
	log := ps.d.Log.With().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).Logger()
	if ps.gone.Load() {
		log.Info().Msg("the partition's stream is gone; its transaction snapshot is no longer written")
		return
	}
	log.Warn().Msg(msg)
	ps.mu.Lock()
	ps.txnSnapFailed = time.Now()
	ps.mu.Unlock()
	ps.scheduleTxnSnapshot()
}

// writeTxnSnapshot writes the state as a snapshot record and points the
// watermark checkpoint at it, when it changed since the last one or the
// last is older than txnSnapshotRefresh: so a refresh that failed is made
// by the write tried again after it. An empty state needs no record: the
// pointer says "empty".
func (ps *Partition) writeTxnSnapshot(ctx context.Context) error {
	ps.markMu.Lock()
	defer ps.markMu.Unlock()
	ps.mu.Lock()
	if !ps.txn.loaded || !ps.txn.ptr.set {
		ps.mu.Unlock()
		return nil
	}
	ps.trimAbortedLocked()
	ps.expireTxnProducersLocked(time.Now().UnixMilli())
	tx := &ps.txn
	stale := tx.ptr.Seq >= 0 && time.Since(ps.txnSnapAt) >= txnSnapshotRefresh
	if tx.snapVersion == tx.version && !stale {
		ps.mu.Unlock()
		return nil
	}
	version, empty, snap := tx.version, ps.txnEmptyLocked(), ps.snapshotLocked()
	ps.mu.Unlock()
	ptr := &txnPointer{Seq: -1, UpTo: snap.UpTo, set: true, forced: true}
	if !empty {
		data, err := json.Marshal(snap)
		if err != nil {
			return err
		}
		if len(data) > ps.d.MaxRecordBytes {
			return fmt.Errorf("the transaction snapshot is %d bytes, over a DIS record's %d", len(data), ps.d.MaxRecordBytes)
		}
		if ptr.Seq, err = ps.t.putTxnSnapshot(ctx, data); err != nil {
			return err
		}
	}
	if err := ps.writeWatermarkLocked(ctx, -1, ptr); err != nil {
		if disclient.IsCode(err, disclient.CodeStreamNotFound) {
			ps.gone.Store(true)
		}
		return err
	}
	ps.mu.Lock()
	ps.txn.snapVersion, ps.txnSnapAt = version, time.Now()
	ps.mu.Unlock()
	if !empty {
		ps.refreshTxnSnapshotLater()
	}
	return nil
}

// refreshTxnSnapshotLater writes the snapshot again txnSnapshotRefresh
// from now while the partition is still this gateway's (not dropped), so
// that the record its pointer names outlives DIS's retention. A partition
// with transaction state is never dropped as idle (Partition.idle), only
// when it moves to another gateway, which then keeps the snapshot.
func (ps *Partition) refreshTxnSnapshotLater() {
	time.AfterFunc(txnSnapshotRefresh, func() {
		if cur, ok := ps.t.Peek(ps.key); !ok || cur != ps || ps.d.Ctx.Err() != nil {
			return
		}
		ps.d.Go("transaction snapshot refresh", func() {
			ctx, cancel := context.WithTimeout(ps.d.Ctx, ps.d.RequestTimeout)
			defer cancel()
			if err := ps.writeTxnSnapshot(ctx); err != nil {
				ps.txnSnapshotFailed(err, "writing the partition's transaction snapshot again failed; it is tried again")
			}
		})
	})
}

// putTxnSnapshot appends data to the tenant's TxnIndexStream, creating
// the stream on first need, and returns its sequence number.
func (tn *Tenant) putTxnSnapshot(ctx context.Context, data []byte) (int64, error) {
	req := &disclient.PutRecordsRequest{StreamName: TxnIndexStream, Records: []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(0), Data: data}}}
	for created := false; ; {
		resp, err := tn.d.DIS.PutRecords(ctx, req)
		switch {
		case disclient.IsCode(err, disclient.CodeStreamNotFound) && !created:
			hours := int32(txnIndexRetentionHours)
			err = tn.d.DIS.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: TxnIndexStream, PartitionCount: 1,
				StreamType: disclient.StreamTypeCommon, DataType: disclient.DataTypeBlob, DataDuration: &hours})
			if err != nil && !disclient.IsCode(err, disclient.CodeStreamExists) {
				return 0, err
			}
			created = true
			continue
		case disclient.IsCode(err, disclient.CodeStreamNotRunning), disclient.IsCode(err, disclient.CodeStreamNotFound):
			if !sleepCtx(ctx, time.Second) {
				return 0, err
			}
			continue
		case err != nil:
			return 0, err
		case len(resp.Records) != 1 || resp.Records[0].ErrorCode != "":
			return 0, fmt.Errorf("DIS refused the transaction snapshot: %+v", resp.Records)
		}
		return strconv.ParseInt(resp.Records[0].SequenceNumber, 10, 64)
	}
}
