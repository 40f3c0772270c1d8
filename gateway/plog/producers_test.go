package plog

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
)

// What DescribeProducers reports of a writer's producers: by id, each one's
// epoch, last sequence and the largest record timestamp of its last batch
// (for LogAppendTime the time it was accepted), and none that expired.
func TestActiveProducers(t *testing.T) {
	w := testWriter(t, testSettings{Config: Config{MaxProducersPerPartition: 10, ProducerIDExpiration: time.Hour}}, nil)
	tsOp := func(pid int64, epoch int16, first, last int32, ts ...int64) *Append {
		op := idemOp(pid, epoch, first, last)
		for i := range ts {
			op.Entries = append(op.Entries, disclient.PutRecordsEntry{Timestamp: &ts[i]})
		}
		return op
	}
	accept := func(op *Append) {
		t.Helper()
		if _, code := w.checkSequence(op); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	accept(tsOp(9, 2, 0, 1, 500, 700))
	accept(tsOp(9, 2, 2, 4, 900, 800))
	accept(tsOp(3, 0, 0, 0, 100))
	before := time.Now().UnixMilli()
	appendTime := tsOp(5, 1, 0, 0, 100)
	appendTime.LogAppendTime = true
	accept(appendTime)
	after := time.Now().UnixMilli()

	got := w.activeProducers(time.Now())
	if len(got) != 3 {
		t.Fatalf("producers %+v, want 3", got)
	}
	if got[0] != (ProducerSnapshot{ID: 3, Epoch: 0, LastSeq: 0, LastTimestamp: 100, CoordinatorEpoch: -1, TxnStartOffset: -1}) {
		t.Errorf("first %+v", got[0])
	}
	if got[1].ID != 5 || got[1].LastTimestamp < before || got[1].LastTimestamp > after {
		t.Errorf("LogAppendTime producer %+v, want its acceptance time in [%d, %d]", got[1], before, after)
	}
	if got[2] != (ProducerSnapshot{ID: 9, Epoch: 2, LastSeq: 4, LastTimestamp: 900, CoordinatorEpoch: -1, TxnStartOffset: -1}) {
		t.Errorf("third %+v", got[2])
	}
	if got := w.activeProducers(time.Now().Add(2 * time.Hour)); len(got) != 0 {
		t.Errorf("after ProducerIDExpiration: %+v, want none", got)
	}
}
