package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

func TestCompressRoundTrip(t *testing.T) {
	inputs := [][]byte{
		{},
		[]byte("x"),
		[]byte(strings.Repeat("kafka on dis ", 10000)),
		bytes.Repeat([]byte{0, 1, 2, 3, 250}, 70000), // more than one lz4 block
	}
	for _, codec := range allCodecs {
		for _, in := range inputs {
			prefix := []byte("prefix")
			out, err := Compress(bytes.Clone(prefix), codec, in)
			if err != nil {
				t.Fatalf("%v: %v", codec, err)
			}
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("%v: dst prefix overwritten", codec)
			}
			compressed := out[len(prefix):]
			if !bytes.Equal(referenceDecompress(t, codec, compressed), in) {
				t.Errorf("%v, %d bytes: reference decoder disagrees", codec, len(in))
			}
			got, err := Decompress(codec, compressed, len(in))
			if err != nil {
				t.Fatalf("%v, %d bytes: %v", codec, len(in), err)
			}
			if !bytes.Equal(got, in) {
				t.Errorf("%v, %d bytes: round trip differs", codec, len(in))
			}
		}
	}
}

func TestDecompressOtherClients(t *testing.T) {
	in := []byte(strings.Repeat("records from another client ", 400))
	for _, codec := range allCodecs {
		got, err := Decompress(codec, referenceCompress(t, codec, in), len(in))
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if !bytes.Equal(got, in) {
			t.Errorf("%v: differs", codec)
		}
	}
}

func TestDecompressSnappyFramings(t *testing.T) {
	in := []byte(strings.Repeat("xerial ", 3000))
	for name, src := range map[string][]byte{
		"raw block":             s2.EncodeSnappy(nil, in),
		"xerial, one block":     xerialFrame(in, len(in)),
		"xerial, many blocks":   xerialFrame(in, 1000),
		"xerial, 32 KiB blocks": xerialFrame(in, 32<<10),
	} {
		got, err := Decompress(CodecSnappy, src, len(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, in) {
			t.Errorf("%s: differs", name)
		}
	}
	if got, err := Decompress(CodecSnappy, xerialFrame(nil, 1), 10); err != nil || len(got) != 0 {
		t.Errorf("xerial header alone: %q, %v", got, err)
	}

	good := xerialFrame(in, 1000)
	for name, src := range map[string][]byte{
		"block length past the end": good[:len(good)-1],
		"partial block length":      append(bytes.Clone(good), 0, 0),
		"garbage block":             append(xerialFrame(nil, 1), 0, 0, 0, 2, 0xff, 0xff),
	} {
		if _, err := Decompress(CodecSnappy, src, len(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDecompressLimit(t *testing.T) {
	in := make([]byte, 100_000)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			compressed, err := Compress(nil, codec, in)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decompress(codec, compressed, len(in)); err != nil {
				t.Errorf("at exactly the limit: %v", err)
			}
			if _, err := Decompress(codec, compressed, len(in)-1); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Errorf("one byte over: got %v, want ErrDecompressedTooLarge", err)
			}
			if _, err := Decompress(codec, compressed, 0); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Errorf("limit 0: got %v, want ErrDecompressedTooLarge", err)
			}
		})
	}
	xerial := xerialFrame(in, 30_000)
	if _, err := Decompress(CodecSnappy, xerial, len(in)-1); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Errorf("xerial one byte over: got %v", err)
	}
	if _, err := Decompress(CodecGzip, nil, -1); err == nil {
		t.Error("negative limit accepted")
	}
}

func TestDecompressGarbage(t *testing.T) {
	garbage := []byte("this is not compressed data at all, in any codec!")
	for _, codec := range allCodecs[1:] {
		if _, err := Decompress(codec, garbage, 1<<20); err == nil {
			t.Errorf("%v: no error", codec)
		}
	}
}

func TestUnknownCodec(t *testing.T) {
	if _, err := Compress(nil, Codec(5), []byte("x")); err == nil {
		t.Error("Compress: no error")
	}
	if _, err := Decompress(Codec(-1), []byte("x"), 10); err == nil {
		t.Error("Decompress: no error")
	}
	if Codec(7).String() != "codec(7)" || CodecZstd.String() != "zstd" {
		t.Errorf("names %q %q", Codec(7), CodecZstd)
	}
}

func TestZstdRefusesHugeWindows(t *testing.T) {
	// A frame header declaring a 1 GiB window, then a single empty raw block.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa0, 0x01, 0x00, 0x00}
	if _, err := Decompress(CodecZstd, frame, 1<<20); !errors.Is(err, zstd.ErrWindowSizeExceeded) {
		t.Errorf("a 1 GiB window: got %v, want zstd.ErrWindowSizeExceeded", err)
	}
	frame[5] = 0x70 // 16 MiB
	if _, err := Decompress(CodecZstd, frame, 1<<20); !errors.Is(err, zstd.ErrWindowSizeExceeded) {
		t.Errorf("a 16 MiB window: got %v, want zstd.ErrWindowSizeExceeded", err)
	}
	frame[5] = 0x68 // 8 MiB, the largest accepted
	if got, err := Decompress(CodecZstd, frame, 1<<20); err != nil || len(got) != 0 {
		t.Errorf("an 8 MiB window: %q, %v", got, err)
	}
}
