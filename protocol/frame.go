package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultMaxFrameSize is Kafka's default socket.request.max.bytes: the largest
// request a broker accepts before it closes the connection.
const DefaultMaxFrameSize = 100 << 20

// FrameSizeError reports a frame whose announced size is negative or above
// the limit. The stream cannot be resynchronised after it, so the caller must
// close the connection.
type FrameSizeError struct {
	Size int32 // the announced size
	Max  int32 // the limit it was checked against
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("protocol: kafka frame size %d outside [0, %d]", e.Size, e.Max)
}

// NextFrame looks at the start of buf, where a Kafka frame (a 4-byte
// big-endian size, then that many bytes) begins. It returns the frame body
// without the size prefix, aliasing buf and capped so that appending to it
// cannot overwrite the next frame, and the number of bytes consumed. When buf
// does not yet hold a whole frame it returns n == 0: read more and call again.
// A size that is negative or above maxSize yields a *FrameSizeError.
func NextFrame(buf []byte, maxSize int32) (frame []byte, n int, err error) {
	end, err := FrameLen(buf, maxSize)
	if err != nil || end == 0 || len(buf) < end {
		return nil, 0, err
	}
	return buf[4:end:end], end, nil
}

// FrameLen reads the size prefix at the start of buf and returns the length
// of the whole frame, prefix included, or 0 when buf holds fewer than 4
// bytes. A transport that buffers partial frames uses it to wait for the
// whole frame without looking at the bytes received so far.
func FrameLen(buf []byte, maxSize int32) (int, error) {
	if len(buf) < 4 {
		return 0, nil
	}
	size := int32(binary.BigEndian.Uint32(buf))
	if size < 0 || size > maxSize {
		return 0, &FrameSizeError{Size: size, Max: maxSize}
	}
	return 4 + int(size), nil
}

// bodyStartCap is the buffer ReadBody starts with: a size prefix costs the
// sender four bytes, so the reader allocates only a little before the body's
// bytes actually arrive.
const bodyStartCap = 4 << 10

// ReadBody reads a frame body of size bytes from r incrementally: its buffer
// grows (doubling) as bytes arrive instead of being allocated at the size the
// prefix claims, so a client that announces 100 MiB and sends nothing costs
// next to nothing. After each read that leaves the body incomplete it calls
// progress with the bytes received so far (where the caller accounts for them
// and may wait before more are read); a progress error ends the read with it.
func ReadBody(r io.Reader, size int, progress func(received int) error) ([]byte, error) {
	buf := make([]byte, 0, min(size, bodyStartCap))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(size, 2*cap(buf))-len(buf))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if len(buf) == size {
			break
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if n > 0 {
			if err := progress(len(buf)); err != nil {
				return nil, err
			}
		}
	}
	return buf, nil
}
