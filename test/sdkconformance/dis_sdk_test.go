package sdkconformance_test

// The official Huawei Cloud Go SDK (services/dis/v2) as the judge of the
// embedded server: every operation disgw uses or dislocal serves goes
// through the SDK unchanged, which must decode each answer, and the values
// it decodes must be right. docs/dis-api.md §6 lists what this takes. The
// tests live in the test module so that only it depends on the SDK.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/huaweicloud/huaweicloud-sdk-go-v3/core/auth/basic"
	"github.com/huaweicloud/huaweicloud-sdk-go-v3/core/config"
	"github.com/huaweicloud/huaweicloud-sdk-go-v3/core/sdkerr"
	dis "github.com/huaweicloud/huaweicloud-sdk-go-v3/services/dis/v2"
	"github.com/huaweicloud/huaweicloud-sdk-go-v3/services/dis/v2/model"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

// sdkProject is the project id the SDK puts into every path.
const sdkProject = "0123456789abcdef0123456789abcdef"

// sdkClock is the server's injected clock. It starts at the real time so
// that nothing comparing it with the SDK's X-Sdk-Date sees a skew.
type sdkClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *sdkClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *sdkClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *sdkClock) ms() int64 { return c.now().UnixMilli() }

// sdkEnv is an embedded server on loopback and an official SDK client for it.
type sdkEnv struct {
	clock *sdkClock
	c     *dis.DisClient
}

func newSDKEnv(t *testing.T) *sdkEnv {
	t.Helper()
	clock := &sdkClock{t: time.Now().Truncate(time.Millisecond)}
	hs := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) {
		c.Sync = dislocal.SyncNone
		c.Now = clock.now
		c.RetentionCheckInterval = time.Hour
	})).HTTP

	return &sdkEnv{clock: clock, c: sdkClientFor(t, hs)}
}

// sdkClientFor is an official SDK client for the embedded server hs.
func sdkClientFor(t *testing.T, hs *httptest.Server) *dis.DisClient {
	t.Helper()
	cred, err := basic.NewCredentialsBuilder().
		WithAk("any-access-key").
		WithSk("any-secret-key").
		WithProjectId(sdkProject).
		SafeBuild()
	if err != nil {
		t.Fatalf("credentials: %v", err)
	}
	hc, err := dis.DisClientBuilder().
		WithEndpoints([]string{hs.URL}).
		WithCredential(cred).
		WithHttpConfig(config.DefaultHttpConfig().
			WithHttpRoundTripper(hs.Client().Transport).
			WithTimeout(10 * time.Second)).
		SafeBuild()
	if err != nil {
		t.Fatalf("SDK client: %v", err)
	}
	return dis.NewDisClient(hc)
}

// must takes an SDK call's results and returns a check that fails the test
// when the call failed, which includes the SDK failing to decode a 2xx
// answer: must(e.c.ShowStream(req))(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("SDK call failed: %v", err)
		}
		return v
	}
}

// wantServiceError checks that err is the SDK's service error for a DIS
// error answer. DIS's body is {"errorCode","message"}; the SDK fills
// ErrorCode only from error_code+error_msg or code+message, so ErrorCode
// stays empty and the raw body lands in ErrorMessage, where the DIS code is.
func wantServiceError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var se *sdkerr.ServiceResponseError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want *sdkerr.ServiceResponseError with %s", err, err, code)
	}
	if se.StatusCode != status {
		t.Errorf("status = %d, want %d (%s)", se.StatusCode, status, se.ErrorMessage)
	}
	if se.ErrorCode != "" {
		t.Errorf("ErrorCode = %q, want empty: the SDK does not read DIS's errorCode", se.ErrorCode)
	}
	var body struct {
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	}
	if err := json.Unmarshal([]byte(se.ErrorMessage), &body); err != nil {
		t.Fatalf("ErrorMessage %q is not the DIS error body: %v", se.ErrorMessage, err)
	}
	if body.ErrorCode != code || body.Message == "" {
		t.Errorf("error body = %+v, want errorCode %s and a message", body, code)
	}
}

func ptr[T any](v T) *T { return &v }

// val dereferences an optional SDK field, failing when it is absent.
func val[T any](t *testing.T, name string, p *T) T {
	t.Helper()
	if p == nil {
		var zero T
		t.Fatalf("%s is absent", name)
		return zero
	}
	return *p
}

func (e *sdkEnv) createStream(t *testing.T, name string, partitions int32, hours int32, tags ...model.Tag) {
	t.Helper()
	body := &model.CreateStreamReq{
		StreamName:     name,
		PartitionCount: partitions,
		StreamType:     ptr(model.GetCreateStreamReqStreamTypeEnum().COMMON),
		DataType:       ptr(model.GetCreateStreamReqDataTypeEnum().BLOB),
		DataDuration:   ptr(hours),
	}
	if len(tags) > 0 {
		body.Tags = &tags
	}
	resp := must(e.c.CreateStream(&model.CreateStreamRequest{Body: body}))(t)
	if resp.HttpStatusCode != http.StatusCreated {
		t.Errorf("CreateStream status = %d, want 201", resp.HttpStatusCode)
	}
}

func (e *sdkEnv) showStream(t *testing.T, name string) *model.ShowStreamResponse {
	t.Helper()
	return must(e.c.ShowStream(&model.ShowStreamRequest{StreamName: name}))(t)
}

