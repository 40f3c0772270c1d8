package plog

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/disgw/disgw/disclient"
)

// expiringDIS answers GetRecords with DIS's cursor-expired error while
// expire is above zero, and counts GetCursor calls.
type expiringDIS struct {
	disclient.API
	expire  atomic.Int32
	cursors atomic.Int32
}

func (d *expiringDIS) GetCursor(ctx context.Context, req *disclient.GetCursorRequest) (*disclient.GetCursorResponse, error) {
	d.cursors.Add(1)
	return d.API.GetCursor(ctx, req)
}

func (d *expiringDIS) GetRecords(ctx context.Context, cursor string, limit int) (*disclient.GetRecordsResponse, error) {
	if d.expire.Add(-1) >= 0 {
		return nil, &disclient.Error{Code: disclient.CodeCursorExpired, Message: "expired"}
	}
	return d.API.GetRecords(ctx, cursor, limit)
}

// Kafka-format and raw-format reads share one cursor path: a cursor DIS
// calls expired is opened again once, a second expiry in a row fails the
// read, and a sequential read goes on with the cursor DIS handed back.
func TestCursorReopensOnceWhenExpired(t *testing.T) {
	ctx := context.Background()
	local := localDIS(t)
	if err := local.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "c", PartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
	var entries []disclient.PutRecordsEntry
	for range 4 {
		entries = append(entries, disclient.PutRecordsEntry{PartitionID: disclient.PartitionID(0), Data: []byte("v")})
	}
	if _, err := local.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "c", Records: entries}); err != nil {
		t.Fatal(err)
	}
	dis := &expiringDIS{API: local}
	ps := testTenant(t, testSettings{}, dis).Partition(testKey("c", 0))
	var c cursor

	dis.expire.Store(1)
	recs, err := c.read(ctx, ps, 0, 1<<20, false)
	if err != nil || len(recs) != 4 || dis.cursors.Load() != 2 {
		t.Fatalf("read %d records (%v) with %d cursors; want 4 with 2", len(recs), err, dis.cursors.Load())
	}
	if recs, err := c.read(ctx, ps, 4, 1<<20, true); err != nil || len(recs) != 0 || dis.cursors.Load() != 2 {
		t.Fatalf("the sequential read got %d records (%v) with %d cursors in all; want none with 2", len(recs), err, dis.cursors.Load())
	}
	dis.expire.Store(2)
	if _, err := c.read(ctx, ps, 0, 1<<20, false); !disclient.IsCode(err, disclient.CodeCursorExpired) {
		t.Fatalf("two expiries in a row: %v, want the expiry", err)
	}
}
