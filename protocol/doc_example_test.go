package protocol

import (
	"encoding/hex"
	"os"
	"regexp"
	"testing"
)

// The worked example of docs/record-envelope.md decodes as the page says,
// and is what AppendBatch makes of the same record.
func TestRecordFormatDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/record-envelope.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```hex\n([0-9a-f]+)\n```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no hex example in docs/record-envelope.md")
	}
	data, err := hex.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	info, ok := ParseBatchInfo(data)
	if !ok || info.BaseOffset != 5 || info.NumRecords != 1 || info.MaxTimestamp != 1700000000000 || info.ProducerID != -1 {
		t.Fatalf("header %+v, ok %v", info, ok)
	}
	bs, err := DecodeBatches(data, NewDecompressBudget(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	r := bs[0].Records[0]
	if r.Offset != 5 || string(r.Key) != "k" || string(r.Value) != "hello" || r.Timestamp != 1700000000000 ||
		len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != "v" {
		t.Fatalf("record %+v", r)
	}
	again, err := AppendBatch(nil, []Record{r}, CodecNone, 0)
	if err != nil || hex.EncodeToString(again) != string(m[1]) {
		t.Fatalf("the same record encodes as %x", again)
	}
}
