package gateway

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func idemOp(pid int64, epoch int16, first, last int32) *appendOp {
	return &appendOp{producerID: pid, epoch: epoch, firstSeq: first, lastSeq: last, done: make(chan struct{})}
}

// The idempotent producer rules, fed step by step.
func TestCheckSequence(t *testing.T) {
	w := &partitionWriter{producers: make(map[int64]*producerState)}
	step := func(op *appendOp, wantDup *appendOp, wantCode int16) {
		t.Helper()
		dup, code := w.checkSequence(op)
		if dup != wantDup || code != wantCode {
			t.Fatalf("batch %d..%d epoch %d: dup %p code %v, want dup %p code %v",
				op.firstSeq, op.lastSeq, op.epoch, dup, kerr.ErrorForCode(code), wantDup, kerr.ErrorForCode(wantCode))
		}
	}
	// An unknown producer may start anywhere (its state may have been lost
	// in a restart).
	a := idemOp(7, 0, 10, 14)
	step(a, nil, 0)
	b := idemOp(7, 0, 15, 15)
	step(b, nil, 0)
	// Retries of any of the recent batches are duplicates of the original.
	step(idemOp(7, 0, 10, 14), a, 0)
	step(idemOp(7, 0, 15, 15), b, 0)
	// A gap, and an old sequence no longer remembered.
	step(idemOp(7, 0, 17, 17), nil, kerr.OutOfOrderSequenceNumber.Code)
	step(idemOp(7, 0, 3, 4), nil, kerr.DuplicateSequenceNumber.Code)
	// A batch that overlaps the last one without matching it.
	step(idemOp(7, 0, 15, 16), nil, kerr.OutOfOrderSequenceNumber.Code)
	// An older epoch is fenced; a newer epoch must start at 0.
	step(idemOp(7, -1, 16, 16), nil, kerr.InvalidProducerEpoch.Code)
	step(idemOp(7, 1, 16, 16), nil, kerr.OutOfOrderSequenceNumber.Code)
	c := idemOp(7, 1, 0, 2)
	step(c, nil, 0)
	step(idemOp(7, 1, 0, 2), c, 0)
	// Other producers are independent.
	step(idemOp(8, 0, 0, 0), nil, 0)
	// Only idempotentWindow batches are remembered.
	for i := int32(3); i < 3+idempotentWindow; i++ {
		step(idemOp(7, 1, i, i), nil, 0)
	}
	step(idemOp(7, 1, 0, 2), nil, kerr.DuplicateSequenceNumber.Code)
}

func TestSequenceWraps(t *testing.T) {
	w := &partitionWriter{producers: make(map[int64]*producerState)}
	if _, code := w.checkSequence(idemOp(1, 0, 1<<31-2, 1<<31-1)); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if _, code := w.checkSequence(idemOp(1, 0, 0, 3)); code != 0 {
		t.Fatalf("sequence after int32 max: %v, want it to wrap to 0", kerr.ErrorForCode(code))
	}
}
