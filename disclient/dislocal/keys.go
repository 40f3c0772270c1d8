package dislocal

import (
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"
)

// The pebble key schema. Every key starts with one byte naming its kind;
// numbers are big-endian so that byte order is numeric order and range
// deletes and bounded iterators cover exactly one stream or partition.
//
//	f                                            → data directory format (uint64, dataFormat)
//	l                                            → log position: where the frames of the last PutRecords indexed end (segment:8, offset:8)
//	n                                            → next stream key (uint64)
//	s <project> 0x00 <stream name>               → stream metadata (JSON, streamMeta)
//	a <project> 0x00 <app name>                  → app metadata (JSON, appMeta)
//	c <project> 0x00 <app> 0x00 <skey:8> <p:4>   → checkpoint: sequence number (int64) + metadata
//	p <skey:8> <p:4>                             → partition state: earliest, next, maxTimestamp, lastWriteSecond (4 × int64)
//	r <skey:8> <p:4> <seq:8>                     → record: where its frame is in the record log (recordlog.Ref: segment, offset, length)
//	t <skey:8> <p:4> <maxTimestamp:8> <seq:8>    → empty: seq is the first record that raised the partition's running maximum timestamp to maxTimestamp
//	w <skey:8> <p:4> <second:8> <seq:8>          → empty: seq is the first record written in that second (Unix seconds, server clock)
//
// skey is a stream's internal numeric key, handed out from "n" and never
// reused, so a stream deleted and created again never sees old records or
// checkpoints. Names and project ids never contain bytes below 0x20, which
// keeps the 0x00 separators unambiguous.
//
// Record data itself (timestamp, partition key, data) is in the record log
// beside pebble (package recordlog).
//
// The t index answers AT_TIMESTAMP: producer timestamps need not be
// monotonic, but the running maximum is, and the first record whose own
// timestamp is >= T is exactly the first record whose running maximum is >= T.
// The w index lets the retention sweeper find the first record to keep
// without reading record values; it has at most one entry per second.
const (
	kindFormat        = 'f'
	kindLogPosition   = 'l'
	kindStreamCounter = 'n'
	kindStream        = 's'
	kindApp           = 'a'
	kindCheckpoint    = 'c'
	kindPartition     = 'p'
	kindRecord        = 'r'
	kindTimeIndex     = 't'
	kindWriteIndex    = 'w'
)

const (
	partitionPrefixLen = 1 + 8 + 4
	recordKeyLen       = partitionPrefixLen + 8
	indexKeyLen        = partitionPrefixLen + 8 + 8
	partitionStateLen  = 4 * 8
)

var (
	formatKey        = []byte{kindFormat}
	logPositionKey   = []byte{kindLogPosition}
	streamCounterKey = []byte{kindStreamCounter}
)

// encodeLogPosition is the value of the l key.
func encodeLogPosition(seg uint64, end int64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), seg), uint64(end))
}

// decodeLogPosition undoes encodeLogPosition.
func decodeLogPosition(v []byte) (seg uint64, end int64, ok bool) {
	if len(v) != 16 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(v), int64(binary.BigEndian.Uint64(v[8:])), true
}

// dataFormat is the version of this key schema and of the record log.
// Version 2 moved record data out of pebble into the record log; version 3
// stopped fsyncing pebble for records and added the l key, from which
// reindexLog finds the frames to index again; version 4 added run frames
// and member references (recordlog's runframe.go). A version 2 directory is upgraded
// when opened (pebble was fsynced then, so nothing is missing), a version
// 3 one is marked 4 (it has no run frames); one without the f key was
// written by an older version and is refused rather than misread, as a
// newer directory is by an older version.
const dataFormat = 4

// namedKey is kind + project + 0x00 + name: the key of a stream or an app.
func namedKey(kind byte, project, name string) []byte {
	k := make([]byte, 0, 2+len(project)+len(name))
	k = append(k, kind)
	k = append(k, project...)
	k = append(k, 0)
	return append(k, name...)
}

// splitNamedKey undoes namedKey.
func splitNamedKey(k []byte) (project, name string, ok bool) {
	for i := 1; i < len(k); i++ {
		if k[i] == 0 {
			return string(k[1:i]), string(k[i+1:]), true
		}
	}
	return "", "", false
}

// appCheckpointPrefix is the prefix of every checkpoint of one app.
func appCheckpointPrefix(project, app string) []byte {
	k := namedKey(kindCheckpoint, project, app)
	return append(k, 0)
}