func (e *sdkEnv) scale(t *testing.T, name string, target int32) {
	t.Helper()
	must(e.c.UpdatePartitionCount(&model.UpdatePartitionCountRequest{
		StreamName: name,
		Body:       &model.UpdatePartitionCountReq{StreamName: name, TargetPartitionCount: target},
	}))(t)
}

// partitionView is what a test checks of one ShowStream partition.
type partitionView struct{ id, status, seqRange, hashRange string }

func partitionViews(t *testing.T, resp *model.ShowStreamResponse) []partitionView {
	t.Helper()
	var out []partitionView
	for _, p := range val(t, "partitions", resp.Partitions) {
		out = append(out, partitionView{
			id:        val(t, "partition_id", p.PartitionId),
			status:    val(t, "status", p.Status).Value(),
			seqRange:  val(t, "sequence_number_range", p.SequenceNumberRange),
			hashRange: val(t, "hash_range", p.HashRange),
		})
	}
	return out
}

func TestSDKStreams(t *testing.T) {
	e := newSDKEnv(t)
	created := e.clock.ms()
	e.createStream(t, "orders", 3, 48, model.Tag{Key: ptr("format"), Value: ptr("kafka")})
	for _, name := range []string{"s-1", "s-2", "s-3", "s-4"} {
		e.createStream(t, name, 1, 24)
	}

	t.Run("ShowStream", func(t *testing.T) {
		resp := e.showStream(t, "orders")
		if got := val(t, "stream_name", resp.StreamName); got != "orders" {
			t.Errorf("stream_name = %q", got)
		}
		if val(t, "stream_id", resp.StreamId) == "" {
			t.Error("stream_id is empty")
		}
		if got := val(t, "create_time", resp.CreateTime); got != created {
			t.Errorf("create_time = %d, want %d", got, created)
		}
		if got := val(t, "status", resp.Status).Value(); got != "RUNNING" {
			t.Errorf("status = %q", got)
		}
		if got := val(t, "stream_type", resp.StreamType).Value(); got != "COMMON" {
			t.Errorf("stream_type = %q", got)
		}
		if got := val(t, "data_type", resp.DataType).Value(); got != "BLOB" {
			t.Errorf("data_type = %q", got)
		}
		if got := val(t, "retention_period", resp.RetentionPeriod); got != 48 {
			t.Errorf("retention_period = %d, want 48", got)
		}
		tags := val(t, "tags", resp.Tags)
		if len(tags) != 1 || val(t, "tag key", tags[0].Key) != "format" || val(t, "tag value", tags[0].Value) != "kafka" {
			t.Errorf("tags = %+v", tags)
		}
		if w, r := val(t, "writable", resp.WritablePartitionCount), val(t, "readable", resp.ReadablePartitionCount); w != 3 || r != 3 {
			t.Errorf("writable, readable = %d, %d, want 3, 3", w, r)
		}
		if val(t, "has_more_partitions", resp.HasMorePartitions) {
			t.Error("has_more_partitions with every partition listed")
		}
		got := partitionViews(t, resp)
		want := []partitionView{
			{"shardId-0000000000", "ACTIVE", "[0 : 0]", "[0 : 3074457345618258601]"},
			{"shardId-0000000001", "ACTIVE", "[0 : 0]", "[3074457345618258602 : 6148914691236517203]"},
			{"shardId-0000000002", "ACTIVE", "[0 : 0]", "[6148914691236517204 : 9223372036854775807]"},
		}
		if !slices.Equal(got, want) {
			t.Errorf("partitions = %+v\nwant %+v", got, want)
		}
	})

	t.Run("ShowStreamPartitionPages", func(t *testing.T) {
		resp := must(e.c.ShowStream(&model.ShowStreamRequest{StreamName: "orders", LimitPartitions: ptr(int32(2))}))(t)
		if ids := partitionViews(t, resp); len(ids) != 2 || !val(t, "has_more_partitions", resp.HasMorePartitions) {
			t.Fatalf("first page = %+v, has_more %v", ids, resp.HasMorePartitions)
		}
		resp = must(e.c.ShowStream(&model.ShowStreamRequest{
			StreamName:       "orders",
			StartPartitionId: ptr("shardId-0000000001"),
			LimitPartitions:  ptr(int32(2)),
		}))(t)
		ids := partitionViews(t, resp)
		if len(ids) != 1 || ids[0].id != "shardId-0000000002" || val(t, "has_more_partitions", resp.HasMorePartitions) {
			t.Errorf("page after shardId-0000000001 = %+v, has_more %v", ids, resp.HasMorePartitions)
		}
	})

	t.Run("ListStreamsPages", func(t *testing.T) {
		var names []string
		var start *string
		for range 5 {
			resp := must(e.c.ListStreams(&model.ListStreamsRequest{Limit: ptr(int32(2)), StartStreamName: start}))(t)
			if got := val(t, "total_number", resp.TotalNumber); got != 5 {
				t.Errorf("total_number = %d, want 5", got)
			}
			page := val(t, "stream_names", resp.StreamNames)
			infos := val(t, "stream_info_list", resp.StreamInfoList)
			if len(infos) != len(page) {
				t.Fatalf("stream_info_list has %d entries for %d names", len(infos), len(page))
			}
			for i, info := range infos {
				if val(t, "stream_info_list[].stream_name", info.StreamName) != page[i] {
					t.Errorf("stream_info_list[%d] = %q, stream_names[%d] = %q", i, *info.StreamName, i, page[i])
				}
			}
			names = append(names, page...)
			if !val(t, "has_more_streams", resp.HasMoreStreams) {
				break
			}
			start = &page[len(page)-1]
		}
		if want := []string{"orders", "s-1", "s-2", "s-3", "s-4"}; !slices.Equal(names, want) {
			t.Errorf("streams over all pages = %q, want %q", names, want)
		}

		resp := must(e.c.ListStreams(&model.ListStreamsRequest{Limit: ptr(int32(1))}))(t)
		info := val(t, "stream_info_list", resp.StreamInfoList)[0]
		if got := val(t, "create_time", info.CreateTime); got != created {
			t.Errorf("create_time = %d, want %d", got, created)
		}
		if got := val(t, "retention_period", info.RetentionPeriod); got != 48 {
			t.Errorf("retention_period = %d, want 48", got)
		}
		if got := val(t, "partition_count", info.PartitionCount); got != 3 {
			t.Errorf("partition_count = %d, want 3", got)
		}
		if val(t, "status", info.Status).Value() != "RUNNING" || val(t, "stream_type", info.StreamType).Value() != "COMMON" || val(t, "data_type", info.DataType).Value() != "BLOB" {
			t.Errorf("status, stream_type, data_type = %v, %v, %v", info.Status, info.StreamType, info.DataType)
		}
		if tags := val(t, "tags", info.Tags); len(tags) != 1 || *tags[0].Key != "format" {
			t.Errorf("tags = %+v", tags)
		}
	})

	t.Run("UpdatePartitionCount", func(t *testing.T) {
		e.clock.advance(time.Second)
		out := e.clock.ms()
		e.scale(t, "orders", 5)
		e.clock.advance(time.Second)
		in := e.clock.ms()
		e.scale(t, "orders", 2)

		resp := e.showStream(t, "orders")
		if w, r := val(t, "writable", resp.WritablePartitionCount), val(t, "readable", resp.ReadablePartitionCount); w != 2 || r != 5 {
			t.Errorf("writable, readable = %d, %d, want 2, 5", w, r)
		}
		var statuses []string
		for _, p := range partitionViews(t, resp) {
			statuses = append(statuses, p.status)
			if p.status == "DELETED" && p.hashRange != "[-1 : -1]" {
				t.Errorf("DELETED %s has hash_range %q, want [-1 : -1]", p.id, p.hashRange)
			}
		}
		if want := []string{"ACTIVE", "ACTIVE", "DELETED", "DELETED", "DELETED"}; !slices.Equal(statuses, want) {
			t.Errorf("partition statuses = %q, want %q", statuses, want)
		}
		updates := val(t, "update_partition_counts", resp.UpdatePartitionCounts)
		if len(updates) != 2 {
			t.Fatalf("update_partition_counts = %+v, want 2 entries", updates)
		}
		for i, want := range []struct {
			at          int64
			src, target int32
		}{{out, 3, 5}, {in, 5, 2}} {
			u := updates[i]
			if val(t, "create_timestamp", u.CreateTimestamp) != want.at ||
				val(t, "src_partition_count", u.SrcPartitionCount) != want.src ||
				val(t, "target_partition_count", u.TargetPartitionCount) != want.target {
				t.Errorf("update %d = {%d %d %d}, want %+v", i, *u.CreateTimestamp, *u.SrcPartitionCount, *u.TargetPartitionCount, want)
			}
			if u.ResultMsg != nil {
				t.Errorf("update %d has result_msg %d; the SDK types it int32, DIS sends text", i, *u.ResultMsg)
			}
		}
		if got := val(t, "last_modified_time", resp.LastModifiedTime); got != in {
			t.Errorf("last_modified_time = %d, want %d", got, in)
		}

		list := must(e.c.ListStreams(&model.ListStreamsRequest{Limit: ptr(int32(1))}))(t)
		if got := val(t, "partition_count", val(t, "stream_info_list", list.StreamInfoList)[0].PartitionCount); got != 2 {
			t.Errorf("ListStreams partition_count = %d, want the 2 ACTIVE partitions", got)
		}
	})

	t.Run("UpdateStream", func(t *testing.T) {
		must(e.c.UpdateStream(&model.UpdateStreamRequest{
			StreamName: "orders",
			Body:       &model.UpdateStreamReq{StreamName: "orders", DataDuration: ptr(int32(72))},
		}))(t)
		if got := val(t, "retention_period", e.showStream(t, "orders").RetentionPeriod); got != 72 {
			t.Errorf("retention_period after UpdateStream = %d, want 72", got)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		_, err := e.c.CreateStream(&model.CreateStreamRequest{Body: &model.CreateStreamReq{StreamName: "orders", PartitionCount: 1}})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4307")
		_, err = e.c.ShowStream(&model.ShowStreamRequest{StreamName: "missing"})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4301")
		_, err = e.c.UpdatePartitionCount(&model.UpdatePartitionCountRequest{
			StreamName: "missing",
			Body:       &model.UpdatePartitionCountReq{StreamName: "missing", TargetPartitionCount: 2},
		})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4301")
	})

	t.Run("DeleteStream", func(t *testing.T) {
		resp := must(e.c.DeleteStream(&model.DeleteStreamRequest{StreamName: "s-4"}))(t)
		if resp.HttpStatusCode != http.StatusNoContent {
			t.Errorf("DeleteStream status = %d, want 204", resp.HttpStatusCode)
		}
		_, err := e.c.ShowStream(&model.ShowStreamRequest{StreamName: "s-4"})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4301")
		_, err = e.c.DeleteStream(&model.DeleteStreamRequest{StreamName: "s-4"})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4301")
	})
}

// sdkRecord is what a test checks of one record read through the SDK.
type sdkRecord struct {
	seq, key, data, tsType string
	ts                     int64
}

func (e *sdkEnv) send(t *testing.T, stream string, entries ...model.PutRecordsRequestEntry) []model.PutRecordsResultEntry {
	t.Helper()
	resp := must(e.c.SendRecords(&model.SendRecordsRequest{Body: &model.PutRecordsRequest{StreamName: stream, Records: entries}}))(t)
	if got := val(t, "failed_record_count", resp.FailedRecordCount); got != 0 {
		t.Fatalf("failed_record_count = %d, records %+v", got, *resp.Records)
	}
	return val(t, "records", resp.Records)
}

func entry(data, partitionID, key string) model.PutRecordsRequestEntry {
	en := model.PutRecordsRequestEntry{Data: base64.StdEncoding.EncodeToString([]byte(data))}
	if partitionID != "" {
		en.PartitionId = &partitionID
	}
	if key != "" {
		en.PartitionKey = &key
	}
	return en
}

func (e *sdkEnv) cursor(t *testing.T, req *model.ShowCursorRequest) string {
	t.Helper()
	return val(t, "partition_cursor", must(e.c.ShowCursor(req))(t).PartitionCursor)
}

// consume reads once from cursor and returns the records and the next cursor.
func (e *sdkEnv) consume(t *testing.T, cursor string, maxBytes *int32) ([]sdkRecord, string) {
	t.Helper()
	resp := must(e.c.ConsumeRecords(&model.ConsumeRecordsRequest{PartitionCursor: cursor, MaxFetchBytes: maxBytes}))(t)
	var out []sdkRecord
	for _, r := range val(t, "records", resp.Records) {
		data, err := base64.StdEncoding.DecodeString(val(t, "data", r.Data))
		if err != nil {
			t.Fatalf("record data %q is not base64: %v", *r.Data, err)
		}
		rec := sdkRecord{
			seq:    val(t, "sequence_number", r.SequenceNumber),
			data:   string(data),
			ts:     val(t, "timestamp", r.Timestamp),
			tsType: val(t, "timestamp_type", r.TimestampType),
		}
		if r.PartitionKey != nil {
			rec.key = *r.PartitionKey
		}
		out = append(out, rec)
	}
	next := val(t, "next_partition_cursor", resp.NextPartitionCursor)
	if next == "" {
		t.Fatal("next_partition_cursor is empty")
	}
	return out, next
}

func seqs(recs []sdkRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.seq)
	}
	return out
}

