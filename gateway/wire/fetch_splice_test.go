package wire

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// A spliced Fetch frame is byte for byte the frame kmsg encodes with the
// batches copied in, at every version, the flexible ones included, parts
// read from a file among them; a frame whose marker is not where it should
// be is not spliced.
func TestFetchSpliceMatchesEncoding(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append([]byte("skipped"), bytes.Repeat([]byte{4}, 5000)...)); err != nil {
		t.Fatal(err)
	}
	inFile := FramePart{file: disclient.FileSpan{File: f, Off: 7, Len: 5000}}
	batches := [][]FramePart{
		{{b: bytes.Repeat([]byte{1}, 300)}, {b: bytes.Repeat([]byte{2}, 200)}},
		{{b: bytes.Repeat([]byte{3}, 70000)}, inFile}, // a length that needs more varint bytes
		{},
	}
	build := func(version int16, splice bool) (*kmsg.FetchResponse, []fetchSplice) {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		var splices []fetchSplice
		for ti, name := range []string{"a", "b"} {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = name
			for pi := range batches {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = int32(pi)
				sp.HighWatermark = int64(ti*10 + pi)
				rt.Partitions = append(rt.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				field := &resp.Topics[ti].Partitions[pi].RecordBatches
				bs := batches[pi]
				n := 0
				var whole []byte
				for i := range bs {
					n += bs[i].size()
					var err error
					if whole, err = bs[i].appendTo(whole); err != nil {
						t.Fatal(err)
					}
				}
				if splice && len(bs) > 0 {
					splices = append(splices, newFetchSplice(field, bs, n))
					continue
				}
				*field = whole
			}
		}
		return resp, splices
	}
	for _, v := range []int16{4, 11, 12, 16} {
		hdr := protocol.RequestHeader{Key: 1, Version: v, CorrelationID: 7}
		want, _ := build(v, false)
		wantFrame := protocol.AppendResponse(nil, hdr, want)
		got, splices := build(v, true)
		out := outFrame{frame: protocol.AppendResponse(nil, hdr, got)}
		if !out.splice(splices, v >= 12) {
			t.Fatalf("v%d: not spliced", v)
		}
		if b, err := out.appendTo(nil); err != nil || !bytes.Equal(b, wantFrame) {
			t.Errorf("v%d: spliced frame of %d bytes differs from the encoded one of %d", v, out.size(), len(wantFrame))
		}
	}

	resp, splices := build(12, true)
	resp.Topics[1].Partitions[1].RecordBatches = []byte("moved")
	out := outFrame{frame: protocol.AppendResponse(nil, protocol.RequestHeader{Key: 1, Version: 12}, resp)}
	before := string(out.frame)
	if out.splice(splices, true) || out.parts != nil || string(out.frame) != before {
		t.Error("a frame missing a marker was spliced, or changed")
	}
}

// Batches whose ranges of one file continue one another go out as one
// range; a gap, another file or a batch in memory starts a new part, and
// the order of the bytes does not change.
func TestBatchPartsJoinAdjacentRanges(t *testing.T) {
	dir := t.TempDir()
	a, err := os.Create(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Create(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	span := func(f *os.File, off int64, n int) FramePart {
		return FramePart{file: disclient.FileSpan{File: f, Off: off, Len: n}}
	}
	batches := []FramePart{
		span(a, 10, 100), span(a, 110, 50), span(a, 160, 5), // one run
		span(a, 170, 20),                  // after a gap
		span(b, 190, 30),                  // another file at the next offset
		{b: []byte("in memory")},          // bytes
		span(b, 220, 40), span(b, 260, 1), // a run again
	}
	got := []FramePart{{b: []byte("before")}}
	for _, p := range batches {
		got = AppendBatch(got, p.b, p.file)
	}
	want := []FramePart{
		{b: []byte("before")},
		{file: disclient.FileSpan{File: a, Off: 10, Len: 155}},
		{file: disclient.FileSpan{File: a, Off: 170, Len: 20}},
		{file: disclient.FileSpan{File: b, Off: 190, Len: 30}},
		{b: []byte("in memory")},
		{file: disclient.FileSpan{File: b, Off: 220, Len: 41}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d parts, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !bytes.Equal(got[i].b, want[i].b) || got[i].file != want[i].file {
			t.Errorf("part %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
