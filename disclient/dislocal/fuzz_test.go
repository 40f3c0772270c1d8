package dislocal

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
)

// FuzzRequests sends arbitrary requests: whatever a client sends, the
// server must not panic or fail with a 5xx, and every error must carry a
// DIS error body.
func FuzzRequests(f *testing.F) {
	e := newEnv(f)
	e.createStream("s", 2)
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g"}, 201, nil)
	e.putTo("s", 0, "a", "b")
	c := e.cursor("s", "0", disclient.CursorTrimHorizon)
	for _, seed := range [][3]string{
		{"POST", v2("/records"), `{"stream_name":"s","records":[{"data":"YQ==","partition_id":"1","timestamp":5},{"data":"","partition_key":"k"},{"data":"YQ==","explicit_hash_key":"99"}]}`},
		{"GET", v2("/records?limit=1&max_fetch_bytes=1&partition-cursor=%s", c), ""},
		{"GET", v2("/cursors?stream-name=s&partition-id=0&cursor-type=AT_TIMESTAMP&timestamp=-5"), ""},
		{"GET", v2("/cursors?stream-name=s&partition-id=shardId-0000000001&cursor-type=AFTER_SEQUENCE_NUMBER&starting-sequence-number=0"), ""},
		{"PUT", v2("/streams/s"), `{"stream_name":"s","target_partition_count":3}`},
		{"PUT", "/v3/" + project + "/streams/s", `{"stream_name":"s","data_duration":30}`},
		{"POST", v2("/streams"), `{"stream_name":"t","partition_count":1,"tags":[{"key":"a","value":"b"}]}`},
		{"GET", v2("/streams/s?start_partitionId=0&limit_partitions=1"), ""},
		{"GET", v2("/streams?limit=1&start_stream_name=a"), ""},
		{"POST", v2("/checkpoints"), `{"app_name":"g","checkpoint_type":"LAST_READ","stream_name":"s","partition_id":"0","sequence_number":"1"}`},
		{"GET", v2("/checkpoints?app_name=g&stream_name=s&partition_id=0&checkpoint_type=LAST_READ"), ""},
		{"GET", v2("/apps/g/streams/s?limit=1&start_partition_id=0"), ""},
		{"GET", v2("/apps?stream_name=s"), ""},
		{"DELETE", v2("/checkpoints?app_name=g&stream_name=s&checkpoint_type=LAST_READ"), ""},
		{"DELETE", v2("/streams/t"), ""},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, method, target, body string) {
		req, err := http.NewRequest(method, "http://dis.local"+target, strings.NewReader(body))
		if err != nil || req.URL.Path == "" || req.URL.Path[0] != '/' {
			t.Skip()
		}
		rec := httptest.NewRecorder()
		e.srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var eb disclient.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || !strings.HasPrefix(eb.ErrorCode, "DIS.") || eb.Message == "" {
				t.Fatalf("%s %s: error body %s", method, target, rec.Body)
			}
		}
	})
}
