package disclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestRequests checks that every operation sends the method, path, query
// names and JSON body DIS expects, and decodes the answer.
func TestRequests(t *testing.T) {
	const pfx = "/v2/" + testProject
	cases := []struct {
		name   string
		run    func(context.Context, *Client) (any, error)
		status int
		reply  string
		method string
		path   string
		query  url.Values
		body   string // expected JSON body; "" for none
		want   any    // expected result; nil for calls that return only an error
	}{
		{
			name: "CreateStream",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.CreateStream(ctx, &CreateStreamRequest{
					StreamName: "s1", PartitionCount: 3, StreamType: StreamTypeCommon, DataType: DataTypeBlob,
					DataDuration: ptr[int32](24), Tags: []Tag{{Key: "dis.record.format", Value: "kafka"}},
				})
			},
			status: http.StatusCreated,
			method: http.MethodPost, path: pfx + "/streams",
			body: `{"stream_name":"s1","partition_count":3,"stream_type":"COMMON","data_type":"BLOB","data_duration":24,"tags":[{"key":"dis.record.format","value":"kafka"}]}`,
		},
		{
			name: "ListStreams",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.ListStreams(ctx, 10, "a")
			},
			reply:  `{"total_number":2,"stream_names":["a1","b"],"has_more_streams":true,"stream_info_list":[{"stream_name":"a1","create_time":1700000000000,"retention_period":24,"status":"RUNNING","stream_type":"COMMON","data_type":"BLOB","partition_count":3}]}`,
			method: http.MethodGet, path: pfx + "/streams",
			query: url.Values{"limit": {"10"}, "start_stream_name": {"a"}},
			want: &ListStreamsResponse{TotalNumber: 2, StreamNames: []string{"a1", "b"}, HasMoreStreams: true, StreamInfoList: []StreamInfo{{
				StreamName: "a1", CreateTime: 1700000000000, RetentionPeriod: 24, Status: StreamStatusRunning,
				StreamType: StreamTypeCommon, DataType: DataTypeBlob, PartitionCount: 3,
			}}},
		},
		{
			name: "ListStreams defaults",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.ListStreams(ctx, 0, "")
			},
			reply:  `{"total_number":0,"stream_names":[],"has_more_streams":false}`,
			method: http.MethodGet, path: pfx + "/streams",
			want: &ListStreamsResponse{StreamNames: []string{}},
		},
		{
			name: "DescribeStream",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.DescribeStream(ctx, "s1", "shardId-0000000001", 50)
			},
			reply:  `{"stream_name":"s1","stream_id":"id1","status":"RUNNING","partitions":[{"status":"ACTIVE","partition_id":"shardId-0000000002","hash_range":"[0 : 9]","sequence_number_range":"[0 : 5]"}],"has_more_partitions":false,"writable_partition_count":3}`,
			method: http.MethodGet, path: pfx + "/streams/s1",
			query: url.Values{"start_partitionId": {"shardId-0000000001"}, "limit_partitions": {"50"}},
			want: &DescribeStreamResponse{StreamName: "s1", StreamID: "id1", Status: StreamStatusRunning, WritablePartitionCount: 3,
				Partitions: []PartitionResult{{Status: PartitionStatusActive, PartitionID: "shardId-0000000002", HashRange: "[0 : 9]", SequenceNumberRange: "[0 : 5]"}}},
		},
		{
			name: "DeleteStream",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DeleteStream(ctx, "s1")
			},
			status: http.StatusNoContent,
			method: http.MethodDelete, path: pfx + "/streams/s1",
		},
		{
			name: "UpdatePartitionCount",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.UpdatePartitionCount(ctx, &UpdatePartitionCountRequest{StreamName: "s1", TargetPartitionCount: 6})
			},
			method: http.MethodPut, path: pfx + "/streams/s1",
			body: `{"stream_name":"s1","target_partition_count":6}`,
		},
		{
			name: "UpdateStream",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.UpdateStream(ctx, &UpdateStreamRequest{StreamName: "s1", DataDuration: ptr[int32](48)})
			},
			method: http.MethodPut, path: "/v3/" + testProject + "/streams/s1",
			body: `{"stream_name":"s1","data_duration":48}`,
		},
		{
			name: "PutRecords",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.PutRecords(ctx, &PutRecordsRequest{StreamName: "s1", Records: []PutRecordsEntry{
					{Data: []byte("hi"), PartitionID: "shardId-0000000000", PartitionKey: "k", Timestamp: ptr[int64](17)},
				}})
			},
			reply:  `{"failed_record_count":0,"records":[{"partition_id":"shardId-0000000000","sequence_number":"5"}]}`,
			method: http.MethodPost, path: pfx + "/records",
			body: `{"stream_name":"s1","records":[{"data":"aGk=","partition_id":"shardId-0000000000","partition_key":"k","timestamp":17}]}`,
			want: &PutRecordsResponse{Records: []PutRecordsResult{{PartitionID: "shardId-0000000000", SequenceNumber: "5"}}},
		},
		{
			name: "GetCursor at sequence number",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.GetCursor(ctx, &GetCursorRequest{StreamName: "s1", PartitionID: "shardId-0000000002",
					CursorType: CursorAtSequenceNumber, StartingSequenceNumber: "42"})
			},
			reply:  `{"partition_cursor":"abc"}`,
			method: http.MethodGet, path: pfx + "/cursors",
			query: url.Values{"stream-name": {"s1"}, "partition-id": {"shardId-0000000002"},
				"cursor-type": {"AT_SEQUENCE_NUMBER"}, "starting-sequence-number": {"42"}},
			want: &GetCursorResponse{PartitionCursor: "abc"},
		},
		{
			name: "GetCursor at timestamp",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.GetCursor(ctx, &GetCursorRequest{StreamName: "s1", PartitionID: "1",
					CursorType: CursorAtTimestamp, Timestamp: 1700000000000})
			},
			reply:  `{"partition_cursor":"abc"}`,
			method: http.MethodGet, path: pfx + "/cursors",
			query: url.Values{"stream-name": {"s1"}, "partition-id": {"1"},
				"cursor-type": {"AT_TIMESTAMP"}, "timestamp": {"1700000000000"}},
			want: &GetCursorResponse{PartitionCursor: "abc"},
		},
		{
			name: "GetRecords",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.GetRecords(ctx, "cur+/= x", 1024)
			},
			reply:  `{"records":[{"partition_key":"k","sequence_number":"7","data":"aGk=","timestamp":1700000000000,"timestamp_type":"CreateTime"}],"next_partition_cursor":"next"}`,
			method: http.MethodGet, path: pfx + "/records",
			query: url.Values{"partition-cursor": {"cur+/= x"}, "max_fetch_bytes": {"1024"}},
			want: &GetRecordsResponse{NextPartitionCursor: "next", Records: []Record{
				{PartitionKey: "k", SequenceNumber: "7", Data: []byte("hi"), Timestamp: 1700000000000, TimestampType: "CreateTime"},
			}},
		},
		{
			name: "CreateApp",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.CreateApp(ctx, "g1")
			},
			status: http.StatusCreated,
			method: http.MethodPost, path: pfx + "/apps",
			body: `{"app_name":"g1"}`,
		},
		{
			name: "ListApps",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.ListApps(ctx, 5, "a", "s1")
			},
			reply:  `{"has_more_app":true,"apps":[{"app_name":"g1","app_id":"x","create_time":3,"commit_checkpoint_stream_names":["s1"]}],"total_number":7}`,
			method: http.MethodGet, path: pfx + "/apps",
			query: url.Values{"limit": {"5"}, "start_app_name": {"a"}, "stream_name": {"s1"}},
			want: &ListAppsResponse{HasMoreApp: true, TotalNumber: 7,
				Apps: []App{{AppName: "g1", AppID: "x", CreateTime: 3, CommitCheckpointStreamNames: []string{"s1"}}}},
		},
		{
			name: "DescribeApp",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.DescribeApp(ctx, "g1")
			},
			reply:  `{"app_name":"g1","app_id":"x","create_time":3}`,
			method: http.MethodGet, path: pfx + "/apps/g1",
			want: &App{AppName: "g1", AppID: "x", CreateTime: 3},
		},
		{
			name: "DeleteApp",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DeleteApp(ctx, "g1")
			},
			status: http.StatusNoContent,
			method: http.MethodDelete, path: pfx + "/apps/g1",
		},
		{
			name: "ConsumerState",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.ConsumerState(ctx, "g1", "s1", 100, "shardId-0000000000")
			},
			reply:  `{"has_more":false,"stream_name":"s1","app_name":"g1","partition_consuming_states":[{"partition_id":"shardId-0000000001","sequence_number":"9","latest_offset":12,"earliest_offset":0,"checkpoint_type":"LAST_READ","status":"ACTIVE"}]}`,
			method: http.MethodGet, path: pfx + "/apps/g1/streams/s1",
			query: url.Values{"checkpoint_type": {"LAST_READ"}, "limit": {"100"}, "start_partition_id": {"shardId-0000000000"}},
			want: &ConsumerStateResponse{StreamName: "s1", AppName: "g1", PartitionConsumingStates: []PartitionConsumingState{{
				PartitionID: "shardId-0000000001", SequenceNumber: "9", LatestOffset: 12, CheckpointType: CheckpointLastRead, Status: PartitionStatusActive,
			}}},
		},
		{
			name: "CommitCheckpoint",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.CommitCheckpoint(ctx, &CommitCheckpointRequest{AppName: "g1", StreamName: "s1",
					PartitionID: "shardId-0000000001", SequenceNumber: "10", Metadata: "m"})
			},
			status: http.StatusCreated,
			method: http.MethodPost, path: pfx + "/checkpoints",
			body: `{"app_name":"g1","checkpoint_type":"LAST_READ","stream_name":"s1","partition_id":"shardId-0000000001","sequence_number":"10","metadata":"m"}`,
		},
		{
			name: "GetCheckpoint",
			run: func(ctx context.Context, c *Client) (any, error) {
				return c.GetCheckpoint(ctx, &GetCheckpointRequest{AppName: "g1", StreamName: "s1", PartitionID: "shardId-0000000001"})
			},
			reply:  `{"sequence_number":"-1","metadata":""}`,
			method: http.MethodGet, path: pfx + "/checkpoints",
			query: url.Values{"stream_name": {"s1"}, "partition_id": {"shardId-0000000001"}, "app_name": {"g1"}, "checkpoint_type": {"LAST_READ"}},
			want:  &GetCheckpointResponse{SequenceNumber: "-1"},
		},
		{
			name: "DeleteCheckpoint all partitions",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DeleteCheckpoint(ctx, &DeleteCheckpointRequest{AppName: "g1", StreamName: "s1"})
			},
			status: http.StatusNoContent,
			method: http.MethodDelete, path: pfx + "/checkpoints",
			query: url.Values{"stream_name": {"s1"}, "app_name": {"g1"}, "checkpoint_type": {"LAST_READ"}},
		},
		{
			name: "DeleteCheckpoint one partition",
			run: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DeleteCheckpoint(ctx, &DeleteCheckpointRequest{AppName: "g1", StreamName: "s1", PartitionID: "2"})
			},
			status: http.StatusNoContent,
			method: http.MethodDelete, path: pfx + "/checkpoints",
			query: url.Values{"stream_name": {"s1"}, "app_name": {"g1"}, "checkpoint_type": {"LAST_READ"}, "partition_id": {"2"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newScripted(t, answer{status: cmpStatus(tc.status), body: tc.reply})
			c := newTestClient(t, srv.URL, nil)
			got, err := tc.run(t.Context(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("result\n got %+v\nwant %+v", got, tc.want)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.method || r.Path != tc.path {
				t.Errorf("request %s %s, want %s %s", r.Method, r.Path, tc.method, tc.path)
			}
			if len(r.Query) != 0 || len(tc.query) != 0 {
				if !reflect.DeepEqual(r.Query, tc.query) {
					t.Errorf("query %v, want %v", r.Query, tc.query)
				}
			}
			for name, want := range map[string]string{
				"Content-Type": "application/json",
				"X-Project-Id": testProject,
				"User-Agent":   "disclient-test",
			} {
				if got := r.Header.Get(name); got != want {
					t.Errorf("header %s = %q, want %q", name, got, want)
				}
			}
			assertJSON(t, r.Body, tc.body)
		})
	}
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// assertJSON compares a body with the expected JSON text, ignoring layout.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Errorf("body %s, want none", got)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expected JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
}

