package txns

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/txncoord"
)

// Driver runs every tenant's transaction coordinator. All coordinator
// calls happen under mu (docs/design.md §11); DIS calls never do.
type Driver[T comparable] struct {
	deps Deps[T]

	mu      sync.Mutex
	coords  map[string]*tenantTxns[T]
	nextID  uint64
	waiting map[uint64]chan kmsg.Response
	timer   *time.Timer
	closed  bool
}

// tenantTxns is one tenant's coordinator with what the driver keeps beside
// it: the tenant value its DIS calls use, the state partitions being
// loaded, and each partition's queue of state records to write.
type tenantTxns[T comparable] struct {
	tn      T
	c       *txncoord.Coordinator
	loading map[int32]chan struct{}
	// queues holds each state partition's records not yet written, in
	// the order the coordinator asked; a key is present while its writer
	// runs.
	queues map[int32][]txncoord.Persist
}

// New returns the driver of every tenant's transactions; Close stops it.
func New[T comparable](deps Deps[T]) *Driver[T] {
	parts := deps.Partitions
	deps.Coord.PartitionOf = func(id string) int32 { return PartitionOf(id, parts) }
	deps.Coord.Logger = deps.Log.With().Str("component", "txncoord").Logger()
	return &Driver[T]{deps: deps, coords: make(map[string]*tenantTxns[T]), waiting: make(map[uint64]chan kmsg.Response)}
}

