package plog

import (
	"context"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
)

// A long-polling fetch is answered as soon as an append brings what it
// waits for, not at its deadline.
func TestFetchWakesOnAppend(t *testing.T) {
	ctx := context.Background()
	dis := localDIS(t)
	if err := dis.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "f", PartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
	tn := testTenant(t, testSettings{Config: Config{PollInterval: time.Hour}}, dis)
	ps := tn.Partition(testKey("f", 0))
	write := func() {
		op := NewAppend(true)
		ts := time.Now().UnixMilli()
		op.Entries = []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(0), Data: batchesOf(t, 1, 1, 10), Timestamp: &ts}}
		if _, code := ps.Enqueue(ctx, op); code != 0 {
			t.Fatalf("enqueue: code %d", code)
		}
		<-op.Done()
		if op.ErrCode != 0 {
			t.Fatalf("write: %d %s", op.ErrCode, op.ErrMsg)
		}
	}
	write()
	p := &FetchPart{Partition: ps, Kafka: true, Offset: 1, Limit: 1 << 20, HighWatermark: -1, LogStartOffset: -1}
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		tn.Fetch(ctx, []*FetchPart{p}, began.Add(20*time.Second), 1, 1<<20, nil)
	}()
	time.Sleep(50 * time.Millisecond)
	write()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the fetch was not woken by the append")
	}
	if !p.Done || len(p.Batches) != 1 || p.Batches[0].base != 1 || p.HighWatermark != 2 || p.LogStartOffset != 0 {
		t.Fatalf("fetch answered %+v", p)
	}
}

// An answer is kept within max_bytes in request order, but its first
// batch stays whatever its size.
func TestFetchTrimsToMaxBytes(t *testing.T) {
	batch := func(n int) Batch { return Batch{Data: make([]byte, n)} }
	a := &FetchPart{Batches: []Batch{batch(300), batch(300)}}
	b := &FetchPart{Batches: []Batch{batch(100)}}
	trimToMaxBytes([]*FetchPart{a, b}, 200)
	if len(a.Batches) != 1 || len(b.Batches) != 0 {
		t.Fatalf("kept %d and %d batches, want 1 and 0", len(a.Batches), len(b.Batches))
	}
}