// TestPathEscaping checks that names become single, escaped path segments.
func TestPathEscaping(t *testing.T) {
	srv := newScripted(t, answer{status: 200, body: `{}`})
	c := newTestClient(t, srv.URL+"/base/", nil)
	if _, err := c.DescribeStream(t.Context(), "a/b c?", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConsumerState(t.Context(), "g%1", "s/1", 0, ""); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	want := []string{
		"/base/v2/" + testProject + "/streams/a%2Fb%20c%3F",
		"/base/v2/" + testProject + "/apps/g%251/streams/s%2F1",
	}
	for i, w := range want {
		if reqs[i].Path != w {
			t.Errorf("path %q, want %q", reqs[i].Path, w)
		}
	}
}

// TestErrorAnswers checks that error statuses become *Error values that keep
// the DIS code, whatever shape the body has.
func TestErrorAnswers(t *testing.T) {
	long := strings.Repeat("x", 2000)
	cases := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"DIS body", 400, `{"errorCode":"DIS.4301","message":"Stream does not exist. [s1]"}`,
			Error{Status: 400, Code: CodeStreamNotFound, Message: "Stream does not exist. [s1]"}},
		{"gateway body", 441, `{"error_code":"DIS.4107","error_msg":"bad access key"}`,
			Error{Status: 441, Code: "DIS.4107", Message: "bad access key"}},
		{"message of another type", 400, `{"errorCode":"DIS.4200","message":12}`,
			Error{Status: 400, Code: CodeInvalidRequest, Message: `{"errorCode":"DIS.4200","message":12}`}},
		{"HTML", 502, "<html>Bad gateway</html>\n",
			Error{Status: 502, Message: "<html>Bad gateway</html>"}},
		{"long text", 500, long,
			Error{Status: 500, Message: long[:maxErrorMessage] + "…"}},
		{"empty", 404, "",
			Error{Status: 404, Message: "Not Found"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newScripted(t, answer{tc.status, tc.body})
			c := newTestClient(t, srv.URL, func(cfg *Config) { cfg.Retry.MaxAttempts = 1 })
			_, err := c.DescribeApp(t.Context(), "g1")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if *e != tc.want {
				t.Errorf("error %+v, want %+v", *e, tc.want)
			}
		})
	}
}

