package dislocal

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
)

func i32(v int32) *int32 { return &v }

func TestCreateStreamValidation(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		body any
		code string
	}{
		{"empty name", disclient.CreateStreamRequest{PartitionCount: 1}, disclient.CodeInvalidRequest},
		{"bad char", disclient.CreateStreamRequest{StreamName: "a.b", PartitionCount: 1}, disclient.CodeInvalidRequest},
		{"name too long", disclient.CreateStreamRequest{StreamName: strings.Repeat("a", 65), PartitionCount: 1}, disclient.CodeInvalidRequest},
		{"no partitions", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 0}, disclient.CodeInvalidRequest},
		{"too many partitions", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1001}, disclient.CodeInvalidRequest},
		{"short retention", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1, DataDuration: i32(23)}, disclient.CodeInvalidRequest},
		{"long retention", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1, DataDuration: i32(73)}, disclient.CodeInvalidRequest},
		{"bad type", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1, StreamType: "HUGE"}, disclient.CodeInvalidRequest},
		{"bad data type", disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1, DataType: "XML"}, disclient.CodeInvalidRequest},
		{"malformed json", `{"stream_name":`, disclient.CodeInvalidRequest},
		{"wrong json type", `{"stream_name":"s","partition_count":"3"}`, disclient.CodeInvalidRequest},
		{"empty body", "", disclient.CodeEmptyRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fails("POST", v2("/streams"), tc.body, 400, tc.code)
		})
	}
	e.createStream(strings.Repeat("a", 64), 1)
	e.createStream("ok_name-1", 1)
	msg := e.fails("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: "ok_name-1", PartitionCount: 2}, 400, disclient.CodeStreamExists)
	if !strings.Contains(msg, "ok_name-1") {
		t.Errorf("duplicate message %q does not name the stream", msg)
	}
}

func TestDescribeStream(t *testing.T) {
	e := newEnv(t)
	e.must("POST", v2("/streams"), disclient.CreateStreamRequest{
		StreamName: "orders", PartitionCount: 3, DataDuration: i32(48), StreamType: disclient.StreamTypeAdvanced,
		Tags: []disclient.Tag{{Key: "format", Value: "kafka"}},
	}, 201, nil)
	e.putTo("orders", 1, "a", "b")

	raw := e.must("GET", v2("/streams/orders"), nil, 200, nil)
	m := jsonKinds(t, raw)
	wantTypes(t, m, map[string]string{
		"stream_name": "string", "stream_id": "string", "create_time": "number", "last_modified_time": "number",
		"status": "string", "stream_type": "string", "data_type": "string", "retention_period": "number",
		"partitions": "array", "has_more_partitions": "bool", "writable_partition_count": "number",
		"readable_partition_count": "number", "tags": "array",
	})
	for _, part := range m["partitions"].([]any) {
		wantTypes(t, part, map[string]string{"status": "string", "partition_id": "string", "hash_range": "string", "sequence_number_range": "string"})
	}

	d := e.describe("orders", "")
	if d.StreamID == "" || d.Status != "RUNNING" || d.StreamType != "ADVANCED" || d.DataType != "BLOB" || d.RetentionPeriod != 48 {
		t.Errorf("describe = %+v", d)
	}
	if d.CreateTime != e.clock.Now().UnixMilli() {
		t.Errorf("create_time %d, want %d", d.CreateTime, e.clock.Now().UnixMilli())
	}
	if d.WritablePartitionCount != 3 || d.ReadablePartitionCount != 3 || d.HasMorePartitions {
		t.Errorf("counts = %+v", d)
	}
	if !slices.Equal(d.Tags, []disclient.Tag{{Key: "format", Value: "kafka"}}) {
		t.Errorf("tags = %+v", d.Tags)
	}
	want := []disclient.PartitionResult{
		{Status: "ACTIVE", PartitionID: "shardId-0000000000", HashRange: "[0 : 3074457345618258601]", SequenceNumberRange: "[0 : 0]"},
		{Status: "ACTIVE", PartitionID: "shardId-0000000001", HashRange: "[3074457345618258602 : 6148914691236517203]", SequenceNumberRange: "[0 : 2]"},
		{Status: "ACTIVE", PartitionID: "shardId-0000000002", HashRange: "[6148914691236517204 : 9223372036854775807]", SequenceNumberRange: "[0 : 0]"},
	}
	if !slices.Equal(d.Partitions, want) {
		t.Errorf("partitions = %+v\nwant %+v", d.Partitions, want)
	}
	if again := e.describe("orders", ""); again.StreamID != d.StreamID {
		t.Errorf("stream_id changed: %q then %q", d.StreamID, again.StreamID)
	}

	e.fails("GET", v2("/streams/nope"), nil, 400, disclient.CodeStreamNotFound)
	got, raw := e.do("GET", v2("/streams/nope"), nil)
	if got != 400 || string(raw) != `{"errorCode":"DIS.4301","message":"Stream does not exist. [nope]"}` {
		t.Errorf("unknown stream: %d %s", got, raw)
	}
}