// PartitionOf is the state partition of a transactional id among n: Kafka's
// choice, the id's Java string hash modulo n, so that the same ids share a
// partition as they would on Kafka.
func PartitionOf(id string, n int32) int32 {
	var h int32
	for _, r := range id {
		if r >= 0x10000 {
			hi, lo := utf16Pair(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// utf16Pair is r's UTF-16 surrogate pair, as Java strings hold it.
func utf16Pair(r rune) (hi, lo uint16) {
	r -= 0x10000
	return uint16(0xd800 + (r>>10)&0x3ff), uint16(0xdc00 + r&0x3ff)
}

// coordLocked is tn's coordinator, made on first use.
func (d *Driver[T]) coordLocked(tn T) *tenantTxns[T] {
	id := d.deps.Tenant(tn)
	tt := d.coords[id]
	if tt == nil {
		tt = &tenantTxns[T]{c: txncoord.New(d.deps.Coord), loading: make(map[int32]chan struct{}), queues: make(map[int32][]txncoord.Persist)}
		d.coords[id] = tt
	}
	tt.tn = tn
	return tt
}

// Step hands one transactional request for txnID to tn's coordinator,
// loading the id's state partition first, and waits for the answer. The
// answer is nil when ctx ended first or the coordinator could not be
// loaded; code then says what to answer instead.
func (d *Driver[T]) Step(ctx context.Context, tn T, txnID string, req kmsg.Request) (kmsg.Response, int16) {
	p := PartitionOf(txnID, d.deps.Partitions)
	if code := d.ensureLoaded(ctx, tn, p); code != 0 {
		return nil, code
	}
	answer := make(chan kmsg.Response, 1)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, kerr.NotCoordinator.Code
	}
	d.nextID++
	id := d.nextID
	d.waiting[id] = answer
	err := d.coordLocked(tn).c.Step(time.Now(), id, req)
	if err != nil {
		delete(d.waiting, id)
	}
	acts := d.readyLocked()
	d.mu.Unlock()
	d.carryOut(acts)
	if err != nil {
		d.deps.Log.Error().Err(err).Msg("transaction coordinator refused a request")
		return nil, kerr.UnknownServerError.Code
	}
	select {
	case resp := <-answer:
		if resp == nil {
			return nil, kerr.NotCoordinator.Code // the driver closed
		}
		return resp, 0
	case <-ctx.Done():
		d.mu.Lock()
		delete(d.waiting, id)
		d.mu.Unlock()
		return nil, kerr.RequestTimedOut.Code
	}
}

// With runs fn against tn's coordinator under the driver's lock, for its
// queries; it must not change the coordinator's state.
func (d *Driver[T]) With(tn T, fn func(c *txncoord.Coordinator)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(d.coordLocked(tn).c)
}

// Loaded makes sure the state partition of txnID is loaded, for a query
// that reads it; it returns a Kafka error code when it could not be.
func (d *Driver[T]) Loaded(ctx context.Context, tn T, txnID string) int16 {
	return d.ensureLoaded(ctx, tn, PartitionOf(txnID, d.deps.Partitions))
}

// LoadAll loads every state partition of tn this gateway coordinates, if
// tn has a state log, for the queries over all of a tenant's transactions,
// and so that a gateway taking partitions over finishes what its
// predecessor left prepared; it returns the first error code.
func (d *Driver[T]) LoadAll(ctx context.Context, tn T) int16 {
	if ok, err := d.deps.State.Exists(ctx, tn); err != nil {
		d.deps.Log.Warn().Err(err).Msg("looking for the transaction state log in DIS failed")
		return kerr.CoordinatorNotAvailable.Code
	} else if !ok {
		return 0
	}
	for p := range d.deps.Partitions {
		if !d.deps.Owns(p) {
			continue
		}
		if code := d.ensureLoaded(ctx, tn, p); code != 0 {
			return code
		}
	}
	return 0
}

// loadRecordKey is the key of the record a coordinator writes when it
// takes a state partition: no transactional id is empty (the handlers
// refuse one), so it never names one. Its value is the coordinator epoch
// taken.
const loadRecordKey = ""

// ensureLoaded loads tn's state partition p once: it reads the partition,
// takes a coordinator epoch one above every epoch it read, writes that in
// a load record so a coordinator that loaded before is fenced by it, and
// hands the records to the coordinator. Concurrent callers wait for the
// one load. A partition this gateway does not coordinate is
// NOT_COORDINATOR, and one that moved away while it loaded is not loaded.
func (d *Driver[T]) ensureLoaded(ctx context.Context, tn T, p int32) int16 {
	for {
		d.mu.Lock()
		if d.closed || !d.deps.Owns(p) {
			d.mu.Unlock()
			return kerr.NotCoordinator.Code
		}
		tt := d.coordLocked(tn)
		if tt.c.Loaded(p) {
			d.mu.Unlock()
			return 0
		}
		ch, busy := tt.loading[p]
		if !busy {
			ch = make(chan struct{})
			tt.loading[p] = ch
		}
		d.mu.Unlock()
		if busy {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return kerr.CoordinatorLoadInProgress.Code
			}
		}
		records, epoch, err := d.load(ctx, tn, p)
		d.mu.Lock()
		delete(tt.loading, p)
		close(ch)
		if err == nil && !d.closed && d.deps.Owns(p) {
			tt.c.Load(time.Now(), p, epoch, records)
			d.deps.Log.Info().Int32("partition", p).Int32("coordinator_epoch", epoch).Int("records", len(records)).Msg("loaded transaction state")
		}
		acts := d.readyLocked()
		d.mu.Unlock()
		d.carryOut(acts)
		if err != nil {
			d.deps.Log.Warn().Err(err).Int32("partition", p).Msg("loading transaction state from DIS failed")
			return kerr.CoordinatorNotAvailable.Code
		}
	}
}

// load reads state partition p and writes its load record.
func (d *Driver[T]) load(ctx context.Context, tn T, p int32) ([]txncoord.Record, int32, error) {
	ctx, cancel := context.WithTimeout(ctx, d.deps.RequestTimeout)
	defer cancel()
	entries, err := d.deps.State.Read(ctx, tn, p)
	if err != nil {
		return nil, 0, err
	}
	// A record of a lower coordinator epoch than a load record or record
	// before it was written by a coordinator that had been fenced: it is
	// skipped, and a tombstone, which carries no epoch, counts as the
	// epoch of the records before it.
	var records []txncoord.Record
	var epoch int32
	for _, e := range entries {
		switch {
		case string(e.Key) == loadRecordKey:
			if len(e.Value) == 4 {
				epoch = max(epoch, int32(binary.BigEndian.Uint32(e.Value)))
			}
		case e.Value == nil:
			records = append(records, txncoord.Record{TxnID: string(e.Key), State: txncoord.Dead, CoordinatorEpoch: epoch})
		default:
			rec, err := txncoord.Decode(e.Value)
			switch {
			case err != nil || rec.TxnID != string(e.Key):
				d.deps.Log.Error().Err(err).Int32("partition", p).Msg("skipped a transaction state record that does not decode")
			case rec.CoordinatorEpoch < epoch:
				d.deps.Log.Info().Str("transactional_id", rec.TxnID).Int32("coordinator_epoch", rec.CoordinatorEpoch).Msg("skipped a state record of a fenced coordinator")
			default:
				epoch = rec.CoordinatorEpoch
				records = append(records, rec)
			}
		}
	}
	epoch++
	if err := d.deps.State.Append(ctx, tn, p, []byte(loadRecordKey), binary.BigEndian.AppendUint32(nil, uint32(epoch))); err != nil {
		return nil, 0, err
	}
	return records, epoch, nil
}

// actions are what the coordinators asked for, carried out outside the
// driver's lock.
type actions[T comparable] struct {
	answers []answer
	writers []stateQueue[T]
	markers []markersFor[T]
	commits []commitFor[T]
}

type answer struct {
	to   chan kmsg.Response
	resp kmsg.Response
}

type stateQueue[T comparable] struct {
	tt *tenantTxns[T]
	p  int32
}

type markersFor[T comparable] struct {
	tt *tenantTxns[T]
	m  txncoord.Markers
}

type commitFor[T comparable] struct {
	tt *tenantTxns[T]
	c  txncoord.CommitOffsets
}

// readyLocked takes every coordinator's Ready: queues its state records
// (starting a partition's writer when none runs), collects its markers,
// commits and answers, and arms the timer for the earliest deadline.
func (d *Driver[T]) readyLocked() actions[T] {
	var acts actions[T]
	var next time.Time
	for _, tt := range d.coords {
		rd := tt.c.Ready()
		for _, p := range rd.Persist {
			q, running := tt.queues[p.Partition]
			tt.queues[p.Partition] = append(q, p)
			if !running {
				acts.writers = append(acts.writers, stateQueue[T]{tt, p.Partition})
			}
		}
		for _, m := range rd.Markers {
			acts.markers = append(acts.markers, markersFor[T]{tt, m})
		}
		for _, c := range rd.Commits {
			acts.commits = append(acts.commits, commitFor[T]{tt, c})
		}
		for _, e := range rd.Ended {
			d.deps.Ended(e.Commit)
		}
		for _, r := range rd.Responses {
			if ch, ok := d.waiting[r.ID]; ok {
				delete(d.waiting, r.ID)
				acts.answers = append(acts.answers, answer{ch, r.Msg})
			}
		}
		if !rd.NextTick.IsZero() && (next.IsZero() || rd.NextTick.Before(next)) {
			next = rd.NextTick
		}
	}
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if !next.IsZero() && !d.closed {
		d.timer = time.AfterFunc(max(time.Until(next), 0), func() { d.deps.Go("transaction coordinator tick", d.tick) })
	}
	return acts
}

// carryOut answers, and starts the writers, marker senders and offset
// commits the coordinators asked for.
func (d *Driver[T]) carryOut(acts actions[T]) {
	for _, a := range acts.answers {
		a.to <- a.resp
	}
	for _, w := range acts.writers {
		d.deps.Go("transaction state writer", func() { d.writeState(w.tt, w.p) })
	}
	for _, m := range acts.markers {
		d.deps.Go("transaction markers", func() { d.sendMarkers(m.tt, m.m) })
	}
	for _, c := range acts.commits {
		d.deps.Go("transaction offsets", func() { d.commitOffsets(c.tt, c.c) })
	}
}

// writeState writes tt's queued state records of partition p one at a
// time, in order, reporting each outcome, until the queue is empty.
func (d *Driver[T]) writeState(tt *tenantTxns[T], p int32) {
	for {
		d.mu.Lock()
		q := tt.queues[p]
		if len(q) == 0 || d.closed {
			delete(tt.queues, p)
			d.mu.Unlock()
			return
		}
		rec := q[0]
		tt.queues[p] = q[1:]
		tn := tt.tn
		d.mu.Unlock()
		var value []byte
		if !rec.Tombstone {
			value = rec.Record.Encode()
		}
		ctx, cancel := context.WithTimeout(d.deps.Ctx, d.deps.RequestTimeout)
		err := d.deps.State.Append(ctx, tn, p, []byte(rec.Record.TxnID), value)
		cancel()
		if err != nil {
			d.deps.Log.Warn().Err(err).Str("transactional_id", rec.Record.TxnID).Msg("writing transaction state to DIS failed")
		}
		d.step(func() { tt.c.Persisted(time.Now(), rec.Seq, err == nil) })
	}
}

// sendMarkers writes a transaction's marker into each of its partitions
// at once and reports the answers.
func (d *Driver[T]) sendMarkers(tt *tenantTxns[T], m txncoord.Markers) {
	d.mu.Lock()
	tn := tt.tn
	d.mu.Unlock()
	results := make([]txncoord.MarkerResult, len(m.Partitions))
	var wg sync.WaitGroup
	for i, tp := range m.Partitions {
		wg.Add(1)
		d.deps.Go("transaction marker", func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(d.deps.Ctx, d.deps.RequestTimeout)
			defer cancel()
			code := d.deps.WriteMarker(ctx, tn, tp, plog.Marker{ProducerID: m.ProducerID, Epoch: m.Epoch, Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch})
			results[i] = txncoord.MarkerResult{TopicPartition: tp, ErrorCode: code}
			d.deps.Marker(code)
		})
	}
	wg.Wait()
	d.step(func() { tt.c.MarkersWritten(time.Now(), m.Seq, results) })
}

// commitOffsets commits a committed transaction's offsets to its group.
func (d *Driver[T]) commitOffsets(tt *tenantTxns[T], c txncoord.CommitOffsets) {
	d.mu.Lock()
	tn := tt.tn
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(d.deps.Ctx, d.deps.RequestTimeout)
	err := d.deps.CommitOffsets(ctx, tn, c)
	cancel()
	if err != nil {
		d.deps.Log.Warn().Err(err).Str("transactional_id", c.TxnID).Str("group", c.Group).Msg("committing a transaction's offsets failed")
	}
	d.step(func() { tt.c.OffsetsCommitted(time.Now(), c.Seq, err == nil) })
}

// step runs fn under the driver's lock, unless it is closed, and carries
// out what follows.
func (d *Driver[T]) step(fn func()) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	fn()
	acts := d.readyLocked()
	d.mu.Unlock()
	d.carryOut(acts)
}