func TestSDKRecords(t *testing.T) {
	e := newSDKEnv(t)
	e.createStream(t, "events", 3, 24)
	cursorType := model.GetShowCursorRequestCursorTypeEnum()

	// Partition 0 gets three records one second apart, so AT_TIMESTAMP has
	// distinct times to find.
	var times []int64
	for i, en := range []model.PutRecordsRequestEntry{
		entry("a", "shardId-0000000000", "k-a"),
		entry("b", "0", ""),
		entry("c", "shardId-0000000000", "k-c"),
	} {
		times = append(times, e.clock.ms())
		res := e.send(t, "events", en)
		if len(res) != 1 || val(t, "partition_id", res[0].PartitionId) != "shardId-0000000000" || val(t, "sequence_number", res[0].SequenceNumber) != fmt.Sprint(i) {
			t.Fatalf("put %d answered %+v", i, res)
		}
		if res[0].ErrorCode != nil {
			t.Errorf("put %d has error_code %q", i, *res[0].ErrorCode)
		}
		e.clock.advance(time.Second)
	}
	want := []sdkRecord{
		{seq: "0", key: "k-a", data: "a", tsType: "CreateTime", ts: times[0]},
		{seq: "1", data: "b", tsType: "CreateTime", ts: times[1]},
		{seq: "2", key: "k-c", data: "c", tsType: "CreateTime", ts: times[2]},
	}

	t.Run("PartitionKeyAndForms", func(t *testing.T) {
		// "user-1" hashes into partition 2 of 3 (the test vector of docs/dis-api.md §2).
		res := e.send(t, "events", entry("u", "", "user-1"), entry("x", "1", ""), entry("y", "shardId-0000000001", ""))
		var got []string
		for _, r := range res {
			got = append(got, val(t, "partition_id", r.PartitionId)+"/"+val(t, "sequence_number", r.SequenceNumber))
		}
		if want := []string{"shardId-0000000002/0", "shardId-0000000001/0", "shardId-0000000001/1"}; !slices.Equal(got, want) {
			t.Errorf("results = %q, want %q", got, want)
		}
		if got := partitionViews(t, e.showStream(t, "events")); got[0].seqRange != "[0 : 3]" || got[1].seqRange != "[0 : 2]" || got[2].seqRange != "[0 : 1]" {
			t.Errorf("sequence_number_range = %+v", got)
		}
	})

	t.Run("TRIM_HORIZON", func(t *testing.T) {
		recs, _ := e.consume(t, e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "shardId-0000000000", CursorType: ptr(cursorType.TRIM_HORIZON)}), nil)
		if !slices.Equal(recs, want) {
			t.Errorf("records = %+v\nwant %+v", recs, want)
		}
	})

	t.Run("AT_SEQUENCE_NUMBER", func(t *testing.T) {
		recs, _ := e.consume(t, e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.AT_SEQUENCE_NUMBER), StartingSequenceNumber: ptr("1")}), nil)
		if !slices.Equal(recs, want[1:]) {
			t.Errorf("records = %+v\nwant %+v", recs, want[1:])
		}
	})

	t.Run("AFTER_SEQUENCE_NUMBER", func(t *testing.T) {
		recs, _ := e.consume(t, e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.AFTER_SEQUENCE_NUMBER), StartingSequenceNumber: ptr("1")}), nil)
		if !slices.Equal(recs, want[2:]) {
			t.Errorf("records = %+v\nwant %+v", recs, want[2:])
		}
	})

	t.Run("AT_TIMESTAMP", func(t *testing.T) {
		recs, _ := e.consume(t, e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.AT_TIMESTAMP), Timestamp: ptr(times[1] - 1)}), nil)
		if !slices.Equal(recs, want[1:]) {
			t.Errorf("records = %+v\nwant %+v", recs, want[1:])
		}
		recs, _ = e.consume(t, e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.AT_TIMESTAMP), Timestamp: ptr(times[2] + 1)}), nil)
		if len(recs) != 0 {
			t.Errorf("AT_TIMESTAMP after the newest record read %+v", recs)
		}
	})

	t.Run("LATEST", func(t *testing.T) {
		c := e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.LATEST)})
		recs, next := e.consume(t, c, nil)
		if len(recs) != 0 {
			t.Fatalf("LATEST read old records %+v", recs)
		}
		at := e.clock.ms()
		e.send(t, "events", entry("d", "0", "k-d"))
		recs, _ = e.consume(t, next, nil)
		if want := []sdkRecord{{seq: "3", key: "k-d", data: "d", tsType: "CreateTime", ts: at}}; !slices.Equal(recs, want) {
			t.Errorf("after LATEST read %+v, want %+v", recs, want)
		}
	})

	t.Run("MaxFetchBytes", func(t *testing.T) {
		c := e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.TRIM_HORIZON)})
		// As DIS does: nothing when the next record is larger than
		// max_fetch_bytes, and the next cursor is where this one was.
		recs, next := e.consume(t, c, ptr(int32(1)))
		if len(recs) != 0 {
			t.Fatalf("max_fetch_bytes 1 read %q, want nothing", seqs(recs))
		}
		recs, _ = e.consume(t, next, nil)
		if got := seqs(recs); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
			t.Errorf("next cursor read %q, want 0 1 2 3", got)
		}
	})

	t.Run("AtNextSequenceNumber", func(t *testing.T) {
		recs, _ := e.consume(t, e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", StartingSequenceNumber: ptr("4")}), nil)
		if len(recs) != 0 {
			t.Errorf("cursor at the next sequence number read %+v", recs)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		_, err := e.c.ShowCursor(&model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.AT_SEQUENCE_NUMBER), StartingSequenceNumber: ptr("5")})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4224")
		_, err = e.c.ShowCursor(&model.ShowCursorRequest{StreamName: "missing", PartitionId: "0", CursorType: ptr(cursorType.TRIM_HORIZON)})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4301")
		_, err = e.c.SendRecords(&model.SendRecordsRequest{Body: &model.PutRecordsRequest{StreamName: "missing", Records: []model.PutRecordsRequestEntry{entry("z", "0", "")}}})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4301")

		c := e.cursor(t, &model.ShowCursorRequest{StreamName: "events", PartitionId: "0", CursorType: ptr(cursorType.TRIM_HORIZON)})
		e.clock.advance(5*time.Minute + time.Second)
		_, err = e.c.ConsumeRecords(&model.ConsumeRecordsRequest{PartitionCursor: c})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4225")
	})
}

