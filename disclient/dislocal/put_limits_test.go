package dislocal

import (
	"bytes"
	"net/http"
	"runtime"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/disgw/disgw/disclient"
)

// heapGrowth runs fn and reports how many bytes it allocated.
func heapGrowth(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A PutRecords body holding more records than one call may carry is
// refused with DIS.4200 in both encodings, and refused before its records
// are decoded: a million tiny records cost far less than a struct each.
func TestPutRecordsCountCheckedBeforeDecoding(t *testing.T) {
	e := newEnv(t)
	e.createStream("limits", 1)
	const n = 1_000_000

	var js strings.Builder
	js.WriteString(`{"stream_name":"limits","records":[`)
	for i := range n {
		if i > 0 {
			js.WriteByte(',')
		}
		js.WriteString(`{}`)
	}
	js.WriteString(`]}`)
	body := js.String()
	grew := heapGrowth(func() {
		msg := e.fails("POST", v2("/records"), body, http.StatusBadRequest, disclient.CodeInvalidRequest)
		if !strings.Contains(msg, "Too many records") {
			t.Errorf("JSON: message %q, want too many records", msg)
		}
	})
	// Decoding every entry would cost n PutRecordsEntry structs (~100 MB).
	if grew > 48<<20 {
		t.Errorf("JSON: refusing %d records allocated %d MiB", n, grew>>20)
	}

	req := disclient.PutRecordsRequest{StreamName: "limits", Records: make([]disclient.PutRecordsEntry, n)}
	pb := req.AppendProtobuf(nil)
	grew = heapGrowth(func() {
		rec := e.serveProtobuf("POST", v2("/records"), pb)
		if rec.Code != http.StatusBadRequest || !bytes.Contains(rec.Body.Bytes(), []byte(disclient.CodeInvalidRequest)) {
			t.Errorf("protobuf: %d %s, want 400 %s", rec.Code, rec.Body.Bytes(), disclient.CodeInvalidRequest)
		}
	})
	if grew > 48<<20 {
		t.Errorf("protobuf: refusing %d records allocated %d MiB", n, grew>>20)
	}

	// At the limit the call goes through.
	ok := disclient.PutRecordsRequest{StreamName: "limits", Records: make([]disclient.PutRecordsEntry, maxRecordsPerPut)}
	for i := range ok.Records {
		ok.Records[i].Data = []byte("x")
	}
	var resp disclient.PutRecordsResponse
	e.must("POST", v2("/records"), ok, http.StatusOK, &resp)
	if resp.FailedRecordCount != 0 || len(resp.Records) != maxRecordsPerPut {
		t.Fatalf("%d records at the limit: %d results, %d failed", maxRecordsPerPut, len(resp.Records), resp.FailedRecordCount)
	}
}

// A PutRecords body over the size limit is refused with DIS.4200 in both
// encodings; an empty or malformed JSON body with DIS.4202 or DIS.4200.
func TestPutRecordsBodyLimits(t *testing.T) {
	e := newEnv(t)
	e.createStream("limits", 1)
	big := disclient.PutRecordsRequest{StreamName: "limits", Records: []disclient.PutRecordsEntry{{Data: make([]byte, maxPutBodyBytes+1)}}}
	raw, err := json.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	msg := e.fails("POST", v2("/records"), string(raw), http.StatusBadRequest, disclient.CodeInvalidRequest)
	if !strings.Contains(msg, "exceeds") {
		t.Errorf("JSON: message %q, want the body limit", msg)
	}
	rec := e.serveProtobuf("POST", v2("/records"), big.AppendProtobuf(nil))
	if rec.Code != http.StatusBadRequest || !bytes.Contains(rec.Body.Bytes(), []byte("exceeds")) {
		t.Errorf("protobuf: %d %s, want 400 and the body limit", rec.Code, rec.Body.Bytes())
	}
	e.fails("POST", v2("/records"), "", http.StatusBadRequest, disclient.CodeEmptyRequest)
	e.fails("POST", v2("/records"), `{"stream_name":"limits","records":{}}`, http.StatusBadRequest, disclient.CodeInvalidRequest)
	e.fails("POST", v2("/records"), `{"stream_name":"limits","records":[{"data":"AA=="}`, http.StatusBadRequest, disclient.CodeInvalidRequest)
	// Unknown fields are skipped, as a JSON decoder skips them.
	var resp disclient.PutRecordsResponse
	e.must("POST", v2("/records"), `{"extra":{"a":[1,2]},"stream_name":"limits","records":[{"data":"AA=="}]}`, http.StatusOK, &resp)
	if resp.FailedRecordCount != 0 || len(resp.Records) != 1 {
		t.Fatalf("put with an unknown field: %+v", resp)
	}
}
