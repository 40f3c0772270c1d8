package dislocal

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"github.com/disgw/disgw/disclient/dislocal/recordlog"
)

// recordRefAt reads the reference of record seq of a partition.
func (s *Server) recordRefAt(skey uint64, n int32, seq int64) (recordlog.Ref, error) {
	var k [recordKeyLen]byte
	v, closer, err := s.db.Get(appendRecordKey(k[:0], skey, n, seq))
	if err != nil {
		return recordlog.Ref{}, fmt.Errorf("record %d of partition %d: %w", seq, n, err)
	}
	defer closer.Close()
	ref, ok := recordlog.DecodeRef(v)
	if !ok {
		return recordlog.Ref{}, fmt.Errorf("record %d of partition %d: corrupt reference", seq, n)
	}
	ref.Head = slices.Clone(ref.Head) // v is pebble's until closed
	return ref, nil
}

// recoverLog drops, from every partition, the records whose frames are not
// in the record log: those referenced beyond lastLen in lastSeg, the
// newest segment recordlog.Open found (or in a later one), where it cut a
// torn tail. Only a crash leaves such references (pebble's WAL reached the
// disk, the log's tail did not), and with SyncAlways only for writes never
// acknowledged, since the log is fsynced before the answer. Records in
// damaged bytes before lastLen keep their references: they are
// quarantined, not dropped (recordlog's recovery.go). A partition's references grow
// with its sequence numbers, so the valid records are a prefix.
func (s *Server) recoverLog(lastSeg uint64, lastLen int64) error {
	for _, st := range s.streamsByKey {
		skey := st.meta.Key
		for _, p := range st.parts {
			earliest, next := p.state.earliest, p.state.next
			if earliest == next {
				continue
			}
			var failed error
			whole := func(seq int64) bool {
				ref, err := s.recordRefAt(skey, p.n, seq)
				if err != nil {
					failed = err
					return false
				}
				return ref.Seg < lastSeg || ref.Seg == lastSeg && ref.Off+int64(ref.N) <= lastLen
			}
			if whole(next - 1) {
				continue
			}
			cut := earliest + int64(sort.Search(int(next-earliest), func(i int) bool { return !whole(earliest + int64(i)) }))
			if failed != nil {
				return failed
			}
			if err := s.truncatePartition(skey, p, cut); err != nil {
				return err
			}
			s.log.Warn().Uint64("stream_key", skey).Int32("partition", p.n).Int64("from", cut).Int64("to", next).
				Msg("dislocal: dropped records whose data did not reach the disk before a crash")
		}
	}
	return nil
}

// truncatePartition deletes the records of a partition from cut on, with
// their index entries, and sets its state to match. Only recoverLog uses
// it, before the server serves anything.
func (s *Server) truncatePartition(skey uint64, p *partition, cut int64) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(appendRecordKey(nil, skey, p.n, cut), appendRecordKey(nil, skey, p.n, p.state.next), nil); err != nil {
		return err
	}
	state := p.state
	state.next = cut
	var err error
	if state.maxTimestamp, err = s.truncateIndex(b, kindTimeIndex, skey, p.n, cut); err != nil {
		return err
	}
	if state.lastWriteSecond, err = s.truncateIndex(b, kindWriteIndex, skey, p.n, cut); err != nil {
		return err
	}
	if err := b.Set(partitionKey(skey, p.n), state.encode(), nil); err != nil {
		return err
	}
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return err
	}
	p.state = state
	p.visible = cut
	return nil
}

// truncateIndex adds to b the deletion of a partition's t or w index
// entries for sequence numbers from cut on, and returns the value of the
// last entry that stays, -1 if none does.
func (s *Server) truncateIndex(b *pebble.Batch, kind byte, skey uint64, n int32, cut int64) (int64, error) {
	prefix := appendPartitionPrefix(nil, kind, skey, n)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, err
	}
	last := int64(-1)
	for ok := it.First(); ok; ok = it.Next() {
		value, seq, valid := indexEntry(it.Key())
		if !valid {
			_ = it.Close()
			return 0, errors.New("corrupt index key")
		}
		if seq < cut {
			last = value
			continue
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			_ = it.Close()
			return 0, err
		}
	}
	return last, it.Close()
}