func TestSDKAppsAndCheckpoints(t *testing.T) {
	e := newSDKEnv(t)
	e.createStream(t, "events", 2, 24)
	e.send(t, "events", entry("a", "0", ""), entry("b", "0", ""), entry("c", "0", ""), entry("d", "1", ""))
	lastRead := model.GetCommitCheckpointReqCheckpointTypeEnum().LAST_READ

	created := e.clock.ms()
	for _, name := range []string{"app-a", "app-b", "app-c"} {
		resp := must(e.c.CreateApp(&model.CreateAppRequest{Body: &model.CreateAppReq{AppName: name}}))(t)
		if resp.HttpStatusCode != http.StatusCreated {
			t.Errorf("CreateApp status = %d, want 201", resp.HttpStatusCode)
		}
	}

	t.Run("CommitAndShowCheckpoint", func(t *testing.T) {
		resp := must(e.c.CommitCheckpoint(&model.CommitCheckpointRequest{Body: &model.CommitCheckpointReq{
			AppName: "app-a", CheckpointType: lastRead, StreamName: "events",
			PartitionId: "shardId-0000000000", SequenceNumber: "2", Metadata: ptr("meta"),
		}}))(t)
		if resp.HttpStatusCode != http.StatusCreated {
			t.Errorf("CommitCheckpoint status = %d, want 201", resp.HttpStatusCode)
		}
		cp := must(e.c.ShowCheckpoint(&model.ShowCheckpointRequest{
			StreamName: "events", PartitionId: "0", AppName: "app-a",
			CheckpointType: model.GetShowCheckpointRequestCheckpointTypeEnum().LAST_READ,
		}))(t)
		if seq, meta := val(t, "sequence_number", cp.SequenceNumber), val(t, "metadata", cp.Metadata); seq != "2" || meta != "meta" {
			t.Errorf("checkpoint = %q, %q, want 2, meta", seq, meta)
		}
		cp = must(e.c.ShowCheckpoint(&model.ShowCheckpointRequest{
			StreamName: "events", PartitionId: "1", AppName: "app-a",
			CheckpointType: model.GetShowCheckpointRequestCheckpointTypeEnum().LAST_READ,
		}))(t)
		if seq := val(t, "sequence_number", cp.SequenceNumber); seq != "-1" {
			t.Errorf("checkpoint never committed = %q, want -1", seq)
		}
	})

	t.Run("ShowApp", func(t *testing.T) {
		app := must(e.c.ShowApp(&model.ShowAppRequest{AppName: "app-a"}))(t)
		if got := val(t, "app_name", app.AppName); got != "app-a" {
			t.Errorf("app_name = %q", got)
		}
		if val(t, "app_id", app.AppId) == "" {
			t.Error("app_id is empty")
		}
		if got := val(t, "create_time", app.CreateTime); got != created {
			t.Errorf("create_time = %d, want %d", got, created)
		}
		if got := val(t, "commit_checkpoint_stream_names", app.CommitCheckpointStreamNames); !slices.Equal(got, []string{"events"}) {
			t.Errorf("commit_checkpoint_stream_names = %q, want [events]", got)
		}
	})

	t.Run("ListAppPages", func(t *testing.T) {
		var names []string
		var start *string
		for range 4 {
			resp := must(e.c.ListApp(&model.ListAppRequest{Limit: ptr(int32(2)), StartAppName: start}))(t)
			if got := val(t, "total_number", resp.TotalNumber); got != 3 {
				t.Errorf("total_number = %d, want 3", got)
			}
			apps := val(t, "apps", resp.Apps)
			for _, a := range apps {
				names = append(names, val(t, "app_name", a.AppName))
				if val(t, "create_time", a.CreateTime) != created || val(t, "app_id", a.AppId) == "" {
					t.Errorf("app %+v", a)
				}
			}
			if !val(t, "has_more_app", resp.HasMoreApp) {
				break
			}
			start = apps[len(apps)-1].AppName
		}
		if want := []string{"app-a", "app-b", "app-c"}; !slices.Equal(names, want) {
			t.Errorf("apps over all pages = %q, want %q", names, want)
		}

		resp := must(e.c.ListApp(&model.ListAppRequest{StreamName: ptr("events")}))(t)
		apps := val(t, "apps", resp.Apps)
		if len(apps) != 1 || val(t, "app_name", apps[0].AppName) != "app-a" || val(t, "total_number", resp.TotalNumber) != 1 {
			t.Errorf("apps with checkpoints on events = %+v, total %v, want app-a alone", apps, resp.TotalNumber)
		}
	})

	t.Run("ShowConsumerState", func(t *testing.T) {
		resp := must(e.c.ShowConsumerState(&model.ShowConsumerStateRequest{
			AppName: "app-a", StreamName: "events",
			CheckpointType: model.GetShowConsumerStateRequestCheckpointTypeEnum().LAST_READ,
		}))(t)
		if val(t, "app_name", resp.AppName) != "app-a" || val(t, "stream_name", resp.StreamName) != "events" || val(t, "has_more", resp.HasMore) {
			t.Errorf("app_name, stream_name, has_more = %v, %v, %v", *resp.AppName, *resp.StreamName, *resp.HasMore)
		}
		type state struct {
			id, seq, cpType, status string
			latest, earliest        int64
		}
		var got []state
		for _, s := range val(t, "partition_consuming_states", resp.PartitionConsumingStates) {
			got = append(got, state{
				id:       val(t, "partition_id", s.PartitionId),
				seq:      val(t, "sequence_number", s.SequenceNumber),
				cpType:   val(t, "checkpoint_type", s.CheckpointType).Value(),
				status:   val(t, "status", s.Status).Value(),
				latest:   val(t, "latest_offset", s.LatestOffset),
				earliest: val(t, "earliest_offset", s.EarliestOffset),
			})
		}
		want := []state{
			{id: "shardId-0000000000", seq: "2", cpType: "LAST_READ", status: "ACTIVE", latest: 3},
			{id: "shardId-0000000001", seq: "-1", cpType: "LAST_READ", status: "ACTIVE", latest: 1},
		}
		if !slices.Equal(got, want) {
			t.Errorf("partition_consuming_states = %+v\nwant %+v", got, want)
		}

		resp = must(e.c.ShowConsumerState(&model.ShowConsumerStateRequest{
			AppName: "app-a", StreamName: "events", Limit: ptr(int32(1)), StartPartitionId: ptr("shardId-0000000000"),
			CheckpointType: model.GetShowConsumerStateRequestCheckpointTypeEnum().LAST_READ,
		}))(t)
		page := val(t, "partition_consuming_states", resp.PartitionConsumingStates)
		if len(page) != 1 || val(t, "partition_id", page[0].PartitionId) != "shardId-0000000001" || val(t, "has_more", resp.HasMore) {
			t.Errorf("page after shardId-0000000000 = %+v, has_more %v", page, *resp.HasMore)
		}
	})

	t.Run("DeleteCheckpoint", func(t *testing.T) {
		resp := must(e.c.DeleteCheckpoint(&model.DeleteCheckpointRequest{
			StreamName: "events", AppName: "app-a", PartitionId: ptr("0"),
			CheckpointType: model.GetDeleteCheckpointRequestCheckpointTypeEnum().LAST_READ,
		}))(t)
		if resp.HttpStatusCode != http.StatusNoContent {
			t.Errorf("DeleteCheckpoint status = %d, want 204", resp.HttpStatusCode)
		}
		cp := must(e.c.ShowCheckpoint(&model.ShowCheckpointRequest{
			StreamName: "events", PartitionId: "0", AppName: "app-a",
			CheckpointType: model.GetShowCheckpointRequestCheckpointTypeEnum().LAST_READ,
		}))(t)
		if seq := val(t, "sequence_number", cp.SequenceNumber); seq != "-1" {
			t.Errorf("checkpoint after delete = %q, want -1", seq)
		}

		for _, n := range []string{"0", "1"} {
			must(e.c.CommitCheckpoint(&model.CommitCheckpointRequest{Body: &model.CommitCheckpointReq{
				AppName: "app-c", CheckpointType: lastRead, StreamName: "events", PartitionId: n, SequenceNumber: "1",
			}}))(t)
		}
		must(e.c.DeleteCheckpoint(&model.DeleteCheckpointRequest{
			StreamName: "events", AppName: "app-c",
			CheckpointType: model.GetDeleteCheckpointRequestCheckpointTypeEnum().LAST_READ,
		}))(t)
		for _, n := range []string{"0", "1"} {
			cp := must(e.c.ShowCheckpoint(&model.ShowCheckpointRequest{
				StreamName: "events", PartitionId: n, AppName: "app-c",
				CheckpointType: model.GetShowCheckpointRequestCheckpointTypeEnum().LAST_READ,
			}))(t)
			if seq := val(t, "sequence_number", cp.SequenceNumber); seq != "-1" {
				t.Errorf("partition %s after deleting without partition_id = %q, want -1", n, seq)
			}
		}
	})

	t.Run("Errors", func(t *testing.T) {
		_, err := e.c.CreateApp(&model.CreateAppRequest{Body: &model.CreateAppReq{AppName: "app-a"}})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4330")
		_, err = e.c.ShowApp(&model.ShowAppRequest{AppName: "missing"})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4332")
		_, err = e.c.CommitCheckpoint(&model.CommitCheckpointRequest{Body: &model.CommitCheckpointReq{
			AppName: "missing", CheckpointType: lastRead, StreamName: "events", PartitionId: "0", SequenceNumber: "1",
		}})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4332")
		_, err = e.c.ShowConsumerState(&model.ShowConsumerStateRequest{
			AppName: "app-a", StreamName: "missing",
			CheckpointType: model.GetShowConsumerStateRequestCheckpointTypeEnum().LAST_READ,
		})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4301")
	})

	t.Run("DeleteApp", func(t *testing.T) {
		resp := must(e.c.DeleteApp(&model.DeleteAppRequest{AppName: "app-b"}))(t)
		if resp.HttpStatusCode != http.StatusNoContent {
			t.Errorf("DeleteApp status = %d, want 204", resp.HttpStatusCode)
		}
		_, err := e.c.ShowApp(&model.ShowAppRequest{AppName: "app-b"})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4332")
		_, err = e.c.DeleteApp(&model.DeleteAppRequest{AppName: "app-b"})
		wantServiceError(t, err, http.StatusBadRequest, "DIS.4332")
	})
}

