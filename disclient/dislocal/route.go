package dislocal

import (
	"crypto/md5"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/disgw/disgw/disclient"
)

// hashKey is the hash DIS clients use to route a partition key: the first 8
// bytes of MD5(key), big-endian, with the sign bit cleared.
func hashKey(key string) int64 {
	sum := md5.Sum([]byte(key))
	return int64(binary.BigEndian.Uint64(sum[:8]) & math.MaxInt64)
}

// partitionForHash maps a hash in [0, MaxInt64] onto n ACTIVE partitions in
// equal slices; the remainder at the top goes to the last partition.
func partitionForHash(h int64, n int32) int32 {
	if n <= 1 || h < 0 {
		return 0
	}
	idx := h / (math.MaxInt64 / int64(n))
	if idx >= int64(n) {
		return n - 1
	}
	return int32(idx)
}

// route picks the partition of one record: partition_id beats
// explicit_hash_key beats partition_key; a record with none of them goes
// round robin. Needs st.mu.
func (st *stream) route(rec *disclient.PutRecordsEntry) (int32, *apiError) {
	writable := st.meta.Writable
	switch {
	case rec.PartitionID != "":
		n, err := parsePartition(rec.PartitionID, len(st.parts))
		if err != nil {
			return 0, err
		}
		if n >= writable {
			return 0, errorf(disclient.CodePartitionNotFound, "Partition is not writable, it was scaled in. [%s]", disclient.PartitionID(n))
		}
		return n, nil
	case rec.ExplicitHashKey != "":
		h, err := strconv.ParseInt(rec.ExplicitHashKey, 10, 64)
		if err != nil || h < 0 {
			return 0, errorf(disclient.CodeInvalidRequest, "Invalid explicit_hash_key. [%s] must be from 0 to %d.", rec.ExplicitHashKey, int64(math.MaxInt64))
		}
		return partitionForHash(h, writable), nil
	case rec.PartitionKey != "":
		return partitionForHash(hashKey(rec.PartitionKey), writable), nil
	default:
		return int32((st.roundRobin.Add(1) - 1) % uint32(max(writable, 1))), nil
	}
}
