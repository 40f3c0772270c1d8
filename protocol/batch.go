package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
)

// ErrCorruptMessage reports a record batch whose CRC does not match its
// bytes, or whose length is below what any batch needs; Kafka answers both
// with CORRUPT_MESSAGE, so the producer retries.
var ErrCorruptMessage = errors.New("protocol: corrupt record batch")

// InvalidRecordError reports a record batch that is well framed but breaks
// the v2 format or a rule Kafka applies to what producers send: a wrong
// magic, a truncated batch, no records, counts that disagree, records that
// do not parse, or compressed data that does not decompress. Kafka answers
// it with INVALID_RECORD.
type InvalidRecordError struct {
	Msg string
	Err error // the underlying error, such as ErrDecompressedTooLarge
}

func (e *InvalidRecordError) Error() string {
	if e.Err != nil {
		return "protocol: invalid record batch: " + e.Msg + ": " + e.Err.Error()
	}
	return "protocol: invalid record batch: " + e.Msg
}

func (e *InvalidRecordError) Unwrap() error { return e.Err }

func invalidRecord(format string, args ...any) error {
	return &InvalidRecordError{Msg: fmt.Sprintf(format, args...)}
}

// Batch attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// BatchHeaderSize is the size of a v2 record batch before its records:
// what a batch costs on top of RecordSizeInBatch for each record.
const BatchHeaderSize = 61

// The layout of v2 record batches and their records.
const (
	batchLengthEnd  = 12 // base offset (8) and batch length (4)
	batchMagicPos   = 16 // after the partition leader epoch
	batchCRCPos     = 17
	batchAttrsPos   = 21 // the CRC covers everything from here on
	minBatchLength  = BatchHeaderSize - batchLengthEnd
	minLegacyLength = 14 // Kafka's smallest batch of any magic (v0 record overhead)
	minRecordSize   = 7  // length, attributes, two deltas, key, value, header count
	minHeaderSize   = 2  // key length and value length
	batchMagicV2    = 2
	maxBatchRecords = math.MaxInt32
	maxVarintLen32  = 5 // Kafka refuses longer encodings of 32-bit varints
	maxKnownCodec   = CodecZstd
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is one decoded v2 record batch.
type Batch struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
	// Records are decompressed. Offset is BaseOffset+offsetDelta; Timestamp
	// is FirstTimestamp+timestampDelta, or MaxTimestamp for every record
	// when the batch uses LogAppendTime. CheckBatches leaves it nil.
	Records []Record
	// Timestamps are the least and greatest of the records' timestamps.
	Timestamps TimestampRange
	// FirstNullKey is the index of the first record with a null key, -1
	// when every record has a key: a compacted topic refuses such a
	// record, as Kafka does, and checking needs no second pass.
	FirstNullKey int
	// Raw is the whole batch as it was decoded, aliasing the decoded
	// data: what a kafka-format topic stores.
	Raw []byte
}

// TimestampRange is the least and greatest timestamp of a batch's records
// and the index of the first record holding each: all a broker needs to
// check the records' timestamps against a window, such as the
// message.timestamp.* configs allow.
type TimestampRange struct {
	Min, Max             int64
	MinRecord, MaxRecord int
}

// add takes the timestamp of record i.
func (t *TimestampRange) add(i int, ts int64) {
	if i == 0 || ts < t.Min {
		t.Min, t.MinRecord = ts, i
	}
	if i == 0 || ts > t.Max {
		t.Max, t.MaxRecord = ts, i
	}
}

// Codec is the compression codec the batch was sent with.
func (b *Batch) Codec() Codec { return Codec(b.Attributes & attrCodecMask) }

