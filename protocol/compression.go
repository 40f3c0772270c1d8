package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrDecompressedTooLarge reports compressed data that expands beyond the
// caller's limit. It stops a small batch (a "zip bomb") from exhausting
// memory; it maps naturally to Kafka's MESSAGE_TOO_LARGE.
var ErrDecompressedTooLarge = errors.New("protocol: decompressed data exceeds the limit")

// DecompressBudget bounds the bytes decompression may produce for one
// request, over every batch of every partition in it, so that one small
// request listing a zip bomb for many partitions cannot claim more than
// one budget. Decompressors take their output buffers from it as they
// grow and stop at its end: data is never decompressed in full and checked
// afterwards. It is safe for concurrent use.
type DecompressBudget struct {
	limit   int64
	charged atomic.Int64
}

// NewDecompressBudget returns a budget of limit bytes; limit <= 0 allows
// no decompression at all.
func NewDecompressBudget(limit int64) *DecompressBudget {
	return &DecompressBudget{limit: max(limit, 0)}
}

// Charged is how many bytes have been decompressed with the budget,
// refused batches included: the work is done and the memory was taken
// either way. The caller counts it against its memory limits while it
// keeps the request's batches.
func (b *DecompressBudget) Charged() int64 { return b.charged.Load() }

// take charges up to n bytes and returns how many it charged.
func (b *DecompressBudget) take(n int) int {
	for {
		used := b.charged.Load()
		k := min(int64(n), b.limit-used)
		if k <= 0 {
			return 0
		}
		if b.charged.CompareAndSwap(used, used+k) {
			return int(k)
		}
	}
}

// reserve charges exactly n bytes, or nothing when fewer are left.
func (b *DecompressBudget) reserve(n int) bool {
	for {
		used := b.charged.Load()
		if int64(n) > b.limit-used {
			return false
		}
		if b.charged.CompareAndSwap(used, used+int64(n)) {
			return true
		}
	}
}

// String names the codec as Kafka's compression.type does.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// zstdMaxWindow is the largest zstd window a decoder accepts. The decoder
// allocates the declared window up front, so this bounds the memory one
// hostile frame can claim. 8 MiB is the window of every level up to 19 (Kafka
// producers default to level 3, a 2 MiB window); frames of the "ultra"
// levels 20-22 are refused.
const zstdMaxWindow = 8 << 20

// Compress appends src compressed with codec to dst. Snappy is written as a
// raw snappy block, which librdkafka, franz-go, sarama and the Java client
// (whose xerial stream falls back to raw blocks) all read; lz4 as an lz4
// frame; zstd as one zstd frame. CodecNone appends src as it is.
func Compress(dst []byte, codec Codec, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return compressGzip(dst, src)
	case CodecSnappy:
		n := s2.MaxEncodedLen(len(src))
		if n < 0 {
			return dst, fmt.Errorf("protocol: %d bytes are too many for one snappy block", len(src))
		}
		start := len(dst)
		dst = growLen(dst, n)
		block := s2.EncodeSnappy(dst[start:], src)
		return dst[:start+len(block)], nil
	case CodecLZ4:
		return compressLZ4(dst, src)
	case CodecZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return dst, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("protocol: unknown compression codec %d", int8(codec))
}

// Decompress returns src decompressed with codec, failing with an error
// wrapping ErrDecompressedTooLarge when the result would exceed max bytes.
// Snappy may be a raw block or xerial framed (the Java client's format).
// Concatenated gzip members and zstd frames are read in full. CodecNone
// returns src itself.
func Decompress(codec Codec, src []byte, max int) ([]byte, error) {
	if max < 0 {
		return nil, fmt.Errorf("protocol: negative decompression limit %d", max)
	}
	if codec == CodecNone {
		if len(src) > max {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrDecompressedTooLarge, len(src), max)
		}
		return src, nil
	}
	return decompress(codec, src, NewDecompressBudget(int64(max)), nil)
}