// checkpointKey is the key of one app's checkpoint on one partition.
func checkpointKey(project, app string, skey uint64, part int32) []byte {
	k := appCheckpointPrefix(project, app)
	k = binary.BigEndian.AppendUint64(k, skey)
	return binary.BigEndian.AppendUint32(k, uint32(part))
}

// streamPrefix is kind + skey: the prefix of all keys of one kind for one stream.
func streamPrefix(kind byte, skey uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{kind}, skey)
}

// appendPartitionPrefix appends kind + skey + partition.
func appendPartitionPrefix(b []byte, kind byte, skey uint64, part int32) []byte {
	b = append(b, kind)
	b = binary.BigEndian.AppendUint64(b, skey)
	return binary.BigEndian.AppendUint32(b, uint32(part))
}

// partitionKey is the key of a partition's state.
func partitionKey(skey uint64, part int32) []byte {
	return appendPartitionPrefix(make([]byte, 0, partitionPrefixLen), kindPartition, skey, part)
}

// appendRecordKey appends the key of record seq of a partition.
func appendRecordKey(b []byte, skey uint64, part int32, seq int64) []byte {
	b = appendPartitionPrefix(b, kindRecord, skey, part)
	return binary.BigEndian.AppendUint64(b, uint64(seq))
}

// appendIndexKey appends a t or w index key.
func appendIndexKey(b []byte, kind byte, skey uint64, part int32, value, seq int64) []byte {
	b = appendPartitionPrefix(b, kind, skey, part)
	b = binary.BigEndian.AppendUint64(b, uint64(value))
	return binary.BigEndian.AppendUint64(b, uint64(seq))
}

// indexEntry decodes the value and sequence number of a t or w index key.
func indexEntry(k []byte) (value, seq int64, ok bool) {
	if len(k) != indexKeyLen {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(k[partitionPrefixLen:])), int64(binary.BigEndian.Uint64(k[partitionPrefixLen+8:])), true
}

// recordSeq decodes the sequence number of a record key.
func recordSeq(k []byte) (int64, bool) {
	if len(k) != recordKeyLen {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(k[partitionPrefixLen:])), true
}

// prefixEnd returns the smallest key greater than every key starting with
// prefix, for use as an exclusive upper bound.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// partitionState is the durable state of one partition.
type partitionState struct {
	// earliest is the first retained sequence number.
	earliest int64
	// next is the sequence number the next record gets.
	next int64
	// maxTimestamp is the largest record timestamp so far, -1 before any.
	maxTimestamp int64
	// lastWriteSecond is the latest second with a w index entry, -1 before any.
	lastWriteSecond int64
}

// indexRecord adds to b the index entries record seq needs: a t entry when
// its timestamp ts raises the partition's running maximum, a w entry when
// it is the first record written in second; ps moves on with them.
func (ps *partitionState) indexRecord(b *pebble.Batch, skey uint64, n int32, seq, ts, second int64) error {
	var key [indexKeyLen]byte
	if ts > ps.maxTimestamp {
		if err := b.Set(appendIndexKey(key[:0], kindTimeIndex, skey, n, ts, seq), nil, nil); err != nil {
			return err
		}
		ps.maxTimestamp = ts
	}
	if second > ps.lastWriteSecond {
		if err := b.Set(appendIndexKey(key[:0], kindWriteIndex, skey, n, second, seq), nil, nil); err != nil {
			return err
		}
		ps.lastWriteSecond = second
	}
	return nil
}

func newPartitionState() partitionState {
	return partitionState{maxTimestamp: -1, lastWriteSecond: -1}
}

func (ps partitionState) encode() []byte {
	b := make([]byte, 0, partitionStateLen)
	b = binary.BigEndian.AppendUint64(b, uint64(ps.earliest))
	b = binary.BigEndian.AppendUint64(b, uint64(ps.next))
	b = binary.BigEndian.AppendUint64(b, uint64(ps.maxTimestamp))
	return binary.BigEndian.AppendUint64(b, uint64(ps.lastWriteSecond))
}

func decodePartitionState(v []byte) (partitionState, bool) {
	if len(v) != partitionStateLen {
		return partitionState{}, false
	}
	return partitionState{
		earliest:        int64(binary.BigEndian.Uint64(v)),
		next:            int64(binary.BigEndian.Uint64(v[8:])),
		maxTimestamp:    int64(binary.BigEndian.Uint64(v[16:])),
		lastWriteSecond: int64(binary.BigEndian.Uint64(v[24:])),
	}, true
}
