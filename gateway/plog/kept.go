package plog

import (
	"context"
	"errors"
	"strconv"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/keep"
)

// Kept topics (docs/design.md §12): a partition's long-lived records are a
// generation in its keep stream's partition, whose commit record names the
// cut below which readers take offsets from it. This file finds the current
// generation; genread.go serves reads from it, rewrite.go writes the next.

// KeepApp is the reserved DIS app whose LAST_READ checkpoint on each keep
// stream partition points at the current commit record: a hint that saves
// reading the partition from its start, checked by reading on to its end.
const KeepApp = "disgw-keep"

// generation is a partition's current generation as a reader holds it: its
// commit record and where it is in the keep stream. Readers hold one at a
// time, and a new one replaces it whole, never changing it.
type generation struct {
	stream string       // the keep stream
	commit *keep.Commit // nil when the partition has none yet
	seq    int64        // the commit record's sequence number, -1 for none
	// next is the keep partition's next sequence number when it was
	// read: where the next generation's first batch is expected.
	next int64
}

// cut is the first offset the generation does not hold, 0 for none.
func (g *generation) cut() int64 {
	if g == nil || g.commit == nil {
		return 0
	}
	return g.commit.Cut
}

// holds reports whether offset is below the generation's cut.
func (g *generation) holds(offset int64) bool { return offset < g.cut() }

// loadAttempts bounds how often loading a generation starts over when DIS
// expires what it was reading.
const loadAttempts = 3

// loadGeneration finds the current generation of the partition in stream,
// its keep stream: from the hint checkpoint's commit on, or from the
// partition's earliest record when there is no hint or DIS expired it,
// reading to the end with keep.Chain.
func (ps *Partition) loadGeneration(ctx context.Context, stream string) (*generation, error) {
	hint, err := ps.keepHint(ctx, stream)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		g, err := ps.readChain(ctx, stream, hint)
		if !errors.Is(err, errOutOfRange) || attempt == loadAttempts-1 {
			return g, err
		}
		hint = -1
	}
}

// readChain reads the keep partition from the commit at hint (-1 for none)
// or its earliest record to its end.
func (ps *Partition) readChain(ctx context.Context, stream string, hint int64) (*generation, error) {
	earliest, next, err := ps.keepRange(ctx, stream)
	if err != nil {
		return nil, err
	}
	ch := keep.NewChain(earliest)
	from := earliest
	if hint >= earliest && hint < next {
		recs, err := ps.readRecords(ctx, stream, hint, hint+1)
		if err != nil {
			return nil, err
		}
		if len(recs) == 1 && recs[0].PartitionKey == keep.CommitKey {
			if c, err := keep.ParseCommit(recs[0].Data, hint); err == nil {
				ch.Start(c, hint)
				from = hint + 1
			}
		}
	}
	err = ps.scan(ctx, stream, from, next, nil, func(recs []disclient.Record) error {
		for i := range recs {
			if recs[i].PartitionKey != keep.CommitKey {
				continue
			}
			seq, err := strconv.ParseInt(recs[i].SequenceNumber, 10, 64)
			if err != nil {
				return err
			}
			if c, err := keep.ParseCommit(recs[i].Data, seq); err == nil {
				ch.Add(c, seq)
			} else {
				ps.d.Log.Warn().Err(err).Str("topic", ps.key.Topic).Int32("partition", ps.key.Partition).
					Msg("keep stream: a commit record is not whole or not valid; it is ignored")
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c, seq := ch.Current()
	return &generation{stream: stream, commit: c, seq: seq, next: next}, nil
}

// readRecords reads the records [from, to) of stream's partition.
func (ps *Partition) readRecords(ctx context.Context, stream string, from, to int64) ([]disclient.Record, error) {
	var out []disclient.Record
	err := ps.scan(ctx, stream, from, to, nil, func(recs []disclient.Record) error {
		out = append(out, recs...)
		return nil
	})
	return out, err
}

// keepRange is the sequence number range [earliest, next) of the keep
// stream's partition.
func (ps *Partition) keepRange(ctx context.Context, stream string) (earliest, next int64, err error) {
	start := ""
	if ps.key.Partition > 0 {
		start = disclient.PartitionID(ps.key.Partition - 1)
	}
	d, err := ps.d.DIS.DescribeStream(ctx, stream, start, 1)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range d.Partitions {
		if p.PartitionID == disclient.PartitionID(ps.key.Partition) {
			return disclient.ParseSequenceNumberRange(p.SequenceNumberRange)
		}
	}
	return 0, 0, errors.New("keep stream " + stream + " has no partition " + strconv.Itoa(int(ps.key.Partition)))
}

// keepHint is the sequence number the hint checkpoint points at, or -1.
func (ps *Partition) keepHint(ctx context.Context, stream string) (int64, error) {
	cp, err := ps.d.DIS.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{
		AppName: KeepApp, StreamName: stream,
		PartitionID: disclient.PartitionID(ps.key.Partition), CheckpointType: disclient.CheckpointLastRead,
	})
	switch {
	case disclient.IsCode(err, disclient.CodeAppNotFound), disclient.IsCode(err, disclient.CodeNoCheckpoint):
		return -1, nil
	case err != nil:
		return 0, err
	}
	seq, err := strconv.ParseInt(cp.SequenceNumber, 10, 64)
	if err != nil {
		return -1, nil
	}
	return seq, nil
}

// writeKeepHint points the hint checkpoint at the commit at seq. It is a
// hint: a failure costs the next reader a longer read, so the caller only
// logs it.
func (ps *Partition) writeKeepHint(ctx context.Context, stream string, seq int64) error {
	req := &disclient.CommitCheckpointRequest{
		AppName: KeepApp, CheckpointType: disclient.CheckpointLastRead, StreamName: stream,
		PartitionID: disclient.PartitionID(ps.key.Partition), SequenceNumber: strconv.FormatInt(seq, 10),
	}
	err := ps.d.EnsureApp(ctx, KeepApp)
	if err == nil {
		err = ps.d.DIS.CommitCheckpoint(ctx, req)
		if disclient.IsCode(err, disclient.CodeAppNotFound) {
			ps.d.ForgetApp(KeepApp)
			if err = ps.d.EnsureApp(ctx, KeepApp); err == nil {
				err = ps.d.DIS.CommitCheckpoint(ctx, req)
			}
		}
	}
	return err
}

// recoverKept loads the current generation of a kept topic's partition on
// recovery; a topic that is not kept has none.
func (ps *Partition) recoverKept(ctx context.Context) error {
	_, stream, ok, err := ps.d.Kept(ctx, ps.key.Topic)
	if err != nil || !ok {
		return err
	}
	g, err := ps.loadGeneration(ctx, stream)
	if err != nil {
		return err
	}
	ps.install(g)
	return nil
}

// install makes g the partition's generation unless it already holds a
// later one: generations only move forward.
func (ps *Partition) install(g *generation) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if cur := ps.gen; cur == nil || g.seq > cur.seq || g.seq == cur.seq && g.next > cur.next {
		ps.gen = g
	}
}

// currentGen is the partition's current generation, nil when it has none.
func (ps *Partition) currentGen() *generation {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.gen
}

// genLogStartLocked is the log start the generation sets, and whether it
// sets one: below the cut the generation is all there is.
func (ps *Partition) genLogStartLocked() (int64, bool) {
	if ps.gen == nil || ps.gen.commit == nil {
		return 0, false
	}
	return ps.gen.commit.LogStart, true
}