// decompress decompresses src with a codec other than CodecNone, charging
// its output to budget. Snappy writes into reuse when it has the capacity
// (the other codecs' stream readers size their output as they go).
func decompress(codec Codec, src []byte, budget *DecompressBudget, reuse []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecGzip:
		out, err = decompressGzip(src, budget)
	case CodecSnappy:
		out, err = decompressSnappy(src, budget, reuse)
	case CodecLZ4:
		out, err = decompressLZ4(src, budget)
	case CodecZstd:
		out, err = decompressZstd(src, budget)
	default:
		return nil, fmt.Errorf("protocol: unknown compression codec %d", int8(codec))
	}
	if err != nil {
		return nil, fmt.Errorf("protocol: decompressing %v: %w", codec, err)
	}
	return out, nil
}

// growLen extends dst by n bytes, reallocating only when its capacity is
// short.
func growLen(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst[:len(dst)+n]
	}
	grown := make([]byte, len(dst)+n, 2*len(dst)+n)
	copy(grown, dst)
	return grown
}

// appendWriter is an io.Writer appending to a slice, so that stream encoders
// write straight into the caller's buffer.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// readCapped reads r to its end into a buffer whose every byte is charged
// to budget before it is allocated, starting from a size guessed from the
// compressed length and doubling. Once the budget is spent it reads one
// byte more only to tell a stream that ends there from one that is too
// large.
func readCapped(r io.Reader, compressedLen int, budget *DecompressBudget) ([]byte, error) {
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			grow := max(len(buf), 512, min(4*compressedLen, maxFirstGuess))
			n := budget.take(grow)
			if n == 0 {
				var probe [1]byte
				switch k, err := io.ReadAtLeast(r, probe[:], 1); {
				case k > 0:
					return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, len(buf))
				case err == io.EOF:
					return buf, nil
				default:
					return nil, err
				}
			}
			grown := make([]byte, len(buf), cap(buf)+n)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// maxFirstGuess caps the first buffer readCapped charges, whatever the
// compressed length, so a large batch grows into its budget rather than
// claiming it up front.
const maxFirstGuess = 1 << 20

// streamWriter is what gzip.Writer and lz4.Writer have in common.
type streamWriter interface {
	io.Writer
	io.Closer
	Reset(io.Writer)
}

// streamEncoder is a pooled compressor that appends to a caller's slice.
type streamEncoder struct {
	out appendWriter
	w   streamWriter
}

// compressStream compresses src through a pooled encoder, appending to dst;
// newWriter makes the writer for a new encoder.
func compressStream(pool *sync.Pool, newWriter func(io.Writer) (streamWriter, error), dst, src []byte) ([]byte, error) {
	e, _ := pool.Get().(*streamEncoder)
	if e == nil {
		e = &streamEncoder{}
		w, err := newWriter(&e.out)
		if err != nil {
			return dst, err
		}
		e.w = w
	}
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	out := e.out.b
	e.out.b = nil
	pool.Put(e)
	if err != nil {
		return dst, err
	}
	return out, nil
}

var gzipEncoders sync.Pool

func compressGzip(dst, src []byte) ([]byte, error) {
	return compressStream(&gzipEncoders, func(w io.Writer) (streamWriter, error) {
		return gzip.NewWriterLevel(w, gzip.DefaultCompression)
	}, dst, src)
}

// decompressGzip reads src with a gzip reader of its own. Pooled readers
// are not used: a reset klauspost flate decoder keeps the Huffman tables of
// the last stream it read, and a stream that declares an empty distance
// table then decodes with the stale one, so the same corrupt batch would
// fail with a different error, or be read past its flaw, depending on what
// the reader decoded before (docs/design.md, section 4, "Compression").
// A fresh reader costs about 39 KiB and 12 us.
func decompressGzip(src []byte, budget *DecompressBudget) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	return readCapped(r, len(src), budget)
}

// xerialMagic starts the framing of the Java client's snappy stream. A
// 16-byte header (magic, version, minimum compatible version) is followed by
// blocks, each a 4-byte big-endian length and a raw snappy block.
var xerialMagic = []byte("\x82SNAPPY\x00")