// tick advances the coordinators' clock.
func (d *Driver[T]) tick() {
	d.step(func() {
		now := time.Now()
		for _, tt := range d.coords {
			tt.c.Tick(now)
		}
	})
}

// UnloadMoved lets go of every loaded state partition this gateway no
// longer coordinates: its requests waiting on a state write are answered
// NOT_COORDINATOR, and its records not yet written are dropped, so only the
// new coordinator writes the partition from now on (design.md §13).
func (d *Driver[T]) UnloadMoved() {
	d.step(func() {
		for _, tt := range d.coords {
			for p := range d.deps.Partitions {
				if !tt.c.Loaded(p) || d.deps.Owns(p) {
					continue
				}
				tt.c.Unload(p)
				if _, running := tt.queues[p]; running {
					tt.queues[p] = nil
				}
				d.deps.Log.Info().Int32("partition", p).Msg("let go of transaction state that moved to another gateway")
			}
		}
	})
}

// Close stops the timer and answers every waiting request
// NOT_COORDINATOR, so clients look for the coordinator again.
func (d *Driver[T]) Close() {
	d.mu.Lock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
	}
	waiting := d.waiting
	d.waiting = map[uint64]chan kmsg.Response{}
	d.mu.Unlock()
	for _, ch := range waiting {
		ch <- nil
	}
}
