package topics

import (
	"fmt"
	"unicode/utf8"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// RecordFormat says how a Kafka record is held in a DIS record (docs/design.md §2).
type RecordFormat string

const (
	// FormatKafka stores each Kafka record batch as one DIS record, as the
	// producer sent it (docs/record-formats.md): everything a record has
	// survives exactly, and offsets are the batches' own.
	FormatKafka RecordFormat = "kafka"
	// FormatRaw maps value to data and key to partition_key, as Huawei's DIS
	// Kafka adapter does, so DIS-native consumers see plain values. Headers
	// and keys it cannot hold are dropped or refused as the topic's dis.raw.*
	// configs say; null values are refused.
	FormatRaw RecordFormat = "raw"
)

// maxRawKeyBytes bounds a raw-format key, which travels as a DIS
// partition_key string.
const maxRawKeyBytes = 256

// RecordError is a record the format cannot hold; Produce reports it as
// INVALID_RECORD, or MESSAGE_TOO_LARGE when TooLarge, with this message, so
// the producer learns which rule its record broke.
type RecordError struct {
	TooLarge bool
	msg      string
}

// Error is the message the producer is answered with.
func (e *RecordError) Error() string { return e.msg }

// ToRawEntry converts one Kafka record into a DIS record of a raw-format
// stream for partitionID. Headers, and a key a DIS partition_key cannot
// hold, are refused or left out as policy says; what is left out is also
// removed from r, which the read cache then serves as DIS stores it, and
// counted in drops. Produce calls it for each record of a batch to a raw
// topic, before anything is queued, so a refusal fails the batch whole.
func ToRawEntry(r *protocol.Record, partitionID string, maxBytes int, policy RawSpec, drops *RawDrops) (disclient.PutRecordsEntry, error) {
	ts := r.Timestamp
	e := disclient.PutRecordsEntry{PartitionID: partitionID, Timestamp: &ts}
	policy = policy.withDefaults()
	headers := len(r.Headers)
	if headers > 0 {
		if policy.headers == policyRefuse {
			return e, &RecordError{msg: "topic uses the raw record format, which cannot hold record headers, and its " + configRawHeaders + " is refuse"}
		}
		r.Headers = nil
	}
	if r.Value == nil {
		return e, &RecordError{msg: "topic uses the raw record format, which cannot hold a null value"}
	}
	keyWhy := rawKeyProblem(r.Key)
	if keyWhy != "" {
		if policy.keys == policyRefuse {
			return e, &RecordError{msg: "topic uses the raw record format, " + keyWhy + ", and its " + configRawKeys + " is refuse"}
		}
		r.Key = nil
	}
	if len(r.Value) > maxBytes {
		return e, &RecordError{TooLarge: true, msg: fmt.Sprintf("record of %d bytes exceeds the %d-byte DIS record limit", len(r.Value), maxBytes)}
	}
	drops.add(headers, keyWhy)
	e.Data = r.Value
	e.PartitionKey = string(r.Key)
	return e, nil
}

// rawKeyProblem says why key cannot be a DIS partition_key, "" when it can
// (a null key is no partition_key).
func rawKeyProblem(key []byte) string {
	switch {
	case key != nil && len(key) == 0:
		return "which cannot tell an empty key from a null key"
	case !utf8.Valid(key):
		return "whose keys must be valid UTF-8"
	case len(key) > maxRawKeyBytes:
		return fmt.Sprintf("whose keys are at most %d bytes", maxRawKeyBytes)
	}
	return ""
}
