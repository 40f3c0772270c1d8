package protocol

import (
	"encoding/binary"
	"fmt"
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
