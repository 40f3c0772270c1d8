package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"

	"github.com/disgw/disgw/disclient"
)

// A Fetch answer of kafka-format partitions is mostly cached record
// batches, each its own slice. Copying them into one slice per partition
// and then into the encoded frame cost two copies of every byte served,
// the largest share of a consumer's CPU in the gateway after the DIS read
// (docs/design.md §10). Instead the response is encoded with a marker in
// place of each partition's record batches, and the frame is written as
// its pieces with the batches between them (writev): the batches are
// copied once, by the kernel, into the socket. The records of a batch read
// from the embedded DIS are not copied by the gateway at all: they go from
// the record log's file to the socket (sendfile) where the transport can.

// FramePart is one piece of a frame on its way out: bytes, or a range of a
// file of the embedded DIS's record log (disclient.SpanGetter).
type FramePart struct {
	b    []byte
	file disclient.FileSpan
}

func (p *FramePart) size() int { return len(p.b) + p.file.Len }

// appendTo appends the part's bytes to b, reading a file range.
func (p *FramePart) appendTo(b []byte) ([]byte, error) {
	if p.file.Len > 0 {
		return p.file.AppendTo(b)
	}
	return append(b, p.b...), nil
}

// AppendBatch appends the parts of a record batch to parts: its bytes
// data, or its range file of a record log file when there is one. Ranges
// that continue one another, the batches one call wrote to a partition
// (the embedded DIS keeps them back to back), become one part: one
// sendfile call between them, where a call each cost the gateway a third
// of its CPU under a consumer of 16 KiB batches (docs/design.md §10).
func AppendBatch(parts []FramePart, data []byte, file disclient.FileSpan) []FramePart {
	if file.Len == 0 {
		return append(parts, FramePart{b: data})
	}
	if n := len(parts); n > 0 {
		if last := &parts[n-1].file; last.Len > 0 && last.File == file.File && last.Off+int64(last.Len) == file.Off {
			last.Len += file.Len
			return parts
		}
	}
	return append(parts, FramePart{file: file})
}

// fetchSplice is one partition's record batches, to go where marker is
// in the encoded response.
type fetchSplice struct {
	marker  [spliceMarkerLen]byte
	batches []FramePart
	n       int     // their bytes
	field   *[]byte // the partition's RecordBatches, for unsplice
}

const spliceMarkerLen = 16

// maxSpliceParts bounds the pieces of one frame; a response that would
// need more copies the batches of its other partitions instead. The gnet
// transport writes a frame of more pieces than one writev takes in several
// (writevParts). Compressed batches of compressible data are small: a
// fetch of 1 MiB of a partition then holds hundreds of them, and under a
// bound of one writev's pieces they were copied twice (docs/design.md §10).
const maxSpliceParts = 1 << 14

var (
	// spliceSecret makes markers unguessable, so no topic name, key or
	// message a client chose can be taken for one.
	spliceSecret [8]byte
	spliceCount  atomic.Uint64
)

func init() {
	_, _ = rand.Read(spliceSecret[:])
}

// newFetchSplice makes the splice of batches (n bytes) and puts its marker
// in field, a partition's RecordBatches.
func newFetchSplice(field *[]byte, batches []FramePart, n int) fetchSplice {
	sp := fetchSplice{batches: batches, n: n, field: field}
	copy(sp.marker[:], spliceSecret[:])
	binary.BigEndian.PutUint64(sp.marker[8:], spliceCount.Add(1))
	*field = sp.marker[:]
	return sp
}

// unsplice puts the batches of every splice back in their partitions,
// copied together, for a frame that is encoded whole after all.
func unsplice(splices []fetchSplice) error {
	for _, sp := range splices {
		b := make([]byte, 0, sp.n)
		for i := range sp.batches {
			var err error
			if b, err = sp.batches[i].appendTo(b); err != nil {
				return err
			}
		}
		*sp.field = b
	}
	return nil
}

// outFrame is one response on its way to the socket: frame, or when parts
// is set, what is written instead, in order: pieces of frame with record
// batches spliced between them. recycled says frame is a responseBuffers
// buffer, given back by release once the transport is done with it.
type outFrame struct {
	frame    []byte
	parts    []FramePart
	recycled bool
}

// size is the bytes written.
func (o *outFrame) size() int {
	if o.parts == nil {
		return len(o.frame)
	}
	n := 0
	for i := range o.parts {
		n += o.parts[i].size()
	}
	return n
}

// fileBytes is the bytes of the frame's file ranges.
func (o *outFrame) fileBytes() int {
	n := 0
	for i := range o.parts {
		n += o.parts[i].file.Len
	}
	return n
}

// appendTo appends what is written to b, reading the file ranges.
func (o *outFrame) appendTo(b []byte) ([]byte, error) {
	if o.parts == nil {
		return append(b, o.frame...), nil
	}
	for i := range o.parts {
		var err error
		if b, err = o.parts[i].appendTo(b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// release gives the frame's buffer back; nothing may read o afterwards.
func (o *outFrame) release() {
	if o.recycled {
		responseBuffers.put(o.frame)
	}
}

// splice cuts the encoded frame at each splice's marker, in order, and
// puts the batches there with their real length before them, fixing the
// frame's size. flexible is the compact encoding of Fetch v12+ (length + 1
// as a uvarint) rather than an int32. It reports false, leaving o as it
// was, when a marker is not where it should be.
func (o *outFrame) splice(splices []fetchSplice, flexible bool) bool {
	var old []byte
	if flexible {
		old = binary.AppendUvarint(nil, spliceMarkerLen+1)
	} else {
		old = binary.BigEndian.AppendUint32(nil, spliceMarkerLen)
	}
	frame := o.frame
	parts := make([]FramePart, 0, 2*len(splices)+1)
	prefixes := make([]byte, 0, len(splices)*binary.MaxVarintLen64)
	size := len(frame) - 4
	rest := 0
	for _, sp := range splices {
		i := bytes.Index(frame[rest:], sp.marker[:])
		if i < 0 || i < len(old) || !bytes.Equal(frame[rest+i-len(old):rest+i], old) {
			return false
		}
		at := rest + i
		start := len(prefixes)
		if flexible {
			prefixes = binary.AppendUvarint(prefixes, uint64(sp.n)+1)
		} else {
			prefixes = binary.BigEndian.AppendUint32(prefixes, uint32(sp.n))
		}
		parts = append(parts, FramePart{b: frame[rest : at-len(old)]}, FramePart{b: prefixes[start:len(prefixes):len(prefixes)]})
		parts = append(parts, sp.batches...)
		size += len(prefixes) - start - len(old) + sp.n - spliceMarkerLen
		rest = at + spliceMarkerLen
	}
	parts = append(parts, FramePart{b: frame[rest:]})
	binary.BigEndian.PutUint32(frame, uint32(size))
	o.parts = parts
	return true
}
