package plog

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// records makes DIS records of data at sequence numbers from seq on.
func records(seq int64, data ...[]byte) []disclient.Record {
	out := make([]disclient.Record, len(data))
	for i, d := range data {
		out[i] = disclient.Record{SequenceNumber: strconv.FormatInt(seq+int64(i), 10), Data: d}
	}
	return out
}

// stampedBatch is one batch of one record of valueBytes at base offset.
func stampedBatch(t *testing.T, base int64, valueBytes int) []byte {
	t.Helper()
	b := batchesOf(t, 1, 1, valueBytes)
	protocol.StampBatch(b, base, 0)
	return b
}

// A batch larger than one DIS record becomes fragments no reader takes for
// a batch, each within the record limit, and labelRecords joins them back
// into the batch, placed at the last fragment; the others hold no offsets.
func TestFragmentsRoundTrip(t *testing.T) {
	const limit = 64 << 10
	batch := stampedBatch(t, 7, 300_000)
	frags := fragmentBatch(batch, limit)
	if len(frags) != 5 {
		t.Fatalf("%d fragments, want 5", len(frags))
	}
	for i, f := range frags {
		if len(f) > limit {
			t.Errorf("fragment %d is %d bytes, over the %d-byte limit", i, len(f), limit)
		}
		if _, ok := protocol.ParseBatchInfo(f); ok {
			t.Errorf("fragment %d parses as a batch", i)
		}
		info, ok := parseFragment(f)
		if !ok || info.index != int32(i) || info.count != 5 || info.base != 7 || int(info.total) != len(batch) {
			t.Errorf("fragment %d header %+v ok %v", i, info, ok)
		}
	}
	if one := fragmentBatch(batch, len(batch)); len(one) != 1 || !bytes.Equal(one[0], batch) {
		t.Error("a batch that fits one record is not stored as it is")
	}
	corrupt := bytes.Clone(frags[2])
	corrupt[len(corrupt)-1] ^= 1
	if _, ok := parseFragment(corrupt); ok {
		t.Error("a fragment with a damaged payload parses")
	}

	before := stampedBatch(t, 0, 10)
	protocol.StampBatch(before, 6, 0)
	after := stampedBatch(t, 8, 10)
	recs := records(20, append([][]byte{before}, append(frags, after)...)...)
	got, err := labelRecords(recs, noContext, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("%d labels, want 7", len(got))
	}
	for i := 1; i < 5; i++ {
		if got[i].Data != nil || got[i].last >= got[i].base {
			t.Errorf("fragment %d holds offsets %d..%d", i-1, got[i].base, got[i].last)
		}
	}
	whole := got[5]
	if !bytes.Equal(whole.Data, batch) || whole.batchLoc != (batchLoc{25, 7, 7, 4}) || whole.startSeq() != 21 {
		t.Fatalf("the joined batch is at %+v, %d bytes", whole.batchLoc, len(whole.Data))
	}
	if got[6].base != 8 || got[6].Data == nil {
		t.Fatalf("the batch after the fragments is %+v", got[6].batchLoc)
	}
}

// A batch whose fragments break off (its writer stopped in the middle)
// holds no offsets and is never served: the batch after it, written again
// with the same offsets, is. One whose fragments run past the end of the
// records read is left out until the rest is read; the writer's view of
// its own tail takes it as broken off.
func TestPartialFragmentsAreNeverServed(t *testing.T) {
	const limit = 64 << 10
	first := stampedBatch(t, 0, 10)
	big := stampedBatch(t, 1, 200_000)
	frags := fragmentBatch(big, limit)
	again := fragmentBatch(big, limit)
	recs := records(0, append(append([][]byte{first}, frags[:2]...), again...)...)

	got, err := labelRecords(recs, noContext, nil)
	if err != nil {
		t.Fatal(err)
	}
	var served []Batch
	for _, b := range got {
		if b.Data != nil {
			served = append(served, b)
		}
	}
	if len(served) != 2 || served[1].base != 1 || !bytes.Equal(served[1].Data, big) || served[1].startSeq() != 3 {
		t.Fatalf("served %+v", served)
	}

	tail := recs[:3]
	if got, _ := labelRecords(tail, noContext, nil); len(got) != 1 || got[0].base != 0 {
		t.Fatalf("a batch still being written was labelled: %+v", got)
	}
	if got, _ := labelTail(tail, noContext, nil); len(got) != 3 || got[2].Data != nil || got[2].last != 0 {
		t.Fatalf("the writer's view of a broken-off tail: %+v", got)
	}
	if incompleteTail(recs[:4]) != 3 || incompleteTail(recs) != len(recs) {
		t.Fatal("incompleteTail misplaces the batch being written")
	}
}