func TestDescribeStreamPagination(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 5)
	ids := func(d disclient.DescribeStreamResponse) []string {
		var out []string
		for _, p := range d.Partitions {
			out = append(out, p.PartitionID)
		}
		return out
	}
	d := e.describe("s", "?limit_partitions=2")
	if got := ids(d); !slices.Equal(got, []string{"shardId-0000000000", "shardId-0000000001"}) || !d.HasMorePartitions {
		t.Errorf("page 1 = %v more=%v", got, d.HasMorePartitions)
	}
	d = e.describe("s", "?limit_partitions=2&start_partitionId=shardId-0000000001")
	if got := ids(d); !slices.Equal(got, []string{"shardId-0000000002", "shardId-0000000003"}) || !d.HasMorePartitions {
		t.Errorf("page 2 = %v more=%v", got, d.HasMorePartitions)
	}
	d = e.describe("s", "?limit_partitions=2&start_partitionId=3")
	if got := ids(d); !slices.Equal(got, []string{"shardId-0000000004"}) || d.HasMorePartitions {
		t.Errorf("page 3 = %v more=%v", got, d.HasMorePartitions)
	}
	if d.WritablePartitionCount != 5 {
		t.Errorf("writable count %d on a page, want the stream's 5", d.WritablePartitionCount)
	}
	e.fails("GET", v2("/streams/s?limit_partitions=0"), nil, 400, disclient.CodeInvalidRequest)
	e.fails("GET", v2("/streams/s?limit_partitions=1001"), nil, 400, disclient.CodeInvalidRequest)
	e.fails("GET", v2("/streams/s?start_partitionId=x"), nil, 400, disclient.CodeInvalidPartitionID)
}

func TestListStreams(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"c", "a", "e", "b", "d"} {
		e.createStream(name, 2)
	}
	e.must("POST", "/v2/other-project/streams", disclient.CreateStreamRequest{StreamName: "zz", PartitionCount: 1}, 201, nil)

	raw := e.must("GET", v2("/streams?limit=2"), nil, 200, nil)
	m := jsonKinds(t, raw)
	wantTypes(t, m, map[string]string{"total_number": "number", "stream_names": "array", "has_more_streams": "bool", "stream_info_list": "array"})
	for _, info := range m["stream_info_list"].([]any) {
		wantTypes(t, info, map[string]string{"stream_name": "string", "create_time": "number", "retention_period": "number", "status": "string", "stream_type": "string", "data_type": "string", "partition_count": "number"})
	}

	var names []string
	start := ""
	for page := 0; ; page++ {
		var resp disclient.ListStreamsResponse
		e.must("GET", v2("/streams?limit=2&start_stream_name=%s", start), nil, 200, &resp)
		if resp.TotalNumber != 5 {
			t.Fatalf("total_number %d, want 5", resp.TotalNumber)
		}
		names = append(names, resp.StreamNames...)
		for i, info := range resp.StreamInfoList {
			if info.StreamName != resp.StreamNames[i] || info.PartitionCount != 2 || info.RetentionPeriod != 24 || info.StreamType != "COMMON" {
				t.Errorf("info %+v", info)
			}
		}
		if !resp.HasMoreStreams {
			break
		}
		start = resp.StreamNames[len(resp.StreamNames)-1]
		if page > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if !slices.Equal(names, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("paged names = %v", names)
	}
	var def disclient.ListStreamsResponse
	e.must("GET", v2("/streams"), nil, 200, &def)
	if len(def.StreamNames) != 5 || def.HasMoreStreams {
		t.Errorf("default page = %+v", def)
	}
	e.fails("GET", v2("/streams?limit=101"), nil, 400, disclient.CodeInvalidRequest)
}