// sdkModels pairs every JSON body type of disclient/model.go with the SDK
// model it must match; nested types are compared through their fields.
var sdkModels = []struct{ ours, sdk any }{
	{disclient.Tag{}, model.Tag{}},
	{disclient.CreateStreamRequest{}, model.CreateStreamReq{}},
	{disclient.ListStreamsResponse{}, model.ListStreamsResponse{}},
	{disclient.StreamInfo{}, model.StreamInfo{}},
	{disclient.DescribeStreamResponse{}, model.ShowStreamResponse{}},
	{disclient.PartitionResult{}, model.PartitionResult{}},
	{disclient.PartitionUpdate{}, model.UpdatePartitionCount{}},
	{disclient.UpdatePartitionCountRequest{}, model.UpdatePartitionCountReq{}},
	{disclient.UpdateStreamRequest{}, model.UpdateStreamReq{}},
	{disclient.PutRecordsRequest{}, model.PutRecordsRequest{}},
	{disclient.PutRecordsEntry{}, model.PutRecordsRequestEntry{}},
	{disclient.PutRecordsResponse{}, model.SendRecordsResponse{}},
	{disclient.PutRecordsResult{}, model.PutRecordsResultEntry{}},
	{disclient.GetCursorResponse{}, model.ShowCursorResponse{}},
	{disclient.GetRecordsResponse{}, model.ConsumeRecordsResponse{}},
	{disclient.Record{}, model.Record{}},
	{disclient.CreateAppRequest{}, model.CreateAppReq{}},
	{disclient.App{}, model.DescribeAppResult{}},
	{disclient.App{}, model.ShowAppResponse{}},
	{disclient.ListAppsResponse{}, model.ListAppResponse{}},
	{disclient.CommitCheckpointRequest{}, model.CommitCheckpointReq{}},
	{disclient.GetCheckpointResponse{}, model.ShowCheckpointResponse{}},
	{disclient.ConsumerStateResponse{}, model.ShowConsumerStateResponse{}},
	{disclient.PartitionConsumingState{}, model.PartitionConsumingStates{}},
}

