package sharestore

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/disgw/disgw/gateway/plog/sharestate"
)

// Log is the keyed, compacted log the records are kept in, partitioned:
// the gateway's internal share state topic.
type Log interface {
	// Append writes one record to the partition and returns once it is
	// durable; a nil value is a tombstone.
	Append(ctx context.Context, partition int32, key, value []byte) error
	// Read returns every record of the partition, oldest first.
	Read(ctx context.Context, partition int32) ([]Entry, error)
}

// Entry is one record of a log partition.
type Entry struct {
	Key, Value []byte
}

// LogPartition is one log partition taken over by this owner: the
// share-partitions it holds and the epoch its writes carry. Its methods
// are safe for concurrent use, but each share-partition's records must be
// persisted one at a time, as sharestate.Ready hands them out.
type LogPartition struct {
	log   Log
	cfg   sharestate.Config
	logf  func(error)
	part  int32
	epoch uint32

	mu     sync.Mutex
	shares map[Key]*history // kept in step with what this owner wrote
}

// Take takes log partition part over: it reads it, writes a load record
// with an epoch above every epoch read, so that what a former owner still
// writes is skipped by every later load, and reads it again, so that
// nothing that owner wrote before the load record is missed. It fails
// when another owner took the partition meanwhile. cfg is what Load
// rebuilds share-partitions with; logf gets the records skipped as
// corrupt.
func Take(ctx context.Context, log Log, part int32, cfg sharestate.Config, logf func(error)) (*LogPartition, error) {
	entries, err := log.Read(ctx, part)
	if err != nil {
		return nil, err
	}
	epoch := highestEpoch(entries) + 1
	if err := log.Append(ctx, part, loadKey, binary.BigEndian.AppendUint32(nil, epoch)); err != nil {
		return nil, err
	}
	if entries, err = log.Read(ctx, part); err != nil {
		return nil, err
	}
	pr := parse(entries, logf)
	if pr.fence != epoch {
		return nil, fmt.Errorf("sharestore: log partition %d taken with epoch %d, found epoch %d", part, epoch, pr.fence)
	}
	return &LogPartition{log: log, cfg: cfg, logf: logf, part: part, epoch: epoch, shares: pr.shares}, nil
}

// Epoch is the epoch this owner's writes carry.
func (lp *LogPartition) Epoch() uint32 { return lp.epoch }

// Keys lists the share-partitions the log partition holds a snapshot of,
// sorted, for a takeover that loads them all (a group's: filter by Group).
func (lp *LogPartition) Keys() []Key {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	var out []Key
	for k, h := range lp.shares {
		if h.snap != nil {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, CompareKeys)
	return out
}

// Load rebuilds share-partition k from its latest snapshot and the
// updates after it, as read by Take and written since: ok is false when
// there is none (sharestate.New starts one). It is also how a caller
// recovers after Persist failed and it abandoned the partition: a record
// whose write failed is left out, and if it landed after all, the
// snapshot the loaded partition writes first takes its number and so
// supersedes it.
func (lp *LogPartition) Load(k Key) (p *sharestate.Partition, ok bool, err error) {
	snap, updates, ok := lp.Records(k)
	if !ok {
		return nil, false, nil
	}
	p, err = sharestate.Load(lp.cfg, snap, updates...)
	if err != nil {
		return nil, false, fmt.Errorf("sharestore: loading %q/%q/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	return p, true, nil
}

// deletionValue is a deletion record's value: any, as long as it is not a
// tombstone.
var deletionValue = []byte{1}

// Delete removes share-partition k: it writes a deletion record, which
// every later load finds k gone by, whatever of k the log still holds
// before it and whatever a former owner writes after it, then tombstones
// k's other keys so compaction drops them; a tombstone that fails is only
// logged, as Persist's. The deletion record itself stays until k's next
// snapshot tombstones it. On an error nothing is deleted.
func (lp *LogPartition) Delete(ctx context.Context, k Key) error {
	key := deletionKey(k, lp.epoch)
	if err := lp.log.Append(ctx, lp.part, key, deletionValue); err != nil {
		return err
	}
	lp.mu.Lock()
	h := lp.shares[k]
	if h == nil {
		h = &history{keys: make(map[string]struct{})}
		lp.shares[k] = h
	}
	h.keys[string(key)] = struct{}{}
	h.snap, h.updates = nil, nil
	lp.mu.Unlock()
	lp.tombstone(ctx, k, h, string(key))
	return nil
}

// Records are what Load rebuilds k from, for a caller that loads it
// elsewhere (another gateway, with its own sharestate.Config): k's latest
// snapshot and the updates after it; ok is false when there is none.
func (lp *LogPartition) Records(k Key) (snap sharestate.Record, updates []sharestate.Record, ok bool) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	h := lp.shares[k]
	if h == nil || h.snap == nil {
		return sharestate.Record{}, nil, false
	}
	return h.snap.rec, slices.Clone(h.updates), true
}

// Persist writes rec, the record share-partition k's Ready asked for, and
// returns nil once it is durable: the caller then reports
// Persisted(rec.Seq). After a snapshot it first tombstones every other key
// of k, so compaction keeps that snapshot and the updates to come; a
// tombstone that fails is only logged and tried again after the next
// snapshot, the snapshot being durable anyway. On an error nothing is
// persisted: the caller abandons the partition (Abandon answers with a
// retriable code) and loads it again.
func (lp *LogPartition) Persist(ctx context.Context, k Key, rec sharestate.Record) error {
	key := updateKey(k, lp.epoch, rec.Seq)
	if rec.Snapshot {
		key = snapshotKey(k, lp.epoch)
	}
	err := lp.log.Append(ctx, lp.part, key, rec.Encode())
	lp.mu.Lock()
	h := lp.shares[k]
	if h == nil {
		h = &history{keys: make(map[string]struct{})}
		lp.shares[k] = h
	}
	// Kept even on an error: the write may have landed.
	h.keys[string(key)] = struct{}{}
	if err != nil {
		lp.mu.Unlock()
		return err
	}
	if !rec.Snapshot {
		h.updates = append(h.updates, rec)
		lp.mu.Unlock()
		return nil
	}
	h.snap, h.updates = &version{lp.epoch, rec}, nil
	lp.mu.Unlock()
	lp.tombstone(ctx, k, h, string(key))
	return nil
}

// tombstone tombstones every key of k's history h but keep, logging the
// tombstones that fail, whose keys stay in h for the next try.
func (lp *LogPartition) tombstone(ctx context.Context, k Key, h *history, keep string) {
	lp.mu.Lock()
	var stale []string
	for s := range h.keys {
		if s != keep {
			stale = append(stale, s)
		}
	}
	lp.mu.Unlock()
	slices.Sort(stale)
	for _, s := range stale {
		if err := lp.log.Append(ctx, lp.part, []byte(s), nil); err != nil {
			lp.logf(fmt.Errorf("sharestore: tombstoning a record of %q/%q/%d: %w", k.Group, k.Topic, k.Partition, err))
			continue
		}
		lp.mu.Lock()
		delete(h.keys, s)
		lp.mu.Unlock()
	}
}
