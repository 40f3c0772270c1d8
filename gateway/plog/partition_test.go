package plog

import (
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// The read cache keeps all partitions' batches within one budget, taking
// from the partition read least recently first, and accounts exactly.
func TestReadCacheOneBudget(t *testing.T) {
	tn := testTenant(t, testSettings{Config: Config{ReadCacheBytes: 100_000}}, nil)
	part := func(p int32) *Partition {
		return tn.Partition(testKey("t", p))
	}
	fill := func(ps *Partition, from int64) {
		var bs []Batch
		for i := range int64(4) {
			seq := from + i
			bs = append(bs, Batch{batchLoc: batchLoc{seq: seq, base: seq * 10, last: seq*10 + 9}, Data: make([]byte, 10_000)})
		}
		ps.appended(bs)
	}
	a, b, c := part(0), part(1), part(2)
	fill(a, 0)
	fill(b, 0)
	fill(c, 0)
	sum := a.windowBytes + b.windowBytes + c.windowBytes
	if tn.d.Cache.used != int64(sum) || sum > 100_000 {
		t.Fatalf("cache holds %d bytes, windows %d: want them equal and within 100000", tn.d.Cache.used, sum)
	}
	if a.windowBytes >= 40_000 || c.windowBytes != 40_000 {
		t.Fatalf("windows %d %d %d: the least recently used partition should give up bytes first", a.windowBytes, b.windowBytes, c.windowBytes)
	}
	// A partition alone keeps at most half the budget.
	fill(c, 4)
	fill(c, 8)
	if c.windowBytes > 50_000 {
		t.Fatalf("one partition holds %d bytes of a 100000-byte cache", c.windowBytes)
	}
	c.dropped()
	if tn.d.Cache.used != int64(a.windowBytes+b.windowBytes) {
		t.Fatalf("after a partition was dropped the cache counts %d bytes, windows %d", tn.d.Cache.used, a.windowBytes+b.windowBytes)
	}
}

// The sparse index stays bounded and ordered, and the offsets it still
// holds locate exactly; the ones it thinned out narrow a search.
func TestSparseIndexThinning(t *testing.T) {
	ps := &Partition{earliestSeq: 0, nextSeq: 3 * maxIndexEntries, next: 3 * maxIndexEntries * 2}
	for seq := int64(0); seq < 3*maxIndexEntries; seq++ {
		ps.learnLocked(batchLoc{seq: seq, base: seq * 2, last: seq*2 + 1})
	}
	if len(ps.index) > maxIndexEntries {
		t.Fatalf("index holds %d entries, bound %d", len(ps.index), maxIndexEntries)
	}
	for i := 1; i < len(ps.index); i++ {
		if ps.index[i].seq <= ps.index[i-1].seq || ps.index[i].base <= ps.index[i-1].last {
			t.Fatalf("index out of order at %d", i)
		}
	}
	last := ps.index[len(ps.index)-1]
	if seq, _, _, exact := ps.locateLocked(last.base + 1); !exact || seq != last.seq {
		t.Fatalf("the newest entry located as %d, exact %v", seq, exact)
	}
	for off := int64(0); off < ps.next; off += 7 {
		seq, lo, hi, exact := ps.locateLocked(off)
		want := off / 2
		if exact && seq != want || !exact && (want < lo || want > hi) {
			t.Fatalf("offset %d located as %d [%d, %d] exact %v, want %d", off, seq, lo, hi, exact, want)
		}
	}
}

// Batches written go into the read cache as copies: the produce request's
// frame they came from is not kept alive, nor changed under the cache.
func TestWrittenBatchesDoNotAliasTheFrame(t *testing.T) {
	frame := batchesOf(t, 1, 2, 5)
	op := NewAppend(true)
	op.Entries = []disclient.PutRecordsEntry{{Data: frame}}
	written, _ := op.takeBatchResults([]disclient.PutRecordsResult{{SequenceNumber: "9"}}, []int{1}, 0, nil, nil, nil)
	if len(written) != 1 || written[0].seq != 9 || written[0].last != 1 {
		t.Fatalf("written %+v", written)
	}
	want := string(frame)
	clear(frame)
	if string(written[0].Data) != want {
		t.Fatal("the cached batch aliases the request frame")
	}
}

// Raw-format partitions' record caches count against the same budget and
// give up records when kafka-format batches need the room.
func TestReadCacheCountsRawRecords(t *testing.T) {
	tn := testTenant(t, testSettings{Config: Config{ReadCacheBytes: 100_000}}, nil)
	raw := tn.Partition(testKey("r", 0)).reader
	var recs []protocol.Record
	for i := range 60 {
		recs = append(recs, protocol.Record{Offset: int64(i), Value: make([]byte, 1000)})
	}
	raw.appended(recs)
	if tn.d.Cache.used != int64(raw.cacheBytes) || raw.cacheBytes == 0 {
		t.Fatalf("cache counts %d bytes, the raw partition holds %d", tn.d.Cache.used, raw.cacheBytes)
	}
	ps := tn.Partition(testKey("k", 0))
	var bs []Batch
	for i := range int64(5) {
		bs = append(bs, Batch{batchLoc: batchLoc{seq: i, base: i, last: i}, Data: make([]byte, 10_000)})
	}
	ps.appended(bs)
	if tn.d.Cache.used > 100_000 || tn.d.Cache.used != int64(raw.cacheBytes+ps.windowBytes) {
		t.Fatalf("cache counts %d bytes, raw %d and batches %d: want their sum, within 100000", tn.d.Cache.used, raw.cacheBytes, ps.windowBytes)
	}
	if raw.cacheBytes >= 60*recordSize(&recs[0]) {
		t.Fatal("the raw partition read least recently gave up nothing")
	}
}