// LogAppendTime reports whether the broker, not the producer, set the
// timestamps.
func (b *Batch) LogAppendTime() bool { return b.Attributes&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (b *Batch) Transactional() bool { return b.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds transaction markers rather than
// user records.
func (b *Batch) Control() bool { return b.Attributes&attrControl != 0 }

// DecodeBatches decodes the records field of a produce partition: one or
// more v2 record batches, back to back, checked as a Kafka broker checks
// what a producer sends before it appends it.
//
// ErrCorruptMessage (Kafka's CORRUPT_MESSAGE) for a batch length below 14
// bytes (Kafka's minimum for any magic) or below the v2 header, and for a
// CRC-32C mismatch. *InvalidRecordError (INVALID_RECORD) for everything
// else: no batch, a batch longer than the bytes left (Kafka sees no batch
// there), trailing bytes, a magic other than 2 (produce v3+ allows only
// v2), a record count that is not positive or disagrees with the last
// offset delta, a producer id without a base sequence, records that do not
// parse, more or fewer records than announced, offset deltas other than
// 0, 1, 2, ... (the gateway stores the batch as sent, where Kafka would
// rewrite them), and data that does not decompress; it wraps
// ErrDecompressedTooLarge when budget is spent.
//
// Decompressed data is charged to budget, which the batches of every
// partition of one request share, and stays charged when a batch is
// refused, so a request cannot make the gateway decompress more than one
// budget however many partitions list the same bomb. A claimed count never
// sizes an allocation beyond what the bytes present can hold. Keys, values and header values alias data for
// uncompressed batches.
func DecodeBatches(data []byte, budget *DecompressBudget) ([]Batch, error) {
	return decodeBatches(data, budget, true)
}

// CheckBatches makes every check DecodeBatches makes, with the same errors,
// without keeping the records: each batch's Records is nil, and what the
// records hold is summed up in Timestamps. A kafka-format topic stores
// batches as sent, so the records are only checked; keeping them would
// allocate a Record for each (88 bytes, more than a small record's value)
// for the collector to sweep.
func CheckBatches(data []byte, budget *DecompressBudget) ([]Batch, error) {
	return decodeBatches(data, budget, false)
}

// decodeBatches is DecodeBatches, keeping the records when keep is set.
func decodeBatches(data []byte, budget *DecompressBudget, keep bool) ([]Batch, error) {
	if len(data) == 0 {
		return nil, invalidRecord("no record batch")
	}
	opts := batchDecoding{keep: keep}
	if !keep {
		// Records not kept leave nothing pointing into the decompressed
		// bytes once a batch is checked, so a pooled buffer takes them.
		opts.scratch = scratchPool.Get().(*[]byte)
		defer putScratch(opts.scratch)
	}
	var batches []Batch
	for len(data) > 0 {
		end, err := batchEnd(data)
		if err != nil {
			return nil, err
		}
		b, err := decodeBatch(data[:end], budget, opts)
		if err != nil {
			return nil, err
		}
		b.Raw = data[:end:end]
		batches = append(batches, b)
		data = data[end:]
	}
	return batches, nil
}

// batchEnd returns the length of the batch data starts with, checking that
// its length field is plausible and that data holds all of it.
func batchEnd(data []byte) (int, error) {
	if len(data) < batchLengthEnd {
		return 0, invalidRecord("%d trailing bytes are not a record batch", len(data))
	}
	length := int32(binary.BigEndian.Uint32(data[8:]))
	if length < minLegacyLength {
		return 0, fmt.Errorf("%w: batch length %d is below the minimum %d", ErrCorruptMessage, length, minLegacyLength)
	}
	if int64(length) > int64(len(data)-batchLengthEnd) {
		return 0, invalidRecord("batch length %d exceeds the %d bytes left: truncated", length, len(data)-batchLengthEnd)
	}
	return batchLengthEnd + int(length), nil
}

// batchDecoding says how decodeBatch reads a batch.
type batchDecoding struct {
	// keep keeps the records in Batch.Records; without it they are only
	// checked.
	keep bool
	// stored takes a batch as stored, which compaction may have left
	// sparse, rather than as a producer must send it.
	stored bool
	// createTime gives every record its own timestamp, the first timestamp
	// plus its delta, also in a LogAppendTime batch, so that FilterBatch can
	// write the deltas back as they were.
	createTime bool
	// scratch, when set, is a buffer of the caller's that compressed
	// records are decompressed into (records then alias it).
	scratch *[]byte
}

// decodeBatch decodes one whole batch of at least minLegacyLength bytes as
// opts says.
func decodeBatch(data []byte, budget *DecompressBudget, opts batchDecoding) (Batch, error) {
	if magic := int8(data[batchMagicPos]); magic != batchMagicV2 {
		return Batch{}, invalidRecord("magic %d: produce v3+ takes only v2 record batches", magic)
	}
	if len(data) < BatchHeaderSize {
		return Batch{}, fmt.Errorf("%w: batch length %d is below the v2 minimum %d", ErrCorruptMessage, len(data)-batchLengthEnd, minBatchLength)
	}
	if want, got := binary.BigEndian.Uint32(data[batchCRCPos:]), crc32.Checksum(data[batchAttrsPos:], castagnoli); want != got {
		return Batch{}, fmt.Errorf("%w: CRC mismatch: stored %#08x, computed %#08x", ErrCorruptMessage, want, got)
	}
	be := binary.BigEndian
	b := Batch{
		BaseOffset:           int64(be.Uint64(data)),
		PartitionLeaderEpoch: int32(be.Uint32(data[12:])),
		Attributes:           int16(be.Uint16(data[21:])),
		LastOffsetDelta:      int32(be.Uint32(data[23:])),
		FirstTimestamp:       int64(be.Uint64(data[27:])),
		MaxTimestamp:         int64(be.Uint64(data[35:])),
		ProducerID:           int64(be.Uint64(data[43:])),
		ProducerEpoch:        int16(be.Uint16(data[51:])),
		BaseSequence:         int32(be.Uint32(data[53:])),
		NumRecords:           int32(be.Uint32(data[57:])),
		FirstNullKey:         -1,
	}
	switch {
	case b.LastOffsetDelta < 0:
		return Batch{}, invalidRecord("last offset delta %d: the batch covers no offsets", b.LastOffsetDelta)
	case b.NumRecords <= 0:
		return Batch{}, invalidRecord("record count %d: a batch needs at least one record", b.NumRecords)
	case int64(b.NumRecords) > int64(b.LastOffsetDelta)+1, !opts.stored && int64(b.NumRecords) != int64(b.LastOffsetDelta)+1:
		return Batch{}, invalidRecord("record count %d disagrees with last offset delta %d", b.NumRecords, b.LastOffsetDelta)
	case b.ProducerID >= 0 && b.BaseSequence < 0 && !(opts.stored && b.Control()):
		// A stored control batch (a transaction marker) has no sequence.
		return Batch{}, invalidRecord("producer id %d with base sequence %d", b.ProducerID, b.BaseSequence)
	}
	records := data[BatchHeaderSize:]
	if codec := b.Codec(); codec != CodecNone {
		if codec > maxKnownCodec {
			return Batch{}, invalidRecord("unknown compression codec %d", codec)
		}
		var reuse []byte
		if opts.scratch != nil {
			reuse = *opts.scratch
		}
		out, err := decompress(codec, records, budget, reuse)
		if err != nil {
			return Batch{}, &InvalidRecordError{Msg: "decompressing " + codec.String() + " records", Err: err}
		}
		if opts.scratch != nil {
			*opts.scratch = out
		}
		records = out
	}
	if int64(b.NumRecords) > int64(len(records)/minRecordSize) {
		return Batch{}, invalidRecord("%d records cannot fit in %d bytes", b.NumRecords, len(records))
	}
	if opts.keep {
		b.Records = make([]Record, 0, b.NumRecords)
	}
	logAppendTime := b.LogAppendTime() && !opts.createTime
	// Offset deltas rise strictly, from next on, and leave room below the
	// last offset delta for every record after the one read: 0, 1, 2, ...
	// when the count agrees with the last offset delta, as a producer's
	// must, and the gaps compaction leaves otherwise.
	next := int32(0)
	for i := range int(b.NumRecords) {
		if len(records) == 0 {
			return Batch{}, invalidRecord("batch announces %d records but holds %d", b.NumRecords, i)
		}
		if !opts.keep {
			if ts, nullKey, rest, ok := b.skimRecord(records, next); ok {
				if logAppendTime {
					ts = b.MaxTimestamp
				}
				b.Timestamps.add(i, ts)
				if nullKey && b.FirstNullKey < 0 {
					b.FirstNullKey = i
				}
				records = rest
				next++
				continue
			}
		}
		last := b.LastOffsetDelta - (b.NumRecords - 1 - int32(i))
		var (
			r   Record
			err error
		)
		if r, records, err = b.decodeRecord(records, i, opts.keep, next, last); err != nil {
			return Batch{}, err
		}
		if logAppendTime {
			r.Timestamp = b.MaxTimestamp
		}
		b.Timestamps.add(i, r.Timestamp)
		if r.Key == nil && b.FirstNullKey < 0 {
			b.FirstNullKey = i
		}
		next = int32(r.Offset-b.BaseOffset) + 1
		if opts.keep {
			b.Records = append(b.Records, r)
		}
	}
	if len(records) != 0 {
		return Batch{}, invalidRecord("%d bytes left after the %d records the batch announces", len(records), b.NumRecords)
	}
	return b, nil
}

// wireReader reads the zigzag varints and length-prefixed fields of records.
// After the first failure every read returns zero values and ok stays false.
type wireReader struct {
	src []byte
	ok  bool
}

// varlong reads a zigzag varint of up to 64 bits.
func (r *wireReader) varlong() int64 {
	if v, ok := r.short(); ok {
		return int64(v)
	}
	if !r.ok {
		return 0
	}
	v, n := binary.Varint(r.src)
	if n <= 0 {
		r.ok = false
		return 0
	}
	r.src = r.src[n:]
	return v
}

// varint reads a 32-bit zigzag varint: at most five bytes, as Kafka reads
// lengths, counts and offset deltas.
func (r *wireReader) varint() int32 {
	if v, ok := r.short(); ok {
		return v
	}
	if !r.ok {
		return 0
	}
	v, n := binary.Varint(r.src)
	if n <= 0 || n > maxVarintLen32 || v < math.MinInt32 || v > math.MaxInt32 {
		r.ok = false
		return 0
	}
	r.src = r.src[n:]
	return int32(v)
}

// short reads a zigzag varint of one to three bytes (shortVarint) without
// binary.Varint's loop; ok is false for a longer one or a reader that
// failed, left to the general path.
func (r *wireReader) short() (v int32, ok bool) {
	if !r.ok {
		return 0, false
	}
	v, p := shortVarint(r.src, 0)
	if p < 0 {
		return 0, false
	}
	r.src = r.src[p:]
	return v, true
}

// nullableBytes reads a varint length (-1 = null) and that many bytes,
// aliasing the source.
func (r *wireReader) nullableBytes() []byte {
	n := r.varint()
	switch {
	case !r.ok:
		return nil
	case n == -1:
		return nil
	case n < 0 || int(n) > len(r.src):
		r.ok = false
		return nil
	}
	b := r.src[:n:n]
	r.src = r.src[n:]
	return b
}

func (r *wireReader) byte() byte {
	if !r.ok || len(r.src) == 0 {
		r.ok = false
		return 0
	}
	c := r.src[0]
	r.src = r.src[1:]
	return c
}

// decodeRecord decodes record i, at the start of src, and returns the
// rest; unless keep is set its headers are checked, not kept. Its offset
// delta must be within [minDelta, maxDelta]. Its Timestamp is the first
// timestamp plus its delta, whatever the timestamp type.
func (b *Batch) decodeRecord(src []byte, i int, keep bool, minDelta, maxDelta int32) (Record, []byte, error) {
	r := wireReader{src: src, ok: true}
	length := r.varint()
	if !r.ok || length < 0 || int(length) > len(r.src) {
		return Record{}, nil, invalidRecord("record %d: bad record length", i)
	}
	rest := r.src[length:]
	r.src = r.src[:length]

	r.byte() // attributes: unused by Kafka
	timestampDelta := r.varlong()
	offsetDelta := r.varint()
	if r.ok && (offsetDelta < minDelta || offsetDelta > maxDelta) {
		return Record{}, nil, invalidRecord("record %d has offset delta %d", i, offsetDelta)
	}
	rec := Record{
		Offset:    b.BaseOffset + int64(offsetDelta),
		Timestamp: b.FirstTimestamp + timestampDelta,
		Key:       r.nullableBytes(),
		Value:     r.nullableBytes(),
	}
	numHeaders := r.varint()
	if !r.ok {
		return Record{}, nil, invalidRecord("record %d: truncated or invalid field", i)
	}
	if numHeaders < 0 || int(numHeaders) > len(r.src)/minHeaderSize {
		return Record{}, nil, invalidRecord("record %d: %d headers cannot fit in %d bytes", i, numHeaders, len(r.src))
	}
	if numHeaders > 0 && keep {
		rec.Headers = make([]Header, numHeaders)
	}
	for h := range int(numHeaders) {
		key := r.nullableBytes()
		if r.ok && key == nil {
			return Record{}, nil, invalidRecord("record %d: header %d has a null key", i, h)
		}
		value := r.nullableBytes()
		if keep {
			rec.Headers[h] = Header{Key: string(key), Value: value}
		}
	}
	if !r.ok {
		return Record{}, nil, invalidRecord("record %d: truncated or invalid field", i)
	}
	if len(r.src) != 0 {
		return Record{}, nil, invalidRecord("record %d: %d bytes left after its fields", i, len(r.src))
	}
	return rec, rest, nil
}

// skimRecord checks the record at the start of src, as decodeRecord does,
// on the path nearly every record takes: offset delta wantDelta (the least
// it may have), every varint but the timestamp delta one to three bytes
// long, and no headers. It returns the record's timestamp (the first
// timestamp plus its delta), whether its key is null, and the rest of src;
// ok is false for any other
// record, valid or not, which decodeRecord then reads. Checking the records
// of a batch is the gateway's main cost per record under small records, and
// most of decodeRecord's is its calls (docs/design.md §10).
func (b *Batch) skimRecord(src []byte, wantDelta int32) (timestamp int64, nullKey bool, rest []byte, ok bool) {
	length, p := shortVarint(src, 0)
	if p < 0 || length < 0 || int(length) > len(src)-p {
		return 0, false, nil, false
	}
	rec, rest := src[p:p+int(length)], src[p+int(length):]
	if len(rec) == 0 {
		return 0, false, nil, false
	}
	delta, n := binary.Varint(rec[1:]) // after the attributes
	if n <= 0 {
		return 0, false, nil, false
	}
	p = 1 + n
	offsetDelta, p := shortVarint(rec, p)
	if p < 0 || offsetDelta != wantDelta {
		return 0, false, nil, false
	}
	for f := range 2 { // key and value
		var n int32
		if n, p = shortVarint(rec, p); p < 0 || n < -1 || int(n) > len(rec)-p {
			return 0, false, nil, false
		}
		nullKey = nullKey || f == 0 && n == -1
		p += max(int(n), 0)
	}
	if headers, p := shortVarint(rec, p); p != len(rec) || headers != 0 {
		return 0, false, nil, false
	}
	return b.FirstTimestamp + delta, nullKey, rest, true
}

// shortVarint reads a zigzag varint of one to three bytes at src[p:], which
// the lengths, deltas and counts of records up to 1 MiB are (and the offset
// deltas of batches of up to a million records), and returns it and the
// position after it, or a position of -1 when there is none there.
func shortVarint(src []byte, p int) (int32, int) {
	if p < 0 || p >= len(src) {
		return 0, -1
	}
	u := uint32(src[p])
	switch {
	case u < 0x80:
		p++
	case p+1 < len(src) && src[p+1] < 0x80:
		u = u&0x7f | uint32(src[p+1])<<7
		p += 2
	case p+2 < len(src) && src[p+2] < 0x80:
		u = u&0x7f | uint32(src[p+1]&0x7f)<<7 | uint32(src[p+2])<<14
		p += 3
	default:
		return 0, -1
	}
	return int32(u>>1) ^ -int32(u&1), p
}

// scratchPool holds buffers for encoding records before compression, and
// for decompressing records that are checked, not kept.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledScratch keeps one huge batch from pinning its buffer forever.
const maxPooledScratch = 4 << 20

// putScratch returns a buffer taken from scratchPool, unless it grew past
// maxPooledScratch.
func putScratch(p *[]byte) {
	if cap(*p) <= maxPooledScratch {
		scratchPool.Put(p)
	}
}

// AppendBatch appends one v2 record batch holding recs, compressed with
// codec: the form fetch responses carry. recs must be non-empty with
// ascending offsets; BaseOffset is recs[0].Offset and FirstTimestamp is
// recs[0].Timestamp (later records may be older: Kafka allows negative
// timestamp deltas). The batch has CreateTime timestamps, no producer id,
// epoch or sequence, and a correct CRC-32C. On error dst is returned
// unchanged.
func AppendBatch(dst []byte, recs []Record, codec Codec, partitionLeaderEpoch int32) ([]byte, error) {
	if len(recs) == 0 {
		return dst, errors.New("protocol: a record batch needs at least one record")
	}
	if len(recs) > maxBatchRecords {
		return dst, fmt.Errorf("protocol: %d records exceed a batch's %d", len(recs), maxBatchRecords)
	}
	if codec < CodecNone || codec > maxKnownCodec {
		return dst, fmt.Errorf("protocol: unknown compression codec %d", int8(codec))
	}
	base, first := recs[0].Offset, recs[0].Timestamp
	maxTimestamp := first
	for i := range recs {
		if i > 0 && recs[i].Offset <= recs[i-1].Offset {
			return dst, fmt.Errorf("protocol: record offsets not ascending: %d after %d", recs[i].Offset, recs[i-1].Offset)
		}
		if d := recs[i].Offset - base; d < 0 || d > math.MaxInt32 {
			return dst, fmt.Errorf("protocol: offset %d is too far from base offset %d for one batch", recs[i].Offset, base)
		}
		maxTimestamp = max(maxTimestamp, recs[i].Timestamp)
	}
	return appendBatch(dst, &Batch{
		BaseOffset:           base,
		PartitionLeaderEpoch: partitionLeaderEpoch,
		Attributes:           int16(codec),
		LastOffsetDelta:      int32(recs[len(recs)-1].Offset - base),
		FirstTimestamp:       first,
		MaxTimestamp:         maxTimestamp,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}, recs)
}

// appendBatch appends a v2 batch with the header fields of h, but for its
// length, CRC-32C and record count, holding recs: each record with its
// offset and timestamp deltas from h's base offset and first timestamp,
// compressed with h's codec. On error dst is returned unchanged.
func appendBatch(dst []byte, h *Batch, recs []Record) ([]byte, error) {
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint64(dst, uint64(h.BaseOffset))
	dst = append(dst, 0, 0, 0, 0) // batch length, set below
	dst = be.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, batchMagicV2, 0, 0, 0, 0) // magic, CRC set below
	dst = be.AppendUint16(dst, uint16(h.Attributes))
	dst = be.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = be.AppendUint64(dst, uint64(h.FirstTimestamp))
	dst = be.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = be.AppendUint64(dst, uint64(h.ProducerID))
	dst = be.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = be.AppendUint32(dst, uint32(h.BaseSequence))
	dst = be.AppendUint32(dst, uint32(len(recs)))

	if codec := h.Codec(); codec == CodecNone {
		dst = appendRecords(dst, recs, h.BaseOffset, h.FirstTimestamp)
	} else {
		scratch := scratchPool.Get().(*[]byte)
		*scratch = appendRecords((*scratch)[:0], recs, h.BaseOffset, h.FirstTimestamp)
		var err error
		dst, err = Compress(dst, codec, *scratch)
		putScratch(scratch)
		if err != nil {
			return dst[:start], err
		}
	}
	batch := dst[start:]
	be.PutUint32(batch[8:], uint32(len(batch)-batchLengthEnd))
	be.PutUint32(batch[batchCRCPos:], crc32.Checksum(batch[batchAttrsPos:], castagnoli))
	return dst, nil
}

func appendRecords(dst []byte, recs []Record, base, first int64) []byte {
	for i := range recs {
		r := &recs[i]
		offsetDelta, timestampDelta := int32(r.Offset-base), r.Timestamp-first
		dst = binary.AppendVarint(dst, int64(recordBodySize(r, offsetDelta, timestampDelta)))
		dst = append(dst, 0) // attributes
		dst = binary.AppendVarint(dst, timestampDelta)
		dst = binary.AppendVarint(dst, int64(offsetDelta))
		dst = appendNullableBytes(dst, r.Key)
		dst = appendNullableBytes(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(len(r.Headers)))
		for _, h := range r.Headers {
			dst = binary.AppendVarint(dst, int64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = appendNullableBytes(dst, h.Value)
		}
	}
	return dst
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// RecordSizeInBatch is the exact encoded size of r inside an uncompressed v2
// batch, length prefix included, given its offset and timestamp deltas from
// the batch's base offset and first timestamp. Summed with BatchHeaderSize it
// enforces record size limits and a fetch's max bytes.
func RecordSizeInBatch(r *Record, offsetDelta int32, timestampDelta int64) int {
	n := recordBodySize(r, offsetDelta, timestampDelta)
	return varintSize(int64(n)) + n
}

func recordBodySize(r *Record, offsetDelta int32, timestampDelta int64) int {
	n := 1 + varintSize(timestampDelta) + varintSize(int64(offsetDelta)) +
		nullableBytesSize(r.Key) + nullableBytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + nullableBytesSize(h.Value)
	}
	return n
}

func nullableBytesSize(b []byte) int {
	if b == nil {
		return 1 // varint -1
	}
	return varintSize(int64(len(b))) + len(b)
}

// varintSize is the length of v as a zigzag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
