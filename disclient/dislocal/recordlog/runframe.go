package recordlog

import (
	"encoding/binary"
	"hash/crc32"
)

// Run frames. The records one append writes to one partition lie in the
// log back to back, with no frame prefix between them, when none has a
// partition key: a kafka stream's batches, which a reader then sends from
// the file in one call per run rather than one per record
// (docs/design.md §10). Such a run, of one record or more,
// is one frame:
//
//	<payload length | runFlag:4> <crc32c of head:4> <payload>
//	payload = <head> <data 1> … <data count>
//	head = <skey:8> <partition:4> <first seq:8> <count:4>
//	       count × (<timestamp:8> <crc32c of data:4> <data length:4>)
//
// The frame's checksum covers its head, each record's data its own
// checksum in the head, so the data is read and checked once when the log
// is scanned. A record of a run is referenced by its data alone (a member
// reference, Ref.Member), which carries the record's timestamp and
// checksum: a reader finds both without the head.
const (
	// runFlag marks the length of a run frame; a record frame's length
	// never has it (segments are far smaller than 2 GiB).
	runFlag = 1 << 31
	// runHeadFixed is a run head without its entries, runEntryLen one
	// entry.
	runHeadFixed = 8 + 4 + 8 + 4
	runEntryLen  = 8 + 4 + 4
)

// A member reference to a record of more than memberHeadMin bytes also
// keeps the record's first MemberHeadLen bytes: a reader that sends the
// rest of it from the file (Reader.readSpan, the gateway's reads of
// batches, whose 61-byte header it needs in memory) then reads nothing
// from the log for it, where that read was a system call a batch: 13 440
// preads for one consume of 200 000 records of 1 KiB in 16 KiB batches.
const (
	MemberHeadLen = 64
	memberHeadMin = 4096
)

// MemberHead is what a member reference keeps of data.
func MemberHead(data []byte) []byte {
	if len(data) <= memberHeadMin {
		return nil
	}
	return data[:MemberHeadLen]
}

// runMember is one record of a run frame as its head describes it; off is
// where its data starts in the frame.
type runMember struct {
	ts  int64
	crc uint32
	off int
	n   int
}

// InRun reports whether a record may go in a run frame: only a record
// without a partition key, as the head has no room for one.
func InRun(key string) bool { return key == "" }

// RunRecord is one record of a run frame being built: its timestamp and
// data in, where its data starts in the buffer and its checksum out.
type RunRecord struct {
	TS   int64
	Data []byte
	Off  int
	CRC  uint32
}

// AppendRunFrame appends the run frame of records first, first+1, … of a
// partition (one or more), filling in each one's Off and CRC.
func AppendRunFrame(b []byte, skey uint64, part int32, first int64, recs []RunRecord) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeaderLen)...)
	b = binary.BigEndian.AppendUint64(b, skey)
	b = binary.BigEndian.AppendUint32(b, uint32(part))
	b = binary.BigEndian.AppendUint64(b, uint64(first))
	b = binary.BigEndian.AppendUint32(b, uint32(len(recs)))
	for i := range recs {
		r := &recs[i]
		r.CRC = crc32.Checksum(r.Data, castagnoli)
		b = binary.BigEndian.AppendUint64(b, uint64(r.TS))
		b = binary.BigEndian.AppendUint32(b, r.CRC)
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Data)))
	}
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(b[start+frameHeaderLen:], castagnoli))
	for i := range recs {
		recs[i].Off = len(b)
		b = append(b, recs[i].Data...)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-frameHeaderLen)|runFlag)
	return b
}

// isRunFrame reports whether the frame starting f is a run frame.
func isRunFrame(f []byte) bool {
	return binary.BigEndian.Uint32(f)&runFlag != 0
}

// checkRunFrame verifies a whole run frame read back from the log, its
// head's checksum and every record's, and returns what its head holds.
func checkRunFrame(f []byte) (skey uint64, part int32, first int64, members []runMember, ok bool) {
	if len(f) < frameHeaderLen+runHeadFixed || !isRunFrame(f) ||
		int(binary.BigEndian.Uint32(f)&^runFlag) != len(f)-frameHeaderLen {
		return 0, 0, 0, nil, false
	}
	count := int(binary.BigEndian.Uint32(f[frameHeaderLen+20:]))
	headEnd := frameHeaderLen + runHeadFixed + count*runEntryLen
	if count < 1 || count > (len(f)-frameHeaderLen-runHeadFixed)/runEntryLen {
		return 0, 0, 0, nil, false
	}
	head := f[frameHeaderLen:headEnd]
	if crc32.Checksum(head, castagnoli) != binary.BigEndian.Uint32(f[4:]) {
		return 0, 0, 0, nil, false
	}
	members = make([]runMember, count)
	off := headEnd
	for i := range members {
		e := head[runHeadFixed+i*runEntryLen:]
		m := runMember{
			ts:  int64(binary.BigEndian.Uint64(e)),
			crc: binary.BigEndian.Uint32(e[8:]),
			off: off,
			n:   int(binary.BigEndian.Uint32(e[12:])),
		}
		if m.n > len(f)-off || crc32.Checksum(f[off:off+m.n], castagnoli) != m.crc {
			return 0, 0, 0, nil, false
		}
		off += m.n
		members[i] = m
	}
	if off != len(f) {
		return 0, 0, 0, nil, false
	}
	return binary.BigEndian.Uint64(head), int32(binary.BigEndian.Uint32(head[8:])),
		int64(binary.BigEndian.Uint64(head[12:])), members, true
}