func TestDeleteStream(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	e.putTo("s", 0, "old")
	e.must("DELETE", v2("/streams/s"), nil, 204, nil)
	e.fails("GET", v2("/streams/s"), nil, 400, disclient.CodeStreamNotFound)
	e.fails("DELETE", v2("/streams/s"), nil, 400, disclient.CodeStreamNotFound)

	// A new stream of the same name starts empty.
	e.createStream("s", 1)
	if got := e.putTo("s", 0, "new"); got[0] != "0" {
		t.Errorf("first sequence number after re-create = %s", got[0])
	}
	if got := payloads(e.readAll("s", 0)); !slices.Equal(got, []string{"new"}) {
		t.Errorf("records after re-create = %v", got)
	}
}

func TestScaleOutAndIn(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 2)
	scale := func(n int32) {
		e.must("PUT", v2("/streams/s"), disclient.UpdatePartitionCountRequest{StreamName: "s", TargetPartitionCount: n}, 200, nil)
	}
	scale(4)
	e.putTo("s", 3, "p3-a")
	d := e.describe("s", "")
	if d.WritablePartitionCount != 4 || d.ReadablePartitionCount != 4 || len(d.Partitions) != 4 {
		t.Fatalf("after scale out: %+v", d)
	}

	scale(2)
	d = e.describe("s", "")
	if d.WritablePartitionCount != 2 || d.ReadablePartitionCount != 4 {
		t.Fatalf("after scale in: writable %d readable %d", d.WritablePartitionCount, d.ReadablePartitionCount)
	}
	for i, part := range d.Partitions {
		wantStatus, wantRange := "ACTIVE", true
		if i >= 2 {
			wantStatus, wantRange = "DELETED", false
		}
		if part.Status != wantStatus || (part.HashRange == "[-1 : -1]") == wantRange {
			t.Errorf("partition %d: %+v", i, part)
		}
	}
	if d.Partitions[1].HashRange != "[4611686018427387903 : 9223372036854775807]" {
		t.Errorf("hash range of the last ACTIVE partition = %s", d.Partitions[1].HashRange)
	}
	if len(d.UpdatePartitionCounts) != 2 ||
		d.UpdatePartitionCounts[0].SrcPartitionCount != 2 || d.UpdatePartitionCounts[0].TargetPartitionCount != 4 ||
		d.UpdatePartitionCounts[1].SrcPartitionCount != 4 || d.UpdatePartitionCounts[1].TargetPartitionCount != 2 {
		t.Errorf("update_partition_counts = %+v", d.UpdatePartitionCounts)
	}
	raw := e.must("GET", v2("/streams/s"), nil, 200, nil)
	for _, u := range jsonKinds(t, raw)["update_partition_counts"].([]any) {
		if _, has := u.(map[string]any)["result_msg"]; has {
			t.Errorf("update_partition_counts entry has result_msg: %v", u)
		}
	}

	// A DELETED partition refuses writes per record but stays readable.
	resp := e.put("s",
		disclient.PutRecordsEntry{Data: []byte("x"), PartitionID: "3"},
		disclient.PutRecordsEntry{Data: []byte("y"), PartitionID: "1"},
	)
	if resp.FailedRecordCount != 1 || resp.Records[0].ErrorCode != disclient.CodePartitionNotFound || resp.Records[0].PartitionID != "" || resp.Records[1].ErrorCode != "" {
		t.Errorf("put to a DELETED partition: %+v", resp)
	}
	if got := payloads(e.readAll("s", 3)); !slices.Equal(got, []string{"p3-a"}) {
		t.Errorf("DELETED partition reads %v", got)
	}
	// Keyed and unkeyed records only go to ACTIVE partitions.
	for i := range 20 {
		resp := e.put("s", disclient.PutRecordsEntry{Data: []byte("k"), PartitionKey: fmt.Sprint(i)}, disclient.PutRecordsEntry{Data: []byte("rr")})
		for _, r := range resp.Records {
			if r.PartitionID != "shardId-0000000000" && r.PartitionID != "shardId-0000000001" {
				t.Fatalf("record routed to %s after scale in", r.PartitionID)
			}
		}
	}

	// Scaling out again reactivates partition 2; its sequence numbers continue.
	e.putTo("s", 1, "filler")
	scale(3)
	e.putTo("s", 2, "p2-a")
	scale(4)
	if got := e.putTo("s", 3, "p3-b"); got[0] != "1" {
		t.Errorf("reactivated partition continues at %s, want 1", got[0])
	}
	e.fails("PUT", v2("/streams/s"), disclient.UpdatePartitionCountRequest{StreamName: "s", TargetPartitionCount: 0}, 400, disclient.CodeInvalidRequest)
	e.fails("PUT", v2("/streams/nope"), disclient.UpdatePartitionCountRequest{StreamName: "nope", TargetPartitionCount: 2}, 400, disclient.CodeStreamNotFound)
}

