package gateway

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog"
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
	inFile := framePart{file: disclient.FileSpan{File: f, Off: 7, Len: 5000}}
	batches := [][]framePart{
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

// A Fetch answer of more batches than one writev takes (1024 pieces) goes
// out spliced, in several writes, byte for byte what was stored: the many
// small batches compressible data makes are not copied together first.
func TestFetchOfMoreBatchesThanOneWritev(t *testing.T) {
	gw := startGateway(t, Config{}, localDIS(t))
	kc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	largeTopic(t, kc, "many", 1<<20)
	const n = 1500
	var want []byte
	for i := range n {
		b := batchesOf(t, 1, 1, 1+i%7)
		if base := produceRaw(t, kc, "many", b); base != int64(i) {
			t.Fatalf("batch %d at offset %d", i, base)
		}
		protocol.StampBatch(b, int64(i), 0)
		want = append(want, b...)
	}
	p := fetchPartition0(t, kc, "many", 0, 1<<20)
	if !bytes.Equal(p.RecordBatches, want) {
		bs, err := protocol.DecodeBatches(p.RecordBatches, protocol.NewDecompressBudget(1<<20))
		t.Fatalf("fetched %d bytes in %d batches (%v), want the %d bytes of the %d stored", len(p.RecordBatches), len(bs), err, len(want), n)
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
	span := func(f *os.File, off int64, n int) plog.Batch {
		return plog.Batch{File: disclient.FileSpan{File: f, Off: off, Len: n}}
	}
	batches := []plog.Batch{
		span(a, 10, 100), span(a, 110, 50), span(a, 160, 5), // one run
		span(a, 170, 20),                  // after a gap
		span(b, 190, 30),                  // another file at the next offset
		{Data: []byte("in memory")},       // bytes
		span(b, 220, 40), span(b, 260, 1), // a run again
	}
	got := batchParts([]framePart{{b: []byte("before")}}, batches)
	want := []framePart{
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