// Fragments whose headers claim a batch far longer than they hold are
// refused without allocating what they claim.
func TestFragmentsClaimingMoreAreRefused(t *testing.T) {
	batch := stampedBatch(t, 0, 3000)
	frags := fragmentBatch(batch, 1024+fragmentHeaderSize)
	recs := make([]disclient.Record, len(frags))
	for i, d := range frags {
		binary.BigEndian.PutUint32(d[21:], 1<<30) // the claimed total
		recs[i].Data = d
	}
	f, ok := parseFragment(recs[0].Data)
	if !ok {
		t.Fatal("fragment not parsed")
	}
	allocs := testing.AllocsPerRun(1, func() {
		if _, ok := assembleFragments(recs, f); ok {
			t.Error("fragments claiming 1 GiB assembled")
		}
	})
	if allocs > 0 {
		t.Errorf("refusing them allocated %v times", allocs)
	}
}

// A partition log that recovers a partition after a writer stopped half
// way through a batch continues after the last whole batch and never
// serves the part.
func TestRecoveryAfterABatchWrittenInPart(t *testing.T) {
	dis := localDIS(t)
	ctx := context.Background()
	if err := dis.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "big", PartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
	s := testSettings{Config: Config{MaxRecordBytes: 64 << 10, PutRecordsMaxBytes: 128 << 10}}
	key := testKey("big", 0)
	write := func(tn *Tenant, batch []byte) int64 {
		t.Helper()
		op := NewAppend(true)
		ts := time.Now().UnixMilli()
		op.Entries = []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(0), Data: batch, Timestamp: &ts}}
		op.Bytes = len(batch)
		if _, code := tn.Partition(key).Enqueue(ctx, op); code != 0 {
			t.Fatalf("enqueue: code %d", code)
		}
		<-op.Done()
		if op.ErrCode != 0 {
			t.Fatalf("write: %d %s", op.ErrCode, op.ErrMsg)
		}
		return op.BaseOffset
	}
	tn := testTenant(t, s, dis)
	big := batchesOf(t, 1, 1, 300_000)
	if base := write(tn, batchesOf(t, 1, 2, 10)); base != 0 {
		t.Fatalf("first batch at %d", base)
	}
	if base := write(tn, big); base != 2 {
		t.Fatalf("large batch at %d, want 2", base)
	}
	if base := write(tn, batchesOf(t, 1, 1, 10)); base != 3 {
		t.Fatalf("batch after the large one at %d, want 3", base)
	}

	// A writer that stopped after two fragments of a batch at offset 4.
	stopped := batchesOf(t, 1, 1, 300_000)
	protocol.StampBatch(stopped, 4, 0)
	var entries []disclient.PutRecordsEntry
	for _, f := range fragmentBatch(stopped, s.MaxRecordBytes)[:2] {
		entries = append(entries, disclient.PutRecordsEntry{PartitionID: disclient.PartitionID(0), Data: f})
	}
	if _, err := dis.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "big", Records: entries}); err != nil {
		t.Fatal(err)
	}

	fresh := testTenant(t, s, dis)
	if next, err := fresh.Partition(key).Next(ctx); err != nil || next != 4 {
		t.Fatalf("next offset %d (%v) after a batch written in part, want 4", next, err)
	}
	if base := write(fresh, big); base != 4 {
		t.Fatalf("the batch after a part got %d, want 4", base)
	}
	var offsets []int64
	for off := int64(0); off < 5; {
		batches, err := fresh.Partition(key).readBatches(ctx, off, 1<<20)
		if err != nil || len(batches) == 0 {
			t.Fatalf("nothing at %d: %v", off, err)
		}
		for i := range batches {
			bs, err := protocol.DecodeBatches(batches[i].Data, protocol.NewDecompressBudget(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bs {
				for _, r := range b.Records {
					if r.Offset >= off {
						offsets = append(offsets, r.Offset)
					}
				}
			}
		}
		off = offsets[len(offsets)-1] + 1
	}
	if want := []int64{0, 1, 2, 3, 4}; !slices.Equal(offsets, want) {
		t.Fatalf("offsets %v, want %v", offsets, want)
	}
}
