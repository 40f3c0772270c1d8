package protocol

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record with its absolute offset and timestamp. A nil Key
// or Value is Kafka's null, which differs from an empty, non-nil slice.
type Record struct {
	Offset    int64
	Timestamp int64 // milliseconds since the epoch
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Codec is the compression codec of a record batch, as the low three bits
// of the batch attributes carry it.
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)
