package recordlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/recordlog/logfs"
)

// Reader reads frames through a window of the log, so that the records
// of a GetRecords answer that lie one after the other in the log cost one
// read between them rather than one each. It is one reader's, not safe for
// concurrent use.
type Reader struct {
	// Log is the log read; Buf the window's memory, which a caller may
	// hand from one reader to the next.
	Log *Log
	Buf []byte
	seg uint64
	off int64 // of Buf[0] in segment seg

	// Fresh makes Read hand out slices of kept, frames read into memory
	// of their own instead of the window: they stay valid after later
	// reads and are the caller's to keep. kept starts at keptOff in
	// segment keptSeg.
	Fresh   bool
	kept    []byte
	keptSeg uint64
	keptOff int64

	// SpanMin and Head, with Fresh: a frame whose record has more than
	// spanMin bytes of data is read only up to its first head bytes of
	// data, and the rest of the data handed out as a span of its segment
	// (readSpan). heads is the piece such reads go into; advisedSeg and
	// advisedEnd how far the kernel was told a span reader is coming.
	SpanMin, Head int
	heads         []byte
	advisedSeg    uint64
	advisedEnd    int64
}

// spanKeyRoom is how long a key a span read reads past; a frame with a
// longer one is read whole. HeadsPiece is the memory span reads share,
// and the piece a caller copies references' heads into.
const (
	spanKeyRoom = 64
	HeadsPiece  = 4 << 10
)

// freshPiece bounds how many bytes of frames a fresh reader reads into one
// piece of memory: small records share a piece, so that they cost one
// allocation between them, and a record kept alone keeps at most this much
// memory alive besides its own; a larger frame gets a piece of its own.
const freshPiece = 64 << 10

// Record is a record read from the log. Its Key and Data alias the
// reader's memory; with a span read, Data holds the first Head bytes of
// the record's data only and Rest the remainder, left in its file.
type Record struct {
	TS        int64
	Key, Data []byte
	Rest      disclient.FileSpan
}

// corrupt is the error of record seq, whose checksum, frame or place in
// the log does not match its reference ref: its bytes are damaged, and
// recorded so (recovery.go).
func (l *Log) corrupt(seq int64, ref Ref) error {
	d := Damage{Seg: ref.Seg, Path: l.SegmentPath(ref.Seg), Off: ref.Off, End: ref.Off + int64(ref.N)}
	l.addDamage(d)
	return &CorruptError{Seq: seq, Damage: d}
}

// Read returns the record at refs[0]: a record frame checked to be record
// seq of partition part of the stream with key skey and against its
// checksum, a run member against its data's checksum, unless it is read
// as a span (spanMin: then only a record frame's length and place are
// checked). refs are the records the caller will read
// next, in order: a window refilled here covers those that lie one after
// the other in the log. Unless fresh, the record is valid until the next
// read. A record in damage known is not read: it gets a CorruptError.
func (r *Reader) Read(refs []Ref, skey uint64, part int32, seq int64) (Record, error) {
	ref := refs[0]
	end := ref.Off + int64(ref.N)
	if d, bad := r.Log.damaged(ref.Seg, ref.Off, end); bad {
		return Record{}, &CorruptError{Seq: seq, Damage: d}
	}
	inKept := ref.Seg == r.keptSeg && ref.Off >= r.keptOff && end <= r.keptOff+int64(len(r.kept))
	if r.Fresh && !inKept && r.spans(ref) {
		rec, spanned, err := r.readSpan(refs, skey, part, seq)
		if err != nil || spanned {
			return rec, err
		}
	}
	w, base := r.Buf, r.off
	switch {
	case r.Fresh:
		if !inKept {
			if err := r.readPiece(refs); err != nil {
				return Record{}, err
			}
		}
		w, base = r.kept, r.keptOff
	case ref.Seg != r.seg || ref.Off < r.off || end > r.off+int64(len(r.Buf)):
		if err := r.fill(ref, contiguous(refs)); err != nil {
			return Record{}, err
		}
		w, base = r.Buf, r.off
	}
	b := w[ref.Off-base : end-base]
	if ref.Member {
		if crc32.Checksum(b, castagnoli) != ref.CRC {
			return Record{}, r.Log.corrupt(seq, ref)
		}
		return Record{TS: ref.TS, Data: b}, nil
	}
	fskey, fpart, fseq, value, ok := checkFrame(b)
	var rec Record
	if ok {
		rec.TS, rec.Key, rec.Data, ok = decodeRecordValue(value)
	}
	if !ok || fskey != skey || fpart != part || fseq != seq {
		return Record{}, r.Log.corrupt(seq, ref)
	}
	return rec, nil
}

// spans reports whether the record of ref may have more than spanMin
// bytes of data (its key counted), to be read with readSpan.
func (r *Reader) spans(ref Ref) bool {
	return r.SpanMin > 0 && ref.DataLen() > r.SpanMin
}

