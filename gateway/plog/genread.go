package plog

import (
	"context"
	"errors"
)

// Reading a kept topic's partition (docs/design.md §12): offsets below the
// current generation's cut come from the generation's batches in the keep
// stream, the rest from the topic's stream. Batches keep their base
// offsets, so what compaction dropped is a gap a consumer steps over, as
// on Kafka. A fetch reads one generation: a rewrite that makes another
// current meanwhile is seen by the next fetch.

// genPosition is where the generation's reader stopped: the sequence
// number after the last batch it read, and the offset after it, in the
// generation whose commit is at commitSeq. A consumer reading on asks for
// that offset next, and the reader goes on from there.
type genPosition struct {
	commitSeq, seq, offset int64
}

// readGen reads the generation's batches from the one holding offset on:
// from where the last read stopped when offset follows it, else from the
// commit's nearest mark. Nothing means the generation holds nothing from
// offset on, and the topic's stream from the cut has it.
func (ps *Partition) readGen(ctx context.Context, offset int64, _ int) ([]Batch, error) {
	for attempt := 0; ; attempt++ {
		g := ps.currentGen()
		if !g.holds(offset) {
			return nil, nil
		}
		out, err := ps.readGenFrom(ctx, g, offset)
		if errors.Is(err, errOutOfRange) && attempt == 0 && ps.currentGen() != g {
			// DIS expired the generation just replaced: read the new one.
			continue
		}
		return out, err
	}
}

// genStart is the first offset a reader of the generation may begin at:
// the generation's log start, or the partition's when DeleteRecords or
// retention moved it since.
func (ps *Partition) genStart() int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	from := ps.logStart
	if start, ok := ps.genLogStartLocked(); ok {
		from = max(from, start)
	}
	return from
}

// walkGen reads the generation's batches from genStart on, a page at a
// time, to its cut or until visit says it is done. The generation has no
// time index: the timestamp lookups read it as a consumer from the
// earliest offset would.
func (ps *Partition) walkGen(ctx context.Context, visit func([]Batch) (done bool, err error)) error {
	g, from := ps.currentGen(), ps.genStart()
	for g.holds(from) {
		batches, err := ps.genReads.read(ctx, from, ps.d.ReadBytes)
		if err != nil || len(batches) == 0 {
			return err
		}
		if done, err := visit(batches); done || err != nil {
			return err
		}
		from = batches[len(batches)-1].last + 1
	}
	return nil
}

// genByTimestamp is ListOffsets by timestamp below a kept partition's cut:
// the first record of its generation, from the log start on, with a
// timestamp at or after ts, or -1 and -1 when the generation has none (or
// there is no generation) and the topic's stream from the cut is to be
// asked.
func (ps *Partition) genByTimestamp(ctx context.Context, ts int64) (offset, timestamp int64, err error) {
	start := ps.genStart()
	offset, timestamp = -1, -1
	err = ps.walkGen(ctx, func(batches []Batch) (bool, error) {
		var err error
		offset, timestamp, err = ps.firstInBatches(batches, ts, start)
		return offset >= 0, err
	})
	if err != nil {
		return -1, -1, err
	}
	return offset, timestamp, nil
}

// genMaxTimestamp is MaxTimestamp below a kept partition's cut: the first
// record of its generation, from the log start on, with the generation's
// largest timestamp, or -1 and -1.
func (ps *Partition) genMaxTimestamp(ctx context.Context) (offset, timestamp int64, err error) {
	start := ps.genStart()
	var best *Batch
	err = ps.walkGen(ctx, func(batches []Batch) (bool, error) {
		for i := range batches {
			if b := &batches[i]; b.last >= start && (best == nil || b.maxTS > best.maxTS) {
				best = b
			}
		}
		return false, nil
	})
	if err != nil || best == nil {
		return -1, -1, err
	}
	return ps.firstInBatches([]Batch{*best}, best.maxTS, start)
}

func (ps *Partition) readGenFrom(ctx context.Context, g *generation, offset int64) ([]Batch, error) {
	seq := g.commit.StartSeq(offset)
	if p := ps.genPos; p.commitSeq == g.seq && p.offset <= offset && p.seq > seq {
		seq = p.seq
	}
	ps.genCursor.stream = g.stream
	for seq < g.seq {
		recs, err := ps.genCursor.read(ctx, ps, seq, ps.d.ReadBytes, false)
		if err != nil {
			return nil, err
		}
		recs = below(recs, g.seq)
		if len(recs) == 0 {
			return nil, nil
		}
		whole := recs[:incompleteTail(recs)]
		if len(whole) == 0 {
			// One batch larger than a page: read on to its end.
			more, err := ps.readWhole(ctx, ps.genCursor.id)
			if err != nil {
				return nil, err
			}
			ps.genCursor.id = ""
			recs = below(append(recs, more...), g.seq)
			whole = recs[:incompleteTail(recs)]
			if len(whole) == 0 {
				return nil, nil
			}
		}
		if len(whole) < len(recs) {
			ps.genCursor.id = ""
		}
		seq += int64(len(whole))
		var out []Batch
		for _, b := range labelKept(whole) {
			if b.last >= offset {
				out = append(out, b)
			}
		}
		if len(out) > 0 {
			last := out[len(out)-1]
			ps.genPos = genPosition{commitSeq: g.seq, seq: last.seq + 1, offset: last.last + 1}
			return out, nil
		}
	}
	return nil, nil
}