// sdkOnlyFields are the SDK's JSON fields that disclient does not model, as
// "SDKType.json_name", each for a reason: disgw neither sends nor needs them,
// or (result_msg) sending one would break the SDK.
var sdkOnlyFields = map[string]string{
	"CreateStreamReq.auto_scale_min_partition_count":    "auto scaling is accepted and ignored",
	"CreateStreamReq.auto_scale_max_partition_count":    "auto scaling is accepted and ignored",
	"CreateStreamReq.csv_properties":                    "disgw streams are BLOB",
	"CreateStreamReq.sys_tags":                          "enterprise projects are not served",
	"StreamInfo.auto_scale_enabled":                     "auto scaling is accepted and ignored",
	"StreamInfo.auto_scale_min_partition_count":         "auto scaling is accepted and ignored",
	"StreamInfo.auto_scale_max_partition_count":         "auto scaling is accepted and ignored",
	"StreamInfo.sys_tags":                               "enterprise projects are not served",
	"ShowStreamResponse.data_schema":                    "data_schema is accepted and ignored",
	"ShowStreamResponse.compression_format":             "compression_format is accepted and ignored",
	"ShowStreamResponse.csv_properties":                 "disgw streams are BLOB",
	"ShowStreamResponse.sys_tags":                       "enterprise projects are not served",
	"ShowStreamResponse.auto_scale_min_partition_count": "auto scaling is accepted and ignored",
	"ShowStreamResponse.auto_scale_max_partition_count": "auto scaling is accepted and ignored",
	"UpdatePartitionCount.result_msg":                   "typed int32 by the SDK, text on DIS: never sent",
	"UpdateStreamReq.auto_scale_enabled":                "auto scaling is accepted and ignored",
	"UpdateStreamReq.auto_scale_min_partition_count":    "auto scaling is accepted and ignored",
	"UpdateStreamReq.auto_scale_max_partition_count":    "auto scaling is accepted and ignored",
}