func TestUpdateStream(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	e.must("PUT", "/v3/"+project+"/streams/s", disclient.UpdateStreamRequest{StreamName: "s", DataDuration: i32(72), DataType: "JSON"}, 200, nil)
	d := e.describe("s", "")
	if d.RetentionPeriod != 72 || d.DataType != "JSON" {
		t.Errorf("after update: retention %d type %s", d.RetentionPeriod, d.DataType)
	}
	e.fails("PUT", "/v3/"+project+"/streams/s", disclient.UpdateStreamRequest{StreamName: "s", DataDuration: i32(100)}, 400, disclient.CodeInvalidRequest)
	e.fails("PUT", "/v3/"+project+"/streams/nope", disclient.UpdateStreamRequest{StreamName: "nope", DataDuration: i32(24)}, 400, disclient.CodeStreamNotFound)
	e.must("PUT", v2("/streams/s/update"), disclient.UpdateStreamRequest{StreamName: "s", DataDuration: i32(24)}, 200, nil)
	if d := e.describe("s", ""); d.RetentionPeriod != 24 {
		t.Errorf("legacy update path: retention %d", d.RetentionPeriod)
	}
}

func TestRoutingAndErrorBodies(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 1)
	// Trailing slashes and JSON content type on a bodyless GET/DELETE.
	e.must("GET", v2("/streams/s/"), nil, 200, nil)
	e.must("GET", v2("/streams/"), nil, 200, nil)

	got, raw := e.do("GET", "/v2/"+project+"/nothing/here", nil)
	if got != 404 {
		t.Errorf("unknown route: %d", got)
	}
	wantTypes(t, jsonKinds(t, raw), map[string]string{"errorCode": "string", "message": "string"})
	got, raw = e.do("PATCH", v2("/streams/s"), nil)
	if got != 404 || !strings.Contains(string(raw), `"errorCode"`) {
		t.Errorf("unknown method: %d %s", got, raw)
	}
	e.fails("GET", "/v2/a%01b/streams", nil, 400, codeInvalidProject)
}
