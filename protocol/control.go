package protocol

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction markers are Kafka's control batches: attributes
// transactional|control, the producer's id and epoch, base sequence -1 and
// one uncompressed record whose key is the control type (int16 version 0,
// int16 type: 0 abort, 1 commit) and whose value is the end transaction
// marker (int16 version 0, int32 coordinator epoch). The layout is Kafka's
// ControlRecordType and EndTransactionMarker, which kmsg encodes.

// AppendEndTxnMarker appends the control batch that ends producerID's
// transaction at epoch in one partition, committed or aborted, written
// by the coordinator of coordinatorEpoch at timestamp ts (ms). Its base
// offset is 0 until the partition's writer stamps it.
func AppendEndTxnMarker(dst []byte, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, ts int64) []byte {
	typ := kmsg.ControlRecordKeyTypeAbort
	if commit {
		typ = kmsg.ControlRecordKeyTypeCommit
	}
	key := (&kmsg.ControlRecordKey{Version: 0, Type: typ}).AppendTo(nil)
	value := (&kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: coordinatorEpoch}).AppendTo(nil)
	// One record of known shape cannot fail to encode.
	out, _ := appendBatch(dst, &Batch{
		Attributes:     attrTransactional | attrControl,
		FirstTimestamp: ts,
		MaxTimestamp:   ts,
		ProducerID:     producerID,
		ProducerEpoch:  epoch,
		BaseSequence:   -1,
	}, []Record{{Timestamp: ts, Key: key, Value: value}})
	return out
}

// errNotMarker is a control batch that is not a transaction marker.
var errNotMarker = errors.New("protocol: not a transaction marker")

// ParseEndTxnMarker reads a stored control batch: whether it commits, and
// the coordinator epoch it was written with. Control batches of other
// types (Kafka's KRaft ones never reach a data partition) are refused.
func ParseEndTxnMarker(data []byte) (commit bool, coordinatorEpoch int32, err error) {
	b, err := DecodeStoredBatch(data, NewDecompressBudget(int64(len(data))+1<<10))
	if err != nil {
		return false, 0, err
	}
	if !b.Control() || len(b.Records) != 1 {
		return false, 0, errNotMarker
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(b.Records[0].Key); err != nil {
		return false, 0, err
	}
	var value kmsg.EndTxnMarker
	if err := value.ReadFrom(b.Records[0].Value); err != nil {
		return false, 0, err
	}
	switch key.Type {
	case kmsg.ControlRecordKeyTypeCommit:
		return true, value.CoordinatorEpoch, nil
	case kmsg.ControlRecordKeyTypeAbort:
		return false, value.CoordinatorEpoch, nil
	}
	return false, 0, errNotMarker
}

// Transactional reports whether a stored batch's header says it belongs
// to a transaction.
func (b *BatchInfo) Transactional() bool { return b.Attributes&attrTransactional != 0 }

// Control reports whether a stored batch's header says it is a control
// batch (a transaction marker).
func (b *BatchInfo) Control() bool { return b.Attributes&attrControl != 0 }
