package dislocal

import (
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// sweepLoop deletes expired records every RetentionCheckInterval until ctx
// is done.
func (s *Server) sweepLoop(ctx context.Context) {
	defer close(s.sweepDone)
	t := time.NewTicker(s.cfg.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.sweep(ctx, s.cfg.Now()); err != nil && ctx.Err() == nil {
				s.log.Error().Err(err).Msg("dislocal: retention sweep failed")
			}
		}
	}
}

// sweep deletes, in every partition of every stream, the records written
// more than the stream's data_duration before now, advances the
// partitions' earliest sequence numbers, and deletes the record log
// segments no retained record is in. Write times are tracked per second
// (the w index), so a record is deleted up to a second after it expires,
// never before.
func (s *Server) sweep(ctx context.Context, now time.Time) error {
	s.mu.RLock()
	streams := make([]*stream, 0, len(s.streams))
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	s.mu.RUnlock()

	for _, st := range streams {
		if err := ctx.Err(); err != nil {
			return err
		}
		st.mu.RLock()
		var err error
		if !st.deleted {
			cutoff := now.Add(-time.Duration(st.meta.RetentionHours) * time.Hour).UnixMilli()
			for _, p := range st.parts {
				if err = s.sweepPartition(st.meta.Key, p, cutoff); err != nil {
					break
				}
			}
		}
		st.mu.RUnlock()
		if err != nil {
			return err
		}
	}
	return s.dropSegments()
}

// sweepPartition deletes the records of one partition written before
// cutoff (Unix ms) with range deletes, and the index entries that only
// point at them.
func (s *Server) sweepPartition(skey uint64, p *partition, cutoff int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.earliest == p.state.next {
		return nil
	}
	// Records written in second S all expired once (S+1)*1000 <= cutoff;
	// the first w entry at or after floor(cutoff/1000) starts what stays.
	wPrefix := appendPartitionPrefix(nil, kindWriteIndex, skey, p.n)
	keepFrom, keepKey, err := s.firstIndexAtOrAfter(kindWriteIndex, skey, p.n, floorDiv(cutoff, 1000))
	if err != nil {
		return err
	}
	if keepKey == nil {
		keepFrom = p.state.next
		keepKey = prefixEnd(wPrefix)
	}
	if keepFrom <= p.state.earliest {
		return nil
	}

	b := s.db.NewBatch()
	defer b.Close()
	lower := appendRecordKey(nil, skey, p.n, p.state.earliest)
	upper := appendRecordKey(nil, skey, p.n, keepFrom)
	if err := b.DeleteRange(lower, upper, nil); err != nil {
		return err
	}
	if err := b.DeleteRange(wPrefix, keepKey, nil); err != nil {
		return err
	}
	// Keep the last t entry before keepFrom: its running maximum still
	// covers the first retained records.
	tPrefix := appendPartitionPrefix(nil, kindTimeIndex, skey, p.n)
	lastExpired, err := s.lastIndexBefore(kindTimeIndex, skey, p.n, keepFrom)
	if err != nil {
		return err
	}
	if lastExpired != nil {
		if err := b.DeleteRange(tPrefix, lastExpired, nil); err != nil {
			return err
		}
	}
	state := p.state
	state.earliest = keepFrom
	if err := b.Set(partitionKey(skey, p.n), state.encode(), nil); err != nil {
		return err
	}
	if err := s.db.Apply(b, s.writeOpts); err != nil {
		return err
	}
	p.state = state
	p.visible = max(p.visible, keepFrom)
	return nil
}

// firstIndexAtOrAfter finds a partition's first t or w index entry whose
// value is >= value, and returns its sequence number and key (nil if none).
func (s *Server) firstIndexAtOrAfter(kind byte, skey uint64, n int32, value int64) (int64, []byte, error) {
	lower := appendIndexKey(nil, kind, skey, n, max(value, 0), 0)
	upper := prefixEnd(appendPartitionPrefix(nil, kind, skey, n))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, nil, err
	}
	var seq int64
	var key []byte
	if it.First() {
		var ok bool
		if _, seq, ok = indexEntry(it.Key()); !ok {
			_ = it.Close()
			return 0, nil, errors.New("corrupt index key")
		}
		key = append([]byte(nil), it.Key()...)
	}
	return seq, key, it.Close()
}

// lastIndexBefore returns the key of a partition's last t or w index entry
// whose sequence number is below seq, or nil. Entries are in sequence order
// because the indexed value only grows.
func (s *Server) lastIndexBefore(kind byte, skey uint64, n int32, seq int64) ([]byte, error) {
	prefix := appendPartitionPrefix(nil, kind, skey, n)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	var last []byte
	for ok := it.First(); ok; ok = it.Next() {
		_, entrySeq, valid := indexEntry(it.Key())
		if !valid {
			_ = it.Close()
			return nil, errors.New("corrupt index key")
		}
		if entrySeq >= seq {
			break
		}
		last = append(last[:0], it.Key()...)
	}
	return last, it.Close()
}
