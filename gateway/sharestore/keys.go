package sharestore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
)

// Key names a share-partition: a share group's view of one topic
// partition. Stream is the topic's DIS stream id, so that a topic deleted
// and created again under its name starts its share-partitions afresh,
// as Kafka's, keyed by topic id, do.
type Key struct {
	Group, Topic, Stream string
	Partition            int32
}

// CompareKeys orders share-partitions by group, topic, stream and
// partition: the order Keys lists them in, wherever they are gathered
// from.
func CompareKeys(a, b Key) int {
	return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), strings.Compare(a.Stream, b.Stream), cmp.Compare(a.Partition, b.Partition))
}

// The kinds of key, the byte after the share-partition.
const (
	kindSnapshot = 1
	kindUpdate   = 2
	kindDeletion = 3
)

// loadKey is the key of a load record: every other key starts with three
// length varints, so none is empty.
var loadKey = []byte{}

// PartitionOf is the log partition among n that holds k's records: FNV-1a
// of k's encoding, stable across gateways and releases, since every owner
// must find the records where its predecessors wrote them. n must be
// positive.
func PartitionOf(k Key, n int32) int32 {
	h := fnv.New32a()
	h.Write(k.prefix())
	return int32(h.Sum32() % uint32(n))
}

// prefix is k as every one of its keys begins: the group, the topic and
// its stream length-prefixed, so no choice of characters makes two
// share-partitions' keys alike, then the partition.
func (k Key) prefix() []byte {
	b := make([]byte, 0, len(k.Group)+len(k.Topic)+len(k.Stream)+4+3*binary.MaxVarintLen64+1+4+8)
	b = binary.AppendUvarint(b, uint64(len(k.Group)))
	b = append(b, k.Group...)
	b = binary.AppendUvarint(b, uint64(len(k.Topic)))
	b = append(b, k.Topic...)
	b = binary.AppendUvarint(b, uint64(len(k.Stream)))
	b = append(b, k.Stream...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// snapshotKey is the key of k's snapshots written under epoch: one a
// share-partition and owner, each new snapshot replacing the one before.
func snapshotKey(k Key, epoch uint32) []byte {
	b := append(k.prefix(), kindSnapshot)
	return binary.BigEndian.AppendUint32(b, epoch)
}

// updateKey is the key of k's update seq written under epoch. The epoch is
// in it so that a former owner's tombstones can only remove its own keys.
func updateKey(k Key, epoch uint32, seq uint64) []byte {
	b := append(k.prefix(), kindUpdate)
	b = binary.BigEndian.AppendUint32(b, epoch)
	return binary.BigEndian.AppendUint64(b, seq)
}

// deletionKey is the key of k's deletion record written under epoch.
func deletionKey(k Key, epoch uint32) []byte {
	b := append(k.prefix(), kindDeletion)
	return binary.BigEndian.AppendUint32(b, epoch)
}

// parsedKey is a share-partition record's key read back.
type parsedKey struct {
	k        Key
	snapshot bool
	deletion bool
	epoch    uint32
	seq      uint64 // updates only
}

// parseKey reads a key snapshotKey, updateKey or deletionKey made,
// refusing anything else.
func parseKey(b []byte) (parsedKey, error) {
	var pk parsedKey
	group, rest, err := lengthPrefixed(b)
	if err != nil {
		return pk, err
	}
	topic, rest, err := lengthPrefixed(rest)
	if err != nil {
		return pk, err
	}
	stream, rest, err := lengthPrefixed(rest)
	if err != nil {
		return pk, err
	}
	if len(rest) < 4+1+4 {
		return pk, errors.New("sharestore: key truncated")
	}
	pk.k = Key{Group: group, Topic: topic, Stream: stream, Partition: int32(binary.BigEndian.Uint32(rest))}
	kind := rest[4]
	pk.epoch = binary.BigEndian.Uint32(rest[5:])
	rest = rest[9:]
	switch {
	case kind == kindSnapshot && len(rest) == 0:
		pk.snapshot = true
	case kind == kindUpdate && len(rest) == 8:
		pk.seq = binary.BigEndian.Uint64(rest)
	case kind == kindDeletion && len(rest) == 0:
		pk.deletion = true
	default:
		return pk, fmt.Errorf("sharestore: key of kind %d with %d bytes after the epoch", kind, len(rest))
	}
	return pk, nil
}

// lengthPrefixed reads a string after its length varint.
func lengthPrefixed(b []byte) (string, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, errors.New("sharestore: key truncated")
	}
	b = b[w:]
	return string(b[:n]), b[n:], nil
}