// dropSegments deletes the record log segments that hold no retained
// record: those before the segment of every partition's earliest record.
// The active segment is read first, so that records written meanwhile, in
// it or later ones, are never below the floor.
func (s *Server) dropSegments() error {
	floor := s.records.ActiveSegment()
	s.mu.RLock()
	streams := make([]*stream, 0, len(s.streams))
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	s.mu.RUnlock()
	for _, st := range streams {
		st.mu.RLock()
		var err error
		if !st.deleted {
			for _, p := range st.parts {
				p.mu.Lock()
				earliest, next := p.state.earliest, p.state.next
				p.mu.Unlock()
				if earliest == next {
					continue
				}
				var ref recordlog.Ref
				if ref, err = s.recordRefAt(st.meta.Key, p.n, earliest); err != nil {
					break
				}
				floor = min(floor, ref.Seg)
			}
		}
		st.mu.RUnlock()
		if err != nil {
			return err
		}
	}
	return s.records.RemoveBefore(floor)
}

// reindexLog indexes the frames that reached the record log after the last
// ones pebble holds references for: pebble's writes of records are not
// fsynced (appendRecords), so a power loss, or a kill before pebble's WAL
// writer wrote them out, can lose the references of records that were
// acknowledged, whose frames the log's fsync made durable. It scans the
// log from the position the l key gives (the end of the frames of the last
// PutRecords pebble kept; references are applied in log order, so every
// earlier frame has its reference) and gives each frame that continues its
// partition its reference and index entries again. A frame of a stream
// since deleted, or behind its partition's next sequence number, is
// skipped. A frame ahead of it, after damaged bytes the scan stepped over,
// continues it too: the records between lay in the damage (a partition's
// frames are in sequence order), and each gets a reference to it, which a
// read answers with the damage's name (quarantined, not dropped, and their
// sequence numbers never reused). The w index of a frame indexed again
// uses the time of the recovery, later than the write: retention keeps
// such records a little longer, never shorter.
func (s *Server) reindexLog() error {
	// Without the l key pebble kept no PutRecords at all since the
	// directory was made (an upgraded one gets the key when opened), so
	// the whole log is scanned.
	var seg uint64
	var from int64
	v, closer, err := s.db.Get(logPositionKey)
	switch {
	case err == nil:
		var ok bool
		seg, from, ok = decodeLogPosition(v)
		closer.Close()
		if !ok {
			return errors.New("corrupt log position")
		}
	case !errors.Is(err, pebble.ErrNotFound):
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	second := floorDiv(s.nowMs(), 1000)
	states := make(map[*partition]partitionState)
	var key [indexKeyLen]byte
	var enc [recordlog.MemberRefLen + recordlog.MemberHeadLen]byte
	indexed, skipped, quarantined := 0, 0, 0
	var damage *recordlog.Damage
	index := func(skey uint64, n int32, ps *partitionState, seq int64, r recordlog.Ref) error {
		if err := b.Set(appendRecordKey(key[:0], skey, n, seq), r.Encode(enc[:0]), nil); err != nil {
			return err
		}
		if err := ps.indexRecord(b, skey, n, seq, r.TS, second); err != nil {
			return err
		}
		ps.next++
		return nil
	}
	endSeg, end, err := s.records.Scan(seg, from, func(f recordlog.Frame) error {
		st := s.streamsByKey[f.SKey]
		if st == nil || int(f.Part) >= len(st.parts) || f.Part < 0 {
			skipped += len(f.Refs)
			return nil
		}
		p := st.parts[f.Part]
		ps, seen := states[p]
		if !seen {
			ps = p.state
		}
		for i, r := range f.Refs {
			seq := f.First + int64(i)
			if seq > ps.next && damage != nil {
				// The records between lay in the damage.
				lost := recordlog.Ref{Seg: damage.Seg, Off: damage.Off, N: uint32(damage.End - damage.Off)}
				for ps.next < seq {
					if err := index(f.SKey, f.Part, &ps, ps.next, lost); err != nil {
						return err
					}
					quarantined++
				}
			}
			if seq != ps.next {
				skipped++
				continue
			}
			if err := index(f.SKey, f.Part, &ps, seq, r); err != nil {
				return err
			}
			indexed++
		}
		states[p] = ps
		return nil
	}, func(d recordlog.Damage) { damage = &d })
	if err != nil {
		return err
	}
	if indexed+quarantined == 0 {
		return nil
	}
	for _, st := range s.streamsByKey {
		for _, p := range st.parts {
			if ps, ok := states[p]; ok {
				if err := b.Set(partitionKey(st.meta.Key, p.n), ps.encode(), nil); err != nil {
					return err
				}
			}
		}
	}
	if err := b.Set(logPositionKey, encodeLogPosition(endSeg, end), nil); err != nil {
		return err
	}
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return err
	}
	for p, ps := range states {
		p.state = ps
		p.visible = ps.next
	}
	s.log.Warn().Int("records", indexed).Int("skipped", skipped).Int("damaged", quarantined).
		Msg("dislocal: indexed again records whose references were lost in a crash (their data was durable)")
	return nil
}
