package protocol

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

// ReadBody returns the whole body across many short reads, reporting
// progress, and allocates by what arrived, not by what the prefix claimed.
func TestReadBodyGrowsAsBytesArrive(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789"), 10_000)
	var seen []int
	got, err := ReadBody(iotest.OneByteReader(bytes.NewReader(want)), len(want), func(n int) error {
		seen = append(seen, n)
		return nil
	})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, err %v; want %d", len(got), err, len(want))
	}
	if len(seen) != len(want)-1 || seen[0] != 1 {
		t.Fatalf("progress called %d times starting at %v, want once per byte but the last", len(seen), seen[:1])
	}

	// A 100 MiB claim with 10 bytes behind it allocates next to nothing.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadBody(bytes.NewReader(want[:10]), 100<<20, func(int) error { return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short body: %v, want unexpected EOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("a 100 MiB claim with 10 bytes sent allocated %d bytes", grew)
	}
}

// A progress error stops the read.
func TestReadBodyProgressError(t *testing.T) {
	stop := errors.New("stop")
	_, err := ReadBody(iotest.HalfReader(bytes.NewReader(make([]byte, 100))), 100, func(int) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the progress error", err)
	}
}