const xerialHeaderLen = 16

// decompressSnappy decodes a raw block or a xerial stream, into reuse when
// it has the capacity. The lengths the blocks announce are summed and
// charged to budget before any output is written, once and exactly, so
// the charge is the output's length (and the capacity of what it
// allocates).
func decompressSnappy(src []byte, budget *DecompressBudget, reuse []byte) ([]byte, error) {
	var blocks [][]byte
	if len(src) < xerialHeaderLen || !bytes.HasPrefix(src, xerialMagic) {
		blocks = [][]byte{src}
	} else {
		for rest := src[xerialHeaderLen:]; len(rest) > 0; {
			if len(rest) < 4 {
				return nil, errors.New("truncated xerial block length")
			}
			n := binary.BigEndian.Uint32(rest)
			rest = rest[4:]
			if uint64(n) > uint64(len(rest)) {
				return nil, fmt.Errorf("xerial block of %d bytes exceeds the %d bytes left", n, len(rest))
			}
			blocks = append(blocks, rest[:n])
			rest = rest[n:]
		}
	}
	total := 0
	for _, block := range blocks {
		n, err := s2.DecodedLen(block)
		if err != nil {
			return nil, err
		}
		if n > math.MaxInt-total {
			return nil, fmt.Errorf("%w: blocks announce more than %d bytes", ErrDecompressedTooLarge, math.MaxInt)
		}
		total += n
	}
	if !budget.reserve(total) {
		return nil, fmt.Errorf("%w: the blocks announce %d bytes", ErrDecompressedTooLarge, total)
	}
	out := reuse[:0]
	if cap(out) < total {
		out = make([]byte, 0, total)
	}
	for _, block := range blocks {
		n, _ := s2.DecodedLen(block)
		start := len(out)
		out = out[:start+n]
		if _, err := s2.Decode(out[start:], block); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var lz4Encoders sync.Pool

func compressLZ4(dst, src []byte) ([]byte, error) {
	return compressStream(&lz4Encoders, func(w io.Writer) (streamWriter, error) {
		lw := lz4.NewWriter(w)
		// 64 KiB blocks, as the Java client writes, keep the buffers small.
		if err := lw.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			return nil, err
		}
		return lw, nil
	}, dst, src)
}

type lz4Decoder struct {
	src bytes.Reader
	r   *lz4.Reader
}

var lz4Decoders = sync.Pool{New: func() any { return &lz4Decoder{r: lz4.NewReader(nil)} }}

func decompressLZ4(src []byte, budget *DecompressBudget) ([]byte, error) {
	d := lz4Decoders.Get().(*lz4Decoder)
	defer func() {
		d.r.Reset(nil)
		d.src.Reset(nil)
		lz4Decoders.Put(d)
	}()
	d.src.Reset(src)
	d.r.Reset(&d.src)
	return readCapped(d.r, len(src), budget)
}

// zstdEncoder is shared: EncodeAll is safe for concurrent use, and an
// encoder is expensive to create. Empty input still yields a frame, which
// every consumer can decode.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithZeroFrames(true))
})

type zstdDecoder struct {
	src bytes.Reader
	d   *zstd.Decoder
}

// zstdDecoders holds stream decoders of concurrency 1: they decode in the
// calling goroutine (none is left running when the pool drops one), and a
// stream decoder lets readCapped stop at the caller's limit.
var zstdDecoders sync.Pool

func decompressZstd(src []byte, budget *DecompressBudget) ([]byte, error) {
	d, _ := zstdDecoders.Get().(*zstdDecoder)
	if d == nil {
		dec, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(zstdMaxWindow),
			zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, err
		}
		d = &zstdDecoder{d: dec}
	}
	defer func() {
		_ = d.d.Reset(nil)
		d.src.Reset(nil)
		zstdDecoders.Put(d)
	}()
	d.src.Reset(src)
	if err := d.d.Reset(&d.src); err != nil {
		return nil, err
	}
	return readCapped(d.d, len(src), budget)
}
