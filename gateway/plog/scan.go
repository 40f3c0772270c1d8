package plog

import (
	"context"
	"strconv"

	"golang.org/x/time/rate"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/protocol"
)

// Scans: a rewrite reads a partition's current generation and the topic's
// stream up to the new cut in offset order, more than once (docs/design.md
// §12), and holds no more than one GetRecords page of it at a time.

// scan reads one partition of stream from sequence number from up to (not
// including) to, a page at a time, and hands each page's records, whole
// batches only, to page. A batch stored in fragments that a page ends in
// the middle of is read again with the next page. limit, when set, is
// waited on for the bytes read, so that a rewrite leaves the partition's
// read quota to its consumers.
func (ps *Partition) scan(ctx context.Context, stream string, from, to int64, limit *rate.Limiter, page func([]disclient.Record) error) error {
	dis := ps.d.DIS
	cursor := ""
	// renewed is set when the page at from was asked for again with a new
	// cursor because DIS said the last had expired: it may have, when the
	// page before took longer than a cursor lasts (throttled writes of a
	// rewrite), as the partition's reader (cursor.read) allows.
	renewed := false
	for from < to {
		if cursor == "" {
			c, err := dis.GetCursor(ctx, &disclient.GetCursorRequest{
				StreamName: stream, PartitionID: disclient.PartitionID(ps.key.Partition),
				CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: strconv.FormatInt(from, 10),
			})
			if err != nil {
				if disclient.IsCode(err, disclient.CodeSequenceOutOfRange) {
					return errOutOfRange
				}
				return err
			}
			cursor = c.PartitionCursor
		}
		resp, err := dis.GetRecords(ctx, cursor, ps.d.ReadBytes)
		if err != nil {
			if disclient.IsCode(err, disclient.CodeCursorExpired) && !renewed {
				cursor, renewed = "", true
				continue
			}
			if disclient.IsCode(err, disclient.CodeCursorPositionGone) {
				return errOutOfRange
			}
			return err
		}
		recs, next := below(resp.Records, to), resp.NextPartitionCursor
		if len(recs) == 0 {
			return nil
		}
		if first, err := strconv.ParseInt(recs[0].SequenceNumber, 10, 64); err != nil || first != from {
			return errOutOfRange
		}
		if incompleteTail(recs) == 0 && len(recs) == len(resp.Records) {
			// One batch larger than the page: read on to its end.
			more, err := ps.readWhole(ctx, next)
			if err != nil {
				return err
			}
			recs, next = below(append(recs, more...), to), ""
		}
		if whole := incompleteTail(recs); whole < len(recs) {
			recs, next = recs[:whole], ""
		}
		if len(recs) == 0 {
			return nil
		}
		if limit != nil {
			bytes := 0
			for i := range recs {
				bytes += len(recs[i].Data)
			}
			if err := limit.WaitN(ctx, min(bytes, limit.Burst())); err != nil {
				return err
			}
		}
		cursor = next
		if err := page(recs); err != nil {
			return err
		}
		from += int64(len(recs))
		renewed = false
	}
	return nil
}

// below is recs up to the first whose sequence number reaches to.
func below(recs []disclient.Record, to int64) []disclient.Record {
	for i := range recs {
		if seq, err := strconv.ParseInt(recs[i].SequenceNumber, 10, 64); err != nil || seq >= to {
			return recs[:i]
		}
	}
	return recs
}

// labelKept places the DIS records of a keep stream's partition: the
// batches of generations, each whole (its fragments joined) and possibly
// sparse, compaction having left out some of its records. Commit records
// and fragments hold no batch and are left out; so is a batch whose
// fragments run past the end of recs.
func labelKept(recs []disclient.Record) []Batch {
	var out []Batch
	for i := 0; i < len(recs); i++ {
		r := &recs[i]
		if r.PartitionKey == keep.CommitKey {
			continue
		}
		seq, err := strconv.ParseInt(r.SequenceNumber, 10, 64)
		if err != nil {
			continue
		}
		if info, ok := protocol.ParseStoredBatchInfo(r.Data); ok {
			out = append(out, Batch{batchLoc: batchLoc{seq: seq, base: info.BaseOffset, last: info.LastOffset()}, maxTS: info.MaxTimestamp, Data: r.Data})
			continue
		}
		f, ok := parseFragment(r.Data)
		if !ok || f.index != 0 {
			continue
		}
		n, _ := wholeSet(recs, i, f)
		if n == 0 {
			continue
		}
		batch, ok := assembleFragments(recs[i:i+n], f)
		i += n - 1
		if !ok {
			continue
		}
		info, _ := protocol.ParseStoredBatchInfo(batch)
		out = append(out, Batch{batchLoc: batchLoc{seq: seq + int64(n-1), base: info.BaseOffset, last: info.LastOffset(), lead: int64(n - 1)},
			maxTS: info.MaxTimestamp, Data: batch})
	}
	return out
}
