package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrDecompressedTooLarge reports compressed data that expands beyond the
// caller's limit. It stops a small batch (a "zip bomb") from exhausting
// memory; it maps naturally to Kafka's MESSAGE_TOO_LARGE.
var ErrDecompressedTooLarge = errors.New("protocol: decompressed data exceeds the limit")

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
	max = min(max, math.MaxInt-1) // readCapped needs max+1
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecNone:
		if len(src) > max {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrDecompressedTooLarge, len(src), max)
		}
		return src, nil
	case CodecGzip:
		out, err = decompressGzip(src, max)
	case CodecSnappy:
		out, err = decompressSnappy(src, max)
	case CodecLZ4:
		out, err = decompressLZ4(src, max)
	case CodecZstd:
		out, err = decompressZstd(src, max)
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

// readCapped reads r to its end into a buffer that never grows past max+1
// bytes, starting from a size guessed from the compressed length.
func readCapped(r io.Reader, compressedLen, max int) ([]byte, error) {
	guess := 4 * compressedLen
	if guess < 512 || guess > max {
		guess = min(512, max+1)
	}
	buf := make([]byte, 0, guess)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > max {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, max)
			}
			next := min(2*cap(buf), max+1)
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if len(buf) > max {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, max)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

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

type gzipDecoder struct {
	src bytes.Reader
	r   gzip.Reader
}

var gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}

func decompressGzip(src []byte, max int) ([]byte, error) {
	d := gzipDecoders.Get().(*gzipDecoder)
	defer func() {
		d.src.Reset(nil)
		gzipDecoders.Put(d)
	}()
	d.src.Reset(src)
	if err := d.r.Reset(&d.src); err != nil {
		return nil, err
	}
	return readCapped(&d.r, len(src), max)
}

// xerialMagic starts the framing of the Java client's snappy stream. A
// 16-byte header (magic, version, minimum compatible version) is followed by
// blocks, each a 4-byte big-endian length and a raw snappy block.
var xerialMagic = []byte("\x82SNAPPY\x00")

const xerialHeaderLen = 16

func decompressSnappy(src []byte, max int) ([]byte, error) {
	if len(src) < xerialHeaderLen || !bytes.HasPrefix(src, xerialMagic) {
		return appendSnappyBlock(nil, src, max)
	}
	var out []byte
	rest := src[xerialHeaderLen:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return nil, errors.New("truncated xerial block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("xerial block of %d bytes exceeds the %d bytes left", n, len(rest))
		}
		var err error
		if out, err = appendSnappyBlock(out, rest[:n], max); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// appendSnappyBlock decodes one raw snappy block onto dst, checking the
// length the block announces against max before allocating.
func appendSnappyBlock(dst, block []byte, max int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > max-len(dst) {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, max)
	}
	start := len(dst)
	dst = growLen(dst, n)
	if _, err := s2.Decode(dst[start:], block); err != nil {
		return nil, err
	}
	return dst, nil
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

func decompressLZ4(src []byte, max int) ([]byte, error) {
	d := lz4Decoders.Get().(*lz4Decoder)
	defer func() {
		d.r.Reset(nil)
		d.src.Reset(nil)
		lz4Decoders.Put(d)
	}()
	d.src.Reset(src)
	d.r.Reset(&d.src)
	return readCapped(d.r, len(src), max)
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

func decompressZstd(src []byte, max int) ([]byte, error) {
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
	return readCapped(d.d, len(src), max)
}
