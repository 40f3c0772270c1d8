package sharestore

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/disgw/disgw/gateway/plog/sharestate"
)

// version is a record read back with the epoch of the owner that wrote it.
type version struct {
	epoch uint32
	rec   sharestate.Record
}

// history is what the log holds of one share-partition.
type history struct {
	// snap is the latest snapshot and updates the ones that follow it
	// without a gap: what Load rebuilds the state from.
	snap    *version
	updates []sharestate.Record
	// keys are every key of the share-partition the log may still hold
	// a value under, fenced or corrupt ones included, tombstoned once the
	// next snapshot is durable.
	keys map[string]struct{}
	// deleted is the epoch of the latest deletion record: what lower
	// epochs write after it is a former owner's late write.
	deleted uint32
}

// parsed is a log partition read back.
type parsed struct {
	// fence is the highest epoch of a load record.
	fence  uint32
	shares map[Key]*history
}

// highestEpoch is the highest epoch entries name, in load records or
// keys: a new owner takes one above it.
func highestEpoch(entries []Entry) uint32 {
	var epoch uint32
	for _, e := range entries {
		if len(e.Key) == 0 {
			if len(e.Value) == 4 {
				epoch = max(epoch, binary.BigEndian.Uint32(e.Value))
			}
			continue
		}
		if pk, err := parseKey(e.Key); err == nil {
			epoch = max(epoch, pk.epoch)
		}
	}
	return epoch
}

// parse reads a log partition's records, oldest first, as compaction
// would leave them: a later value or tombstone under a key replaces the
// earlier one. A record or tombstone whose epoch is below a load record
// before it was written by a fenced owner and is skipped; a record that
// does not decode is reported to logf and counts as removing its key. A
// deletion record removes every record of its share-partition before it,
// and skips those of lower epochs after it.
func parse(entries []Entry, logf func(error)) parsed {
	out := parsed{shares: make(map[Key]*history)}
	type liveRecord struct {
		pk parsedKey
		v  version
	}
	live := make(map[string]liveRecord)
	for _, e := range entries {
		if len(e.Key) == 0 {
			if len(e.Value) != 4 {
				logf(fmt.Errorf("sharestore: load record of %d bytes", len(e.Value)))
				continue
			}
			out.fence = max(out.fence, binary.BigEndian.Uint32(e.Value))
			continue
		}
		pk, err := parseKey(e.Key)
		if err != nil {
			logf(err)
			continue
		}
		h := out.shares[pk.k]
		if h == nil {
			h = &history{keys: make(map[string]struct{})}
			out.shares[pk.k] = h
		}
		key := string(e.Key)
		h.keys[key] = struct{}{}
		if pk.epoch < out.fence || pk.epoch < h.deleted {
			continue
		}
		if e.Value == nil {
			delete(live, key)
			continue
		}
		if pk.deletion {
			if len(e.Value) != len(deletionValue) {
				logf(fmt.Errorf("sharestore: share-partition %q/%q/%d: deletion record of %d bytes", pk.k.Group, pk.k.Topic, pk.k.Partition, len(e.Value)))
				continue
			}
			for s := range h.keys {
				delete(live, s)
			}
			h.deleted = max(h.deleted, pk.epoch)
			continue
		}
		rec, err := sharestate.Decode(e.Value)
		if err == nil && (rec.Snapshot != pk.snapshot || !pk.snapshot && rec.Seq != pk.seq) {
			err = fmt.Errorf("sharestore: record %d (snapshot %t) under a key for %d (snapshot %t)", rec.Seq, rec.Snapshot, pk.seq, pk.snapshot)
		}
		if err != nil {
			logf(fmt.Errorf("sharestore: share-partition %q/%q/%d: %w", pk.k.Group, pk.k.Topic, pk.k.Partition, err))
			delete(live, key)
			continue
		}
		live[key] = liveRecord{pk, version{pk.epoch, rec}}
	}
	updates := make(map[Key][]version)
	for _, l := range live {
		h := out.shares[l.pk.k]
		if !l.pk.snapshot {
			updates[l.pk.k] = append(updates[l.pk.k], l.v)
		} else if h.snap == nil || newer(l.v, *h.snap) {
			h.snap = &l.v
		}
	}
	for k, h := range out.shares {
		if h.snap == nil {
			if n := len(updates[k]); n > 0 {
				logf(fmt.Errorf("sharestore: share-partition %q/%q/%d: %d updates and no snapshot", k.Group, k.Topic, k.Partition, n))
			}
			continue
		}
		h.updates = chain(*h.snap, updates[k])
	}
	return out
}

// newer orders two snapshots of a share-partition: a later owner's first
// record is a snapshot of everything it read, so a higher epoch is the
// later, also when compaction dropped the load record that fenced a
// former owner's late snapshot; within an epoch the higher number is.
func newer(a, b version) bool {
	return a.epoch > b.epoch || a.epoch == b.epoch && a.rec.Seq > b.rec.Seq
}

// chain is the updates that follow snap one by one, written by its owner:
// those numbered at or before it are skipped (written before it, or
// written again after a failed write), and the first missing number ends
// it, since what follows a gap cannot be applied.
func chain(snap version, updates []version) []sharestate.Record {
	slices.SortFunc(updates, func(a, b version) int { return cmp.Compare(a.rec.Seq, b.rec.Seq) })
	var out []sharestate.Record
	next := snap.rec.Seq + 1
	for _, u := range updates {
		if u.epoch != snap.epoch || u.rec.Seq < next {
			continue
		}
		if u.rec.Seq > next {
			break
		}
		out = append(out, u.rec)
		next++
	}
	return out
}
