package recordlog

import (
	"bytes"
	"slices"
	"testing"
)

// A run frame reads back as written, and any change to its head, its
// records' data or its length is caught.
func TestRunFrameChecks(t *testing.T) {
	recs := []RunRecord{{TS: 100, Data: []byte("first")}, {TS: -5, Data: nil}, {TS: 300, Data: []byte("third record")}}
	f := AppendRunFrame([]byte("before"), 7, 3, 42, recs)[len("before"):]
	skey, part, first, members, ok := checkRunFrame(f)
	if !ok || skey != 7 || part != 3 || first != 42 || len(members) != len(recs) {
		t.Fatalf("checkRunFrame: %d %d %d %v %v", skey, part, first, members, ok)
	}
	for i, m := range members {
		data := f[m.off : m.off+m.n]
		if m.ts != recs[i].TS || m.crc != recs[i].CRC || !bytes.Equal(data, recs[i].Data) || recs[i].Off != m.off+len("before") {
			t.Errorf("member %d: %+v, data %q; built %+v", i, m, data, recs[i])
		}
	}
	if !frameValid(f) {
		t.Error("frameValid refuses a whole run frame")
	}
	// The three records' data lie back to back at the end.
	if !bytes.HasSuffix(f, []byte("firstthird record")) {
		t.Errorf("frame ends %q", f[len(f)-20:])
	}
	for _, at := range []int{0, 5, frameHeaderLen + 3, frameHeaderLen + runHeadFixed + 2, len(f) - 1, members[0].off} {
		bad := slices.Clone(f)
		bad[at] ^= 0x40
		if frameValid(bad) {
			t.Errorf("a run frame with byte %d changed passes", at)
		}
	}
	if frameValid(f[:len(f)-1]) {
		t.Error("a torn run frame passes")
	}
}

// checkRunFrame takes any bytes without panicking, and what it accepts
// lies inside the frame, the members' data back to back to its end.
func FuzzCheckRunFrame(f *testing.F) {
	f.Add(AppendRunFrame(nil, 1, 2, 3, []RunRecord{{TS: 1, Data: []byte("a")}, {TS: 2, Data: []byte("bc")}}))
	f.Add(AppendFrame(nil, 1, 2, 3, 4, "", []byte("record")))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _, members, ok := checkRunFrame(b)
		if !ok {
			return
		}
		end := frameHeaderLen + runHeadFixed + len(members)*runEntryLen
		for _, m := range members {
			if m.off != end || m.n < 0 {
				t.Fatalf("member %+v does not follow at %d", m, end)
			}
			end += m.n
		}
		if end != len(b) || !frameValid(b) {
			t.Fatalf("members end at %d of %d", end, len(b))
		}
	})
}
