package disclient

import (
	"fmt"
	"strconv"
	"strings"
)

// PartitionID returns the canonical DIS partition id for Kafka partition n.
func PartitionID(n int32) string { return fmt.Sprintf("shardId-%010d", n) }

// ParsePartitionID accepts both forms DIS accepts, "shardId-0000000003" and
// "3", and returns the partition number.
func ParsePartitionID(s string) (int32, error) {
	digits := strings.TrimPrefix(s, "shardId-")
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || n < 0 || digits == "" || digits[0] == '+' {
		return 0, fmt.Errorf("invalid partition id %q", s)
	}
	return int32(n), nil
}

// FormatSequenceNumberRange renders the "[earliest : next]" text DIS uses.
func FormatSequenceNumberRange(earliest, next int64) string {
	return fmt.Sprintf("[%d : %d]", earliest, next)
}

// ParseSequenceNumberRange parses "[earliest : next]". next is the sequence
// number the next record will get, i.e. Kafka's high watermark.
func ParseSequenceNumberRange(s string) (earliest, next int64, err error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(s), "[")
	if ok {
		body, ok = strings.CutSuffix(body, "]")
	}
	a, b, found := strings.Cut(body, ":")
	if !ok || !found {
		return 0, 0, fmt.Errorf("invalid sequence number range %q", s)
	}
	if earliest, err = strconv.ParseInt(strings.TrimSpace(a), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("invalid sequence number range %q", s)
	}
	if next, err = strconv.ParseInt(strings.TrimSpace(b), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("invalid sequence number range %q", s)
	}
	return earliest, next, nil
}
