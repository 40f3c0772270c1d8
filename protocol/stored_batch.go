package protocol

import (
	"encoding/binary"
	"hash/crc32"
	"math"
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
// at int32 max as Kafka's do. It counts from the last offset delta, as
// Kafka does, so that a batch compaction left sparse keeps its producer's
// sequence range.
func (b *BatchInfo) LastSequence() int32 {
	last := int64(b.BaseSequence) + int64(b.LastOffsetDelta)
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
	return parseBatchHead(data, size, false)
}

// ParseStoredBatchInfo is ParseBatchInfo for the batches of a compacted
// topic, which FilterBatch may have left sparse: their record count may be
// anything from 1 to the last offset delta + 1.
func ParseStoredBatchInfo(data []byte) (b BatchInfo, ok bool) {
	return parseBatchHead(data, len(data), true)
}

// ParseStoredBatchHead is ParseBatchHead for the batches of a compacted
// topic, which FilterBatch may have left sparse: their record count may be
// anything from 1 to the last offset delta + 1.
func ParseStoredBatchHead(data []byte, size int) (b BatchInfo, ok bool) {
	return parseBatchHead(data, size, true)
}

// parseBatchHead is ParseBatchHead, accepting sparse batches when stored
// is set.
func parseBatchHead(data []byte, size int, stored bool) (b BatchInfo, ok bool) {
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
	records, offsets := int64(b.NumRecords), int64(b.LastOffsetDelta)+1
	if b.LastOffsetDelta < 0 || b.BaseOffset < 0 || records < 1 || records > offsets || !stored && records != offsets {
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

// DecodeStoredBatch decodes data, exactly one v2 record batch as a
// kafka-format topic stores it: as DecodeBatches does, with the same
// checks, errors and budget, except that the batch may be sparse, as
// FilterBatch (Kafka's log cleaner) leaves it. Its record count may be
// below its last offset delta + 1, and its records' offset deltas rise
// strictly from 0 or more up to at most the last offset delta. Producers
// may not send such batches, so DecodeBatches still refuses them. Keys,
// values and header values alias data for uncompressed batches.
func DecodeStoredBatch(data []byte, budget *DecompressBudget) (Batch, error) {
	return decodeStoredBatch(data, budget, batchDecoding{keep: true, stored: true})
}

// decodeStoredBatch is DecodeStoredBatch with the options opts.
func decodeStoredBatch(data []byte, budget *DecompressBudget, opts batchDecoding) (Batch, error) {
	if len(data) == 0 {
		return Batch{}, invalidRecord("no record batch")
	}
	end, err := batchEnd(data)
	if err != nil {
		return Batch{}, err
	}
	if end != len(data) {
		return Batch{}, invalidRecord("%d bytes after the record batch", len(data)-end)
	}
	b, err := decodeBatch(data, budget, opts)
	if err != nil {
		return Batch{}, err
	}
	b.Raw = data
	return b, nil
}

// FilterBatch appends to dst the batch a compacted topic keeps of batch,
// as Kafka's log cleaner rewrites it: only the records keep is true for,
// each at its offset and with its timestamp as before. batch is exactly
// one stored v2 record batch, dense as a producer sent it or sparse as
// FilterBatch wrote it, decoded and charged to budget as DecodeStoredBatch
// does; kept is the number of records kept.
//
// The new batch keeps batch's base offset, partition leader epoch,
// attributes (codec, timestamp type, transactional and control bits),
// last offset delta, first timestamp, and producer id, epoch and base
// sequence, so that offsets stay where they were and idempotent producer
// state stays valid; its records keep their offset and timestamp deltas.
// It is compressed again with batch's codec. A CreateTime batch's max
// timestamp becomes the greatest kept record's; a LogAppendTime batch's
// stays. When every record is kept, batch is appended unchanged; when none
// is, nothing is, and the caller decides what keeps the batch's offsets
// and producer state (Kafka's cleaner keeps an empty batch where a
// producer's last batch would go). On error dst is returned unchanged.
//
// keep sees each record as DecodeStoredBatch gives it: absolute offset,
// and in a LogAppendTime batch the max timestamp. It must not modify the
// record's slices, nor retain r or any slice it holds after it returns:
// Key, Value and header values alias batch, or a decompression buffer that
// FilterBatch reuses once it returns. A caller that needs them longer
// copies them.
func FilterBatch(dst, batch []byte, keep func(r *Record) bool, budget *DecompressBudget) (out []byte, kept int, err error) {
	scratch := scratchPool.Get().(*[]byte)
	defer putScratch(scratch)
	b, err := decodeStoredBatch(batch, budget, batchDecoding{keep: true, stored: true, createTime: true, scratch: scratch})
	if err != nil {
		return dst, 0, err
	}
	// Records hold their CreateTime timestamps, first timestamp + delta, so
	// that appendBatch writes the deltas back as they were.
	recs := b.Records[:0]
	maxTimestamp := int64(math.MinInt64)
	for i := range b.Records {
		r := b.Records[i]
		if b.LogAppendTime() {
			r.Timestamp = b.MaxTimestamp
		}
		if keep(&r) {
			maxTimestamp = max(maxTimestamp, b.Records[i].Timestamp)
			recs = append(recs, b.Records[i])
		}
	}
	switch len(recs) {
	case 0:
		return dst, 0, nil
	case int(b.NumRecords):
		return append(dst, batch...), len(recs), nil
	}
	if !b.LogAppendTime() {
		b.MaxTimestamp = maxTimestamp
	}
	if out, err = appendBatch(dst, &b, recs); err != nil {
		return dst, 0, err
	}
	return out, len(recs), nil
}
