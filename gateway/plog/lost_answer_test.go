package plog

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
)

// lostAnswerDIS stores the records of the PutRecords call to stream it is
// armed for and then answers with an error, as when a connection drops after
// DIS took the call; while reads fail, every call that reads the
// partition back fails too, so the writer cannot learn what landed.
type lostAnswerDIS struct {
	disclient.API
	stream          string
	lose, readsFail atomic.Bool
}

var errLostAnswer = errors.New("connection reset: the answer was lost")

func (d *lostAnswerDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	resp, err := d.API.PutRecords(ctx, req)
	// Only the data stream's write: the partition's own bookkeeping
	// (transaction snapshots) may write elsewhere meanwhile.
	if err == nil && req.StreamName == d.stream && d.lose.CompareAndSwap(true, false) {
		return nil, errLostAnswer
	}
	return resp, err
}

func (d *lostAnswerDIS) DescribeStream(ctx context.Context, name, start string, limit int) (*disclient.DescribeStreamResponse, error) {
	if d.readsFail.Load() {
		return nil, errLostAnswer
	}
	return d.API.DescribeStream(ctx, name, start, limit)
}

func (d *lostAnswerDIS) GetCursor(ctx context.Context, req *disclient.GetCursorRequest) (*disclient.GetCursorResponse, error) {
	if d.readsFail.Load() {
		return nil, errLostAnswer
	}
	return d.API.GetCursor(ctx, req)
}

func (d *lostAnswerDIS) GetRecords(ctx context.Context, cursor string, maxFetchBytes int) (*disclient.GetRecordsResponse, error) {
	if d.readsFail.Load() {
		return nil, errLostAnswer
	}
	return d.API.GetRecords(ctx, cursor, maxFetchBytes)
}

// A batch DIS stored though its answer was lost, and which the writer
// could not read back, is not stored again when its producer retries it:
// the retry is answered with the stored batch's offsets, and the
// transaction it opened is open from there, so an abort covers it (the
// checker of test/txn_checker_test.go read such a batch of an aborted
// transaction as committed).
func TestLostAnswerRetryNotStoredTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		txn  bool
		// before is the producer that writes the partition's first two
		// records: another (-1), or the same producer, whose lost batch
		// is then its second.
		before int64
	}{
		{"idempotent first batch", false, -1},
		{"idempotent later batch", false, 1},
		{"transaction's first batch", true, -1},
		{"transaction's later batch", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dis := &lostAnswerDIS{API: localDIS(t), stream: "tx"}
			f := newTxnFixtureOver(t, dis)
			f.mustProduce(tc.before, 2, tc.txn && tc.before >= 0)
			dis.lose.Store(true)
			dis.readsFail.Store(true)
			if _, code := f.produce(1, 3, tc.txn); code == 0 {
				t.Fatal("a write whose answer was lost was acknowledged")
			}
			dis.readsFail.Store(false)
			base, code := f.produce(1, 3, tc.txn)
			if code != 0 {
				t.Fatalf("the producer's retry: %v", kerr.ErrorForCode(code))
			}
			if base != 2 {
				t.Errorf("the retry's base offset %d, want 2, where DIS stored the batch", base)
			}
			if next := f.next(); next != 5 {
				t.Errorf("next offset %d after the retry, want 5: the batch is stored once", next)
			}
			if !tc.txn {
				return
			}
			first := int64(2)
			if tc.before >= 0 {
				first = 0
			}
			if got := f.lso(); got != first {
				t.Errorf("last stable offset %d, want %d where the transaction began", got, first)
			}
			if code := f.marker(1, 0, false, 1); code != 0 {
				t.Fatal(kerr.ErrorForCode(code))
			}
			got := f.ps.AbortedIn(0, f.next())
			if len(got) != 1 || got[0].FirstOffset != first || got[0].LastOffset != 5 {
				t.Errorf("aborted %+v, want producer 1 from %d to the marker at 5", got, first)
			}
		})
	}
}
