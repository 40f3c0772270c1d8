package protocol

import (
	"encoding/binary"
	"hash/crc32"
)

// BatchInfo is what the header of a stored v2 record batch says, read
// without decoding its records: enough to place it in a partition, to
// serve ListOffsets from it, and to rebuild idempotent producer state
// (docs/record-formats.md).
type BatchInfo struct {
	BaseOffset      int64
	LastOffsetDelta int32
	MaxTimestamp    int64
	Attributes      int16
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// LastOffset is the offset of the batch's last record.
func (b *BatchInfo) LastOffset() int64 { return b.BaseOffset + int64(b.LastOffsetDelta) }

// LastSequence is the sequence number of the batch's last record, wrapping
// at int32 max as Kafka's do.
func (b *BatchInfo) LastSequence() int32 {
	last := int64(b.BaseSequence) + int64(b.NumRecords) - 1
	if last > 1<<31-1 {
		last -= 1 << 31
	}
	return int32(last)
}

// ParseBatchInfo reads the header of data when data is exactly one v2
// record batch: its length field matches, its magic is 2 and its counts
// agree. It does not check the CRC or the records: a stored batch was
// checked when it was produced. ok is false for anything else, such as a
// record a DIS-native producer wrote.
func ParseBatchInfo(data []byte) (b BatchInfo, ok bool) {
	return ParseBatchHead(data, len(data))
}

// ParseBatchHead is ParseBatchInfo for data that is the start, at least
// the header (BatchHeaderSize), of size bytes: a batch whose rest is still
// in a file.
func ParseBatchHead(data []byte, size int) (b BatchInfo, ok bool) {
	if len(data) < BatchHeaderSize || int8(data[batchMagicPos]) != batchMagicV2 {
		return b, false
	}
	be := binary.BigEndian
	if int64(int32(be.Uint32(data[8:]))) != int64(size-batchLengthEnd) {
		return b, false
	}
	b = BatchInfo{
		BaseOffset:      int64(be.Uint64(data)),
		Attributes:      int16(be.Uint16(data[21:])),
		LastOffsetDelta: int32(be.Uint32(data[23:])),
		MaxTimestamp:    int64(be.Uint64(data[35:])),
		ProducerID:      int64(be.Uint64(data[43:])),
		ProducerEpoch:   int16(be.Uint16(data[51:])),
		BaseSequence:    int32(be.Uint32(data[53:])),
		NumRecords:      int32(be.Uint32(data[57:])),
	}
	if b.LastOffsetDelta < 0 || b.BaseOffset < 0 || int64(b.LastOffsetDelta)+1 != int64(b.NumRecords) {
		return BatchInfo{}, false
	}
	return b, true
}

// StampBatch sets the base offset and partition leader epoch of one v2
// batch in place. Both are outside the CRC, so the batch stays valid.
func StampBatch(batch []byte, baseOffset int64, leaderEpoch int32) {
	binary.BigEndian.PutUint64(batch, uint64(baseOffset))
	binary.BigEndian.PutUint32(batch[12:], uint32(leaderEpoch))
}

// SetLogAppendTime marks one v2 batch as timestamped by the broker at ts,
// as Kafka does for message.timestamp.type=LogAppendTime: the attribute
// bit and max timestamp change, so the CRC is computed again. Readers then
// take ts as every record's timestamp.
func SetLogAppendTime(batch []byte, ts int64) {
	be := binary.BigEndian
	be.PutUint16(batch[batchAttrsPos:], be.Uint16(batch[batchAttrsPos:])|attrLogAppendTime)
	be.PutUint64(batch[35:], uint64(ts))
	be.PutUint32(batch[batchCRCPos:], crc32.Checksum(batch[batchAttrsPos:], castagnoli))
}

// SetMaxTimestamp sets the max timestamp of one CreateTime v2 batch in
// place and computes its CRC again, as Kafka corrects a producer's wrong
// max timestamp.
func SetMaxTimestamp(batch []byte, ts int64) {
	binary.BigEndian.PutUint64(batch[35:], uint64(ts))
	binary.BigEndian.PutUint32(batch[batchCRCPos:], crc32.Checksum(batch[batchAttrsPos:], castagnoli))
}
