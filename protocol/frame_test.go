package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func appendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

func TestNextFramePartial(t *testing.T) {
	whole := appendFrame(nil, []byte("hello"))
	for i := range len(whole) {
		frame, n, err := NextFrame(whole[:i], DefaultMaxFrameSize)
		if frame != nil || n != 0 || err != nil {
			t.Fatalf("%d of %d bytes: got frame %q, n %d, err %v; want a request for more", i, len(whole), frame, n, err)
		}
	}
	frame, n, err := NextFrame(whole, DefaultMaxFrameSize)
	if err != nil || n != len(whole) || string(frame) != "hello" {
		t.Fatalf("whole frame: got %q, %d, %v", frame, n, err)
	}
}

func TestNextFrameMany(t *testing.T) {
	bodies := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte("b"), 300), []byte("last")}
	var buf []byte
	for _, b := range bodies {
		buf = appendFrame(buf, b)
	}
	buf = append(buf, 0, 0) // the start of a next frame's size
	var got [][]byte
	for {
		frame, n, err := NextFrame(buf, DefaultMaxFrameSize)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		got = append(got, frame)
		buf = buf[n:]
	}
	if len(got) != len(bodies) {
		t.Fatalf("got %d frames, want %d", len(got), len(bodies))
	}
	for i := range bodies {
		if !bytes.Equal(got[i], bodies[i]) {
			t.Errorf("frame %d: got %q, want %q", i, got[i], bodies[i])
		}
	}
	if len(buf) != 2 {
		t.Errorf("left %d bytes, want the 2 of the partial size", len(buf))
	}
}

func TestNextFrameDoesNotLetAppendClobberTheNext(t *testing.T) {
	buf := appendFrame(appendFrame(nil, []byte("one")), []byte("two"))
	frame, n, err := NextFrame(buf, DefaultMaxFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(frame, "XXXXXXX"...)
	next, _, err := NextFrame(buf[n:], DefaultMaxFrameSize)
	if err != nil || string(next) != "two" {
		t.Fatalf("next frame %q, %v after appending to the first", next, err)
	}
}

func TestNextFrameBadSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int32
	}{
		{"oversized", 1001},
		{"negative", -1},
		{"most negative", -1 << 31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The size alone decides: the error must come before the body.
			buf := binary.BigEndian.AppendUint32(nil, uint32(tc.size))
			_, n, err := NextFrame(buf, 1000)
			var fse *FrameSizeError
			if !errors.As(err, &fse) {
				t.Fatalf("got n %d, err %v; want a *FrameSizeError", n, err)
			}
			if fse.Size != tc.size || fse.Max != 1000 {
				t.Errorf("got %+v", fse)
			}
		})
	}
	if _, n, err := NextFrame(appendFrame(nil, make([]byte, 1000)), 1000); err != nil || n != 1004 {
		t.Errorf("a frame of exactly the max size: n %d, err %v", n, err)
	}
}
