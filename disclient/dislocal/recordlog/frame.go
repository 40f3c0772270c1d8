package recordlog

import (
	"encoding/binary"
	"hash/crc32"
)

// Frames. A segment is a sequence of frames, each a record's:
//
//	<payload length:4> <crc32c of payload:4> <payload>
//	payload = <skey:8> <partition:4> <seq:8> <timestamp:8> <uvarint key length> <key> <data>
//
// or a run of records of one partition (runframe.go). Numbers are
// big-endian.
const (
	frameHeaderLen = 8
	framePrefixLen = frameHeaderLen + 8 + 4 + 8
	// RefLen is the length of an encoded record frame's Ref,
	// MemberRefLen a run member's without its head.
	RefLen       = 8 + 8 + 4
	MemberRefLen = RefLen + 8 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Ref locates one record, so that pebble keeps a few bytes per record
// instead of the record: segment id, offset and length of its frame, or
// with Member, of its data in a run frame (runframe.go), whose timestamp
// and checksum the reference then carries.
type Ref struct {
	Seg uint64
	Off int64
	N   uint32

	Member bool
	TS     int64
	CRC    uint32
	// Head is the data's first MemberHeadLen bytes, kept for a member
	// of more than memberHeadMin bytes (MemberHead). Decoded, it aliases
	// the encoded reference.
	Head []byte
}

// Encode appends r's stored form to b.
func (r Ref) Encode(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, r.Seg)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Off))
	b = binary.BigEndian.AppendUint32(b, r.N)
	if r.Member {
		b = binary.BigEndian.AppendUint64(b, uint64(r.TS))
		b = binary.BigEndian.AppendUint32(b, r.CRC)
		b = append(b, r.Head...)
	}
	return b
}

// DecodeRef reads what Encode wrote; false for anything else.
func DecodeRef(v []byte) (Ref, bool) {
	if len(v) != RefLen && len(v) != MemberRefLen && len(v) != MemberRefLen+MemberHeadLen {
		return Ref{}, false
	}
	r := Ref{
		Seg: binary.BigEndian.Uint64(v),
		Off: int64(binary.BigEndian.Uint64(v[8:])),
		N:   binary.BigEndian.Uint32(v[16:]),
	}
	if len(v) >= MemberRefLen {
		r.Member, r.TS, r.CRC = true, int64(binary.BigEndian.Uint64(v[20:])), binary.BigEndian.Uint32(v[28:])
		if len(v) > MemberRefLen {
			if int(r.N) <= memberHeadMin {
				return Ref{}, false
			}
			r.Head = v[MemberRefLen:]
		}
	}
	return r, true
}

// DataLen is how many bytes of record data (key included) the referenced
// record holds at most, what a read's byte limit counts: a frame's prefix
// and timestamp are not data.
func (r Ref) DataLen() int {
	if r.Member {
		return int(r.N)
	}
	return int(r.N) - framePrefixLen - 9
}

// AppendFrame appends the frame of one record.
func AppendFrame(b []byte, skey uint64, part int32, seq, timestamp int64, key string, data []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeaderLen)...)
	b = binary.BigEndian.AppendUint64(b, skey)
	b = binary.BigEndian.AppendUint32(b, uint32(part))
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = binary.BigEndian.AppendUint64(b, uint64(timestamp))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, data...)
	payload := b[start+frameHeaderLen:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(payload, castagnoli))
	return b
}

// FrameLen is the length AppendFrame adds, so that a writer sizes its
// buffer once.
func FrameLen(key string, data []byte) int {
	n := framePrefixLen + 8 + 1 + len(key) + len(data)
	for l := uint64(len(key)); l >= 0x80; l >>= 7 {
		n++
	}
	return n
}

// checkFrame verifies a record frame read back from the log and returns
// its payload's parts.
func checkFrame(f []byte) (skey uint64, part int32, seq int64, value []byte, ok bool) {
	if len(f) < framePrefixLen || int(binary.BigEndian.Uint32(f)) != len(f)-frameHeaderLen {
		return 0, 0, 0, nil, false
	}
	payload := f[frameHeaderLen:]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(f[4:]) {
		return 0, 0, 0, nil, false
	}
	return binary.BigEndian.Uint64(payload), int32(binary.BigEndian.Uint32(payload[8:])),
		int64(binary.BigEndian.Uint64(payload[12:])), payload[20:], true
}

// decodeRecordValue splits the end of a record frame's payload; the slices
// alias v.
func decodeRecordValue(v []byte) (timestamp int64, key, data []byte, ok bool) {
	if len(v) < 9 {
		return 0, nil, nil, false
	}
	timestamp = int64(binary.BigEndian.Uint64(v))
	kl, n := binary.Uvarint(v[8:])
	if n <= 0 || kl > uint64(len(v)-8-n) {
		return 0, nil, nil, false
	}
	rest := v[8+n:]
	return timestamp, rest[:kl], rest[kl:], true
}

// frameValid reports whether buf is one whole frame, a record's or a
// run's, with correct checksums.
func frameValid(buf []byte) bool {
	if isRunFrame(buf) {
		_, _, _, _, ok := checkRunFrame(buf)
		return ok
	}
	_, _, _, value, ok := checkFrame(buf)
	if ok {
		_, _, _, ok = decodeRecordValue(value)
	}
	return ok
}

// Frame is what a scan of the log finds in one whole frame: the records
// first, first+1, … of partition Part of the stream with key SKey, each
// with its reference.
type Frame struct {
	SKey  uint64
	Part  int32
	First int64
	Refs  []Ref
}

// parseFrame is the Frame of the valid frame buf at off in segment seg.
func parseFrame(seg uint64, off int64, buf []byte) Frame {
	if isRunFrame(buf) {
		skey, part, first, members, _ := checkRunFrame(buf)
		refs := make([]Ref, len(members))
		for i, m := range members {
			refs[i] = Ref{Seg: seg, Off: off + int64(m.off), N: uint32(m.n), Member: true, TS: m.ts, CRC: m.crc,
				Head: MemberHead(buf[m.off : m.off+m.n])}
		}
		return Frame{SKey: skey, Part: part, First: first, Refs: refs}
	}
	skey, part, seq, value, _ := checkFrame(buf)
	ts, _, _, _ := decodeRecordValue(value)
	return Frame{SKey: skey, Part: part, First: seq, Refs: []Ref{{Seg: seg, Off: off, N: uint32(len(buf)), TS: ts}}}
}