// TestSigner checks that the signer sees the exact body sent, runs before
// every attempt, and that its failure stops the call before anything is sent.
func TestSigner(t *testing.T) {
	srv := newScripted(t, answer{503, ""}, answer{200, `{"failed_record_count":0,"records":[{"partition_id":"shardId-0000000000","sequence_number":"0"}]}`})
	signed := 0
	c := newTestClient(t, srv.URL, func(cfg *Config) {
		cfg.Signer = SignerFunc(func(req *http.Request, body []byte) error {
			signed++
			if req.Header.Get("X-Project-Id") != testProject {
				t.Errorf("signer ran before the headers were set")
			}
			req.Header.Set("Authorization", "sig "+string(body))
			return nil
		})
	})
	if _, err := c.PutRecords(t.Context(), &PutRecordsRequest{StreamName: "s1", Records: []PutRecordsEntry{{Data: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	if signed != 2 {
		t.Errorf("signed %d times, want once per attempt (2)", signed)
	}
	for _, r := range srv.requests() {
		if got, want := r.Header.Get("Authorization"), "sig "+string(r.Body); got != want {
			t.Errorf("Authorization %q, want %q", got, want)
		}
	}

	errSign := errors.New("no credentials")
	failing := newTestClient(t, srv.URL, func(cfg *Config) {
		cfg.Signer = SignerFunc(func(*http.Request, []byte) error { return errSign })
	})
	before := len(srv.requests())
	if err := failing.DeleteApp(t.Context(), "g1"); !errors.Is(err, errSign) {
		t.Errorf("error %v, want the signer's", err)
	}
	if n := len(srv.requests()); n != before {
		t.Errorf("an unsigned request reached the server")
	}
}

// TestNew checks configuration validation.
func TestNew(t *testing.T) {
	bad := []Config{
		{Endpoint: "http://127.0.0.1:1"},
		{Endpoint: "", ProjectID: "p"},
		{Endpoint: "127.0.0.1:4000", ProjectID: "p"},
		{Endpoint: "ftp://host", ProjectID: "p"},
		{Endpoint: "http://host/?a=b", ProjectID: "p"},
		{Endpoint: "http://host", ProjectID: "p", Retry: RetryPolicy{MaxAttempts: -1}},
		{Endpoint: "http://host", ProjectID: "p", Retry: RetryPolicy{BaseBackoff: -1}},
	}
	for _, cfg := range bad {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", cfg)
		}
	}
	c, err := New(Config{Endpoint: "https://dis.cn-north-4.myhuaweicloud.com/", ProjectID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	want := RetryPolicy{MaxAttempts: defaultMaxAttempts, BaseBackoff: defaultBaseBackoff, MaxBackoff: defaultMaxBackoff}
	if c.retry != want {
		t.Errorf("zero RetryPolicy became %+v, want %+v", c.retry, want)
	}
	if c.v2 != "https://dis.cn-north-4.myhuaweicloud.com/v2/p" {
		t.Errorf("v2 prefix %q", c.v2)
	}
}

// TestMissingArguments checks that empty names and nil requests fail before
// anything is sent, so they cannot turn into another operation.
func TestMissingArguments(t *testing.T) {
	srv := newScripted(t, answer{200, `{}`})
	c := newTestClient(t, srv.URL, nil)
	ctx := t.Context()
	calls := map[string]func() error{
		"CreateStream nil": func() error { return c.CreateStream(ctx, nil) },
		"DescribeStream":   func() error { _, err := c.DescribeStream(ctx, "", "", 0); return err },
		"DeleteStream":     func() error { return c.DeleteStream(ctx, "") },
		"UpdatePartitionCount": func() error {
			return c.UpdatePartitionCount(ctx, &UpdatePartitionCountRequest{TargetPartitionCount: 2})
		},
		"UpdateStream nil": func() error { return c.UpdateStream(ctx, nil) },
		"PutRecords nil":   func() error { _, err := c.PutRecords(ctx, nil); return err },
		"GetCursor":        func() error { _, err := c.GetCursor(ctx, &GetCursorRequest{StreamName: "s1"}); return err },
		"GetRecords":       func() error { _, err := c.GetRecords(ctx, "", 0); return err },
		"CreateApp":        func() error { return c.CreateApp(ctx, "") },
		"DescribeApp":      func() error { _, err := c.DescribeApp(ctx, ""); return err },
		"DeleteApp":        func() error { return c.DeleteApp(ctx, "") },
		"ConsumerState":    func() error { _, err := c.ConsumerState(ctx, "g1", "", 0, ""); return err },
		"CommitCheckpoint": func() error {
			return c.CommitCheckpoint(ctx, &CommitCheckpointRequest{AppName: "g1", StreamName: "s1", PartitionID: "0"})
		},
		"GetCheckpoint": func() error {
			_, err := c.GetCheckpoint(ctx, &GetCheckpointRequest{AppName: "g1", StreamName: "s1"})
			return err
		},
		"DeleteCheckpoint": func() error { return c.DeleteCheckpoint(ctx, &DeleteCheckpointRequest{StreamName: "s1"}) },
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

// protoLog records the protocol and client address of each request.
type protoLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *protoLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.seen = append(l.seen, r.Proto+" "+r.RemoteAddr)
	l.mu.Unlock()
	_, _ = w.Write([]byte(`{"app_name":"g1"}`))
}

func (l *protoLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// TestDefaultTransport checks that the default client negotiates HTTP/2 with
// an https endpoint and keeps plain http endpoints on reused HTTP/1.1
// connections.
func TestDefaultTransport(t *testing.T) {
	var tlsLog protoLog
	tlsSrv := httptest.NewUnstartedServer(&tlsLog)
	tlsSrv.EnableHTTP2 = true
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	c := newTestClient(t, tlsSrv.URL, nil)
	roots := x509.NewCertPool()
	roots.AddCert(tlsSrv.Certificate())
	c.httpClient.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}
	if _, err := c.DescribeApp(t.Context(), "g1"); err != nil {
		t.Fatal(err)
	}
	if seen := tlsLog.snapshot(); len(seen) != 1 || !strings.HasPrefix(seen[0], "HTTP/2.0 ") {
		t.Errorf("https requests arrived as %v, want HTTP/2.0", seen)
	}

	var plainLog protoLog
	plainSrv := httptest.NewServer(&plainLog)
	t.Cleanup(plainSrv.Close)
	c = newTestClient(t, plainSrv.URL, nil)
	for range 3 {
		if _, err := c.DescribeApp(t.Context(), "g1"); err != nil {
			t.Fatal(err)
		}
	}
	seen := plainLog.snapshot()
	if len(seen) != 3 || seen[1] != seen[0] || seen[2] != seen[0] || !strings.HasPrefix(seen[0], "HTTP/1.1 ") {
		t.Errorf("http requests arrived as %v, want 3 over one HTTP/1.1 connection", seen)
	}
}