// oursOnlyFields are disclient's JSON fields the SDK lacks, as
// "SDKType.json_name".
var oursOnlyFields = map[string]string{
	"PutRecordsRequestEntry.timestamp": "sent by the Java SDK and the protobuf body; DIS keeps it as the record time",
}

// TestSDKModelFields compares disclient's JSON bodies with the SDK's models
// field by field: the same JSON names, and types the SDK decodes from what
// disclient encodes (string for SDK enums and base64 data, the same integer
// width, the same nesting).
func TestSDKModelFields(t *testing.T) {
	seen := map[[2]reflect.Type]bool{}
	usedSDKOnly, usedOursOnly := map[string]bool{}, map[string]bool{}
	var diffs []string
	var compare func(ours, sdk reflect.Type, where string)
	compare = func(ours, sdk reflect.Type, where string) {
		for ours.Kind() == reflect.Pointer {
			ours = ours.Elem()
		}
		for sdk.Kind() == reflect.Pointer {
			sdk = sdk.Elem()
		}
		switch {
		case isSDKEnum(sdk):
			if ours.Kind() != reflect.String {
				diffs = append(diffs, fmt.Sprintf("%s: ours %s, SDK enum (a JSON string)", where, ours))
			}
			return
		case ours == reflect.TypeFor[[]byte]():
			if sdk.Kind() != reflect.String {
				diffs = append(diffs, fmt.Sprintf("%s: ours base64 []byte, SDK %s", where, sdk))
			}
			return
		case ours.Kind() != sdk.Kind():
			diffs = append(diffs, fmt.Sprintf("%s: ours %s, SDK %s", where, ours, sdk))
			return
		case ours.Kind() == reflect.Slice:
			compare(ours.Elem(), sdk.Elem(), where+"[]")
			return
		case ours.Kind() != reflect.Struct:
			return
		}
		if seen[[2]reflect.Type{ours, sdk}] {
			return
		}
		seen[[2]reflect.Type{ours, sdk}] = true
		ourFields, sdkFields := jsonFields(ours), jsonFields(sdk)
		for name, of := range ourFields {
			key := sdk.Name() + "." + name
			sf, ok := sdkFields[name]
			if !ok {
				if _, known := oursOnlyFields[key]; known {
					usedOursOnly[key] = true
				} else {
					diffs = append(diffs, fmt.Sprintf("%s.%s (%s.%s): not in the SDK's %s", ours.Name(), name, ours.Name(), of.Name, sdk.Name()))
				}
				continue
			}
			compare(of.Type, sf.Type, ours.Name()+"."+name)
		}
		for name := range sdkFields {
			key := sdk.Name() + "." + name
			if _, ok := ourFields[name]; ok {
				continue
			}
			if _, known := sdkOnlyFields[key]; known {
				usedSDKOnly[key] = true
			} else {
				diffs = append(diffs, fmt.Sprintf("%s: SDK field missing from disclient's %s", key, ours.Name()))
			}
		}
	}
	for _, m := range sdkModels {
		compare(reflect.TypeOf(m.ours), reflect.TypeOf(m.sdk), reflect.TypeOf(m.ours).Name())
	}
	slices.Sort(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
	for key := range sdkOnlyFields {
		if !usedSDKOnly[key] {
			t.Errorf("sdkOnlyFields lists %s, which is no longer a difference", key)
		}
	}
	for key := range oursOnlyFields {
		if !usedOursOnly[key] {
			t.Errorf("oursOnlyFields lists %s, which is no longer a difference", key)
		}
	}
}

// isSDKEnum reports whether t is one of the SDK's enum types: a struct
// holding only an unexported string, marshalled as that string.
func isSDKEnum(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.NumField() == 1 && t.Field(0).Name == "value" && t.Field(0).Type.Kind() == reflect.String
}

// jsonFields maps the JSON names of t's fields to the fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}
