package plog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Fragments (docs/record-envelope.md, "Batches larger than one DIS record"):
// a kafka-format batch larger than one DIS record is stored in consecutive
// DIS records, each a fragmentHeaderSize-byte header and the next piece of
// the batch. Byte 16, where a batch has its magic 2, holds fragmentMarker,
// so no fragment reads as a batch.
const (
	fragmentHeaderSize = 37
	fragmentMarker     = 0xF1
	fragmentSignature  = "dgwF" // bytes 12 to 15
)

// fragmentInfo is the header of one fragment.
type fragmentInfo struct {
	base       int64  // the batch's base offset
	batchCRC   uint32 // the batch's own CRC (its bytes 17 to 20)
	total      int32  // the batch's length in bytes
	index      int32  // 0 for the first fragment
	count      int32  // fragments of the batch, at least 2
	payloadCRC uint32
}

// sameSet reports whether f and g are fragments of the same stored batch.
func (f fragmentInfo) sameSet(g fragmentInfo) bool {
	return f.base == g.base && f.batchCRC == g.batchCRC && f.total == g.total && f.count == g.count
}

// parseFragment reads the header of a fragment and checks it and its
// payload's CRC-32C; ok is false for anything else.
func parseFragment(data []byte) (f fragmentInfo, ok bool) {
	if len(data) <= fragmentHeaderSize || data[16] != fragmentMarker || string(data[12:16]) != fragmentSignature {
		return f, false
	}
	be := binary.BigEndian
	if int64(be.Uint32(data[8:])) != int64(len(data)-12) {
		return f, false
	}
	f = fragmentInfo{
		base:       int64(be.Uint64(data)),
		batchCRC:   be.Uint32(data[17:]),
		total:      int32(be.Uint32(data[21:])),
		index:      int32(be.Uint32(data[25:])),
		count:      int32(be.Uint32(data[29:])),
		payloadCRC: be.Uint32(data[33:]),
	}
	if f.count < 2 || f.index < 0 || f.index >= f.count || f.total <= 0 || f.base < 0 ||
		crc32.Checksum(data[fragmentHeaderSize:], crc32c) != f.payloadCRC {
		return fragmentInfo{}, false
	}
	return f, true
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// fragmentBatch splits a stamped batch into the DIS records that store it:
// the batch itself when it fits in one record of maxRecord bytes, else
// fragments of at most maxRecord bytes each.
func fragmentBatch(batch []byte, maxRecord int) [][]byte {
	if len(batch) <= maxRecord {
		return [][]byte{batch}
	}
	chunk := maxRecord - fragmentHeaderSize
	count := (len(batch) + chunk - 1) / chunk
	be := binary.BigEndian
	out := make([][]byte, 0, count)
	for i := range count {
		payload := batch[i*chunk : min(len(batch), (i+1)*chunk)]
		f := make([]byte, fragmentHeaderSize, fragmentHeaderSize+len(payload))
		copy(f, batch[:8])
		be.PutUint32(f[8:], uint32(fragmentHeaderSize+len(payload)-12))
		copy(f[12:], fragmentSignature)
		f[16] = fragmentMarker
		copy(f[17:21], batch[17:21])
		be.PutUint32(f[21:], uint32(len(batch)))
		be.PutUint32(f[25:], uint32(i))
		be.PutUint32(f[29:], uint32(count))
		be.PutUint32(f[33:], crc32.Checksum(payload, crc32c))
		out = append(out, append(f, payload...))
	}
	return out
}

// batchRecords are the PutRecords entries that store one stamped batch of
// partition pid (fragmentBatch), each with the batch's max timestamp.
func batchRecords(batch []byte, pid string, ts int64, maxRecord int) []disclient.PutRecordsEntry {
	parts := fragmentBatch(batch, maxRecord)
	out := make([]disclient.PutRecordsEntry, len(parts))
	for i, p := range parts {
		t := ts
		out[i] = disclient.PutRecordsEntry{PartitionID: pid, Data: p, Timestamp: &t}
	}
	return out
}

// assembleFragments joins the fragments of one batch, recs in order, and
// checks that they make the batch their headers describe; ok is false when
// they do not.
func assembleFragments(recs []disclient.Record, f fragmentInfo) ([]byte, bool) {
	// The length the headers claim sizes nothing until the fragments
	// there add up to it: a DIS-native writer could claim any.
	n := 0
	for i := range recs {
		n += len(recs[i].Data) - fragmentHeaderSize
	}
	if n != int(f.total) {
		return nil, false
	}
	batch := make([]byte, 0, n)
	for i := range recs {
		batch = append(batch, recs[i].Data[fragmentHeaderSize:]...)
	}
	// A keep stream's batch may be sparse (compaction); a producer's
	// never is, and the fragments' own checks already tell them apart.
	info, ok := protocol.ParseStoredBatchInfo(batch)
	if !ok || len(batch) != int(f.total) || info.BaseOffset != f.base || binary.BigEndian.Uint32(batch[17:]) != f.batchCRC {
		return nil, false
	}
	return batch, true
}

// wholeSet is how many records from recs[i] on form the whole batch whose
// first fragment recs[i] is (f), or 0 when they break off before it ends
// and end reports whether they ran out rather than broke off.
func wholeSet(recs []disclient.Record, i int, f fragmentInfo) (n int, end bool) {
	for j := int32(1); j < f.count; j++ {
		k := i + int(j)
		if k == len(recs) {
			return 0, true
		}
		g, ok := parseFragment(recs[k].Data)
		if !ok || g.index != j || !g.sameSet(f) {
			return 0, false
		}
	}
	return int(f.count), false
}

// incompleteTail is where a batch whose fragments run past the end of recs
// begins (0 when recs are all inside one), or len(recs) when they end with
// a whole record.
func incompleteTail(recs []disclient.Record) int {
	n := len(recs)
	if n == 0 {
		return 0
	}
	f, ok := parseFragment(recs[n-1].Data)
	if !ok || f.index == f.count-1 {
		return n
	}
	start := n - 1 - int(f.index)
	if start < 0 {
		return 0
	}
	if g, ok := parseFragment(recs[start].Data); !ok || g.index != 0 || !g.sameSet(f) {
		return n
	}
	if _, end := wholeSet(recs, start, f); !end {
		return n
	}
	return start
}

// sameStored reports whether stored is the DIS record sent: for a batch the
// same base offset, length and CRC, for a fragment the same header.
func sameStored(sent, stored []byte) bool {
	if len(sent) != len(stored) {
		return false
	}
	if len(sent) > fragmentHeaderSize && sent[16] == fragmentMarker {
		return bytes.Equal(sent[:fragmentHeaderSize], stored[:fragmentHeaderSize])
	}
	return len(sent) >= protocol.BatchHeaderSize && string(sent[:8]) == string(stored[:8]) && string(sent[17:21]) == string(stored[17:21])
}
