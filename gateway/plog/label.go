package plog

import (
	"errors"
	"math"
	"strconv"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Labelling: which Kafka offsets the DIS records of a kafka-format stream
// hold (docs/record-formats.md).

// noContext is labelRecords' after when the record before the run is not
// known.
const noContext = math.MinInt64

// labelRecords places consecutive DIS records of a kafka stream. A batch
// holds the offsets its header says; any other record (written by a
// DIS-native producer) holds one offset, the one after the record before
// it, or before the batch after it; fallback places a run with no batch and
// no context. Non-batch records become one-record batches. A batch whose
// offsets overlap those of a record before it is a stale copy a writer wrote
// again after finding that someone else had written first (docs/design.md
// §6): it holds no offsets and is never served (markStale). after is the
// last offset of the record before the run, or noContext, when the run's
// first batch is taken as it is.
//
// The fragments of a batch larger than one DIS record (fragments.go) are
// joined into it, placed at the last fragment; the others hold no offsets.
// Fragments of a batch that breaks off (a writer stopped in its middle)
// hold none either, nor does a fragment whose batch began before the run.
// A batch whose fragments run past the end of recs is left out, with the
// records after it: it is being written, or the rest has not been read.
func labelRecords(recs []disclient.Record, after int64, fallback func(seq int64) int64) ([]Batch, error) {
	return labelRun(recs[:incompleteTail(recs)], after, fallback)
}

// labelTail is labelRecords for the writer's view of a partition's tail,
// which it alone writes: a batch whose fragments run to the end is one its
// writer stopped in the middle of, and holds no offsets.
func labelTail(recs []disclient.Record, after int64, fallback func(seq int64) int64) ([]Batch, error) {
	return labelRun(recs, after, fallback)
}

// recordKind is what labelRun found a DIS record to be.
type recordKind uint8

const (
	kindNative recordKind = iota // written by a DIS-native producer
	kindBatch                    // a batch, or the last fragment of a whole one
	kindEmpty                    // a fragment that holds no offsets
)

func labelRun(recs []disclient.Record, after int64, fallback func(seq int64) int64) ([]Batch, error) {
	out := make([]Batch, len(recs))
	kind := make([]recordKind, len(recs))
	first := -1
	for i := range recs {
		seq, err := strconv.ParseInt(recs[i].SequenceNumber, 10, 64)
		if err != nil {
			return nil, errors.New("DIS returned sequence number " + strconv.Quote(recs[i].SequenceNumber))
		}
		out[i].seq = seq
	}
	for i := 0; i < len(recs); i++ {
		data := recs[i].Data
		if info, ok := protocol.ParseBatchHead(data, len(data)+recs[i].Rest.Len); ok {
			kind[i] = kindBatch
			out[i].base, out[i].last, out[i].maxTS = info.BaseOffset, info.LastOffset(), info.MaxTimestamp
			out[i].Data = data
			if recs[i].Rest.Len > 0 {
				out[i].File = recs[i].Whole()
			}
			if first < 0 {
				first = i
			}
			continue
		}
		f, ok := parseFragment(data)
		if !ok {
			continue
		}
		kind[i] = kindEmpty
		if f.index != 0 {
			out[i].lead = -1
			continue
		}
		n, _ := wholeSet(recs, i, f)
		if n == 0 {
			continue
		}
		batch, ok := assembleFragments(recs[i:i+n], f)
		if !ok {
			continue
		}
		for k := i + 1; k < i+n-1; k++ {
			kind[k] = kindEmpty
		}
		i += n - 1
		info, _ := protocol.ParseStoredBatchInfo(batch)
		kind[i] = kindBatch
		out[i].base, out[i].last, out[i].maxTS = info.BaseOffset, info.LastOffset(), info.MaxTimestamp
		out[i].Data, out[i].lead = batch, int64(n-1)
		if first < 0 {
			first = i
		}
	}
	// Without context, what comes before the first batch is placed
	// backward from it.
	if after == noContext && first > 0 {
		cur := out[first].base
		for i := first - 1; i >= 0; i-- {
			if kind[i] == kindNative {
				cur--
			}
			out[i].base = cur
		}
	}
	top, known := after, after != noContext
	for i := range recs {
		switch {
		case kind[i] == kindEmpty:
			switch {
			case known:
				out[i].base = top + 1
			case first < 0:
				out[i].base = fallback(out[i].seq)
			}
			out[i].last, out[i].maxTS = out[i].base-1, -1
			continue
		case kind[i] == kindBatch && (known || i > first):
			top = markStale(&out[i], top)
			continue
		case kind[i] == kindBatch:
			top, known = out[i].last, true
			continue
		case known:
			out[i].base = top + 1
		case first >= 0:
		default:
			out[i].base = fallback(out[i].seq)
		}
		b, err := nativeBatch(&recs[i], out[i].base)
		if err != nil {
			return nil, err
		}
		out[i].last, out[i].maxTS, out[i].Data = out[i].base, recs[i].Timestamp, b
		if known || first < 0 {
			top, known = out[i].last, true
		}
	}
	return out, nil
}

// markStale marks b stale when its offsets overlap those up to top, the
// last offset the records before it hold, and returns the new top. A stale
// batch holds the empty range after top, so offsets still grow with
// sequence numbers, and has no data.
func markStale(b *Batch, top int64) int64 {
	if b.Data == nil || b.base > top {
		return max(top, b.last)
	}
	b.base, b.last, b.maxTS, b.Data, b.File = top+1, top, -1, nil, disclient.FileSpan{}
	return top
}

// nativeBatch serves a DIS record that is not a record batch as a batch of
// one record at offset: its data as the value, its partition key as the key.
func nativeBatch(r *disclient.Record, offset int64) ([]byte, error) {
	rec := protocol.Record{Offset: offset, Timestamp: r.Timestamp, Value: r.Data}
	if rec.Value == nil {
		rec.Value = []byte{}
	}
	if r.PartitionKey != "" {
		rec.Key = []byte(r.PartitionKey)
	}
	return protocol.AppendBatch(nil, []protocol.Record{rec}, protocol.CodecNone, 0)
}