// readSpan reads the record at refs[0] up to the first head bytes of its
// data and hands out the rest as a span of the segment's file, which the
// caller sends from the file rather than reading it. It reports false,
// having read nothing, for a record with a key longer than spanKeyRoom or
// no more data than head; read then reads it whole. The kernel is told to
// read ahead what the run of records at refs[0] holds, so that the spans
// are in the page cache when they are sent.
func (r *Reader) readSpan(refs []Ref, skey uint64, part int32, seq int64) (rec Record, ok bool, err error) {
	ref := refs[0]
	if ref.Member && int(ref.N) <= r.Head {
		return Record{}, false, nil
	}
	r.Log.filesMu.RLock()
	defer r.Log.filesMu.RUnlock()
	lf := r.Log.files[ref.Seg]
	if lf == nil {
		return Record{}, false, ErrSegmentGone
	}
	f := logfs.OSFile(lf)
	if f == nil {
		// Only an operating system's file is sent from.
		return Record{}, false, nil
	}
	if ref.Seg != r.advisedSeg || ref.Off >= r.advisedEnd {
		r.advisedSeg, r.advisedEnd = ref.Seg, ref.Off+contiguous(refs)
		_ = logfs.WillNeed(f, ref.Off, r.advisedEnd-ref.Off)
	}
	if ref.Member {
		head := ref.Head
		if len(head) < r.Head {
			// Not kept in the reference: read from the log.
			if head, err = r.readHead(f, ref, r.Head); err != nil {
				return Record{}, false, err
			}
			r.heads = r.heads[:len(r.heads)+r.Head]
		}
		rest := disclient.FileSpan{File: f, Off: ref.Off + int64(r.Head), Len: int(ref.N) - r.Head}
		return Record{TS: ref.TS, Data: head[:r.Head:r.Head], Rest: rest}, true, nil
	}
	want := min(int(ref.N), framePrefixLen+8+binary.MaxVarintLen64+spanKeyRoom+r.Head)
	buf, err := r.readHead(f, ref, want)
	if err != nil {
		return Record{}, false, err
	}
	if int(binary.BigEndian.Uint32(buf)) != int(ref.N)-frameHeaderLen {
		return Record{}, false, r.Log.corrupt(seq, ref)
	}
	payload := buf[frameHeaderLen:]
	_, _, data, valid := decodeRecordValue(payload[20:])
	at := want - len(data) // where the data starts in the frame
	size := int(ref.N) - at
	if !valid || len(data) < r.Head || size <= r.Head {
		return Record{}, false, nil
	}
	if binary.BigEndian.Uint64(payload) != skey || int32(binary.BigEndian.Uint32(payload[8:])) != part ||
		int64(binary.BigEndian.Uint64(payload[12:])) != seq {
		return Record{}, false, r.Log.corrupt(seq, ref)
	}
	used := at + r.Head
	r.heads = r.heads[:len(r.heads)+used]
	rec.TS, rec.Key, rec.Data, _ = decodeRecordValue(payload[20 : used-frameHeaderLen : used-frameHeaderLen])
	rec.Rest = disclient.FileSpan{File: f, Off: ref.Off + int64(used), Len: size - r.Head}
	return rec, true, nil
}

// readHead reads want bytes of f from ref.Off on into the free end of the
// reader's heads piece; the caller keeps what it uses by extending
// r.heads over it.
func (r *Reader) readHead(f logfs.File, ref Ref, want int) ([]byte, error) {
	if cap(r.heads)-len(r.heads) < want {
		r.heads = make([]byte, 0, max(want, HeadsPiece))
	}
	buf := r.heads[len(r.heads) : len(r.heads)+want]
	n, err := f.ReadAt(buf, ref.Off)
	if n < want {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read record log segment %d at %d: %w", ref.Seg, ref.Off, err)
	}
	return buf, nil
}

// readPiece reads the frames at the start of refs that lie one after the
// other in one segment, as many whole ones as fit in freshPiece bytes
// (refs[0]'s at least) and up to one to be read as a span, straight into a
// new kept piece: read through the window they would be copied once more.
func (r *Reader) readPiece(refs []Ref) error {
	n := int64(refs[0].N)
	for i := 1; i < len(refs) && refs[i].Seg == refs[0].Seg && refs[i].Off == refs[0].Off+n && n+int64(refs[i].N) <= freshPiece && !r.spans(refs[i]); i++ {
		n += int64(refs[i].N)
	}
	buf := make([]byte, n)
	got, err := r.readAt(buf, refs[0])
	if err != nil {
		return err
	}
	r.kept, r.keptSeg, r.keptOff = buf[:got], refs[0].Seg, refs[0].Off
	return nil
}

// readAt reads len(buf) bytes of segment ref.Seg from ref.Off on into buf,
// and fails unless it gets at least ref's frame; it returns how many it got.
func (r *Reader) readAt(buf []byte, ref Ref) (int, error) {
	r.Log.filesMu.RLock()
	f := r.Log.files[ref.Seg]
	if f == nil {
		r.Log.filesMu.RUnlock()
		return 0, ErrSegmentGone
	}
	n, err := f.ReadAt(buf, ref.Off)
	r.Log.filesMu.RUnlock()
	if n >= int(ref.N) {
		return n, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, fmt.Errorf("read record log segment %d at %d: %w", ref.Seg, ref.Off, err)
}

// fill reads span bytes (at least the frame) from ref on into the window.
func (r *Reader) fill(ref Ref, span int64) error {
	want := int(max(span, int64(ref.N)))
	r.Buf = slices.Grow(r.Buf[:0], want)[:want]
	n, err := r.readAt(r.Buf, ref)
	r.Buf, r.seg, r.off = r.Buf[:n], ref.Seg, ref.Off
	return err
}

// contiguous is the length of the run of frames at the start of refs
// that lie one after the other in one segment.
func contiguous(refs []Ref) int64 {
	n := int64(refs[0].N)
	for i := 1; i < len(refs) && refs[i].Seg == refs[0].Seg && refs[i].Off == refs[0].Off+n; i++ {
		n += int64(refs[i].N)
	}
	return n
}
