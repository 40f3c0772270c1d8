package dislocal

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/disgw/disgw/disclient"
)

func (e *env) commit(app, stream, partition, seq, metadata string) {
	e.tb.Helper()
	e.must("POST", v2("/checkpoints"), disclient.CommitCheckpointRequest{
		AppName: app, CheckpointType: "LAST_READ", StreamName: stream, PartitionID: partition, SequenceNumber: seq, Metadata: metadata,
	}, 201, nil)
}

func (e *env) checkpoint(app, stream, partition string) disclient.GetCheckpointResponse {
	e.tb.Helper()
	q := url.Values{"app_name": {app}, "stream_name": {stream}, "partition_id": {partition}, "checkpoint_type": {"LAST_READ"}}
	var resp disclient.GetCheckpointResponse
	e.must("GET", v2("/checkpoints?%s", q.Encode()), nil, 200, &resp)
	return resp
}

func (e *env) listApps(query string) disclient.ListAppsResponse {
	e.tb.Helper()
	var resp disclient.ListAppsResponse
	e.must("GET", v2("/apps%s", query), nil, 200, &resp)
	return resp
}

func appNames(r disclient.ListAppsResponse) []string {
	var out []string
	for _, a := range r.Apps {
		out = append(out, a.AppName)
	}
	return out
}

func TestApps(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"g3", "g1", "g2"} {
		e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: name}, 201, nil)
	}
	e.fails("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g1"}, 400, disclient.CodeAppExists)
	e.fails("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "bad name"}, 400, disclient.CodeInvalidRequest)
	e.fails("POST", v2("/apps"), disclient.CreateAppRequest{AppName: strings.Repeat("a", 201)}, 400, disclient.CodeInvalidRequest)
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: strings.Repeat("a", 200)}, 201, nil)
	e.must("DELETE", v2("/apps/%s", strings.Repeat("a", 200)), nil, 204, nil)

	raw := e.must("GET", v2("/apps/g1"), nil, 200, nil)
	wantTypes(t, jsonKinds(t, raw), map[string]string{"app_name": "string", "app_id": "string", "create_time": "number", "commit_checkpoint_stream_names": "array"})
	raw = e.must("GET", v2("/apps?limit=2"), nil, 200, nil)
	wantTypes(t, jsonKinds(t, raw), map[string]string{"has_more_app": "bool", "apps": "array", "total_number": "number"})

	page := e.listApps("?limit=2")
	if !slices.Equal(appNames(page), []string{"g1", "g2"}) || !page.HasMoreApp || page.TotalNumber != 3 {
		t.Errorf("page 1 = %v more=%v total=%d", appNames(page), page.HasMoreApp, page.TotalNumber)
	}
	page = e.listApps("?limit=2&start_app_name=g2")
	if !slices.Equal(appNames(page), []string{"g3"}) || page.HasMoreApp {
		t.Errorf("page 2 = %v more=%v", appNames(page), page.HasMoreApp)
	}
	if page := e.listApps(""); len(page.Apps) != 3 {
		t.Errorf("default list = %v", appNames(page))
	}
	e.fails("GET", v2("/apps?limit=0"), nil, 400, disclient.CodeInvalidRequest)
	e.fails("GET", v2("/apps/nope"), nil, 400, disclient.CodeAppNotFound)

	e.createStream("s", 3)
	e.createStream("t", 1)
	e.putTo("s", 0, "a")
	e.commit("g1", "s", "shardId-0000000000", "1", "meta")
	e.commit("g1", "s", "1", "0", "")
	e.commit("g1", "t", "0", "0", "")
	e.commit("g2", "t", "0", "0", "")
	if page := e.listApps("?stream_name=s"); !slices.Equal(appNames(page), []string{"g1"}) || page.TotalNumber != 1 {
		t.Errorf("apps on s = %v total %d", appNames(page), page.TotalNumber)
	}
	if page := e.listApps("?stream_name=t"); !slices.Equal(appNames(page), []string{"g1", "g2"}) {
		t.Errorf("apps on t = %v", appNames(page))
	}
	var app disclient.App
	e.must("GET", v2("/apps/g1"), nil, 200, &app)
	if app.AppName != "g1" || app.AppID == "" || app.CreateTime != e.clock.Now().UnixMilli() || !slices.Equal(app.CommitCheckpointStreamNames, []string{"s", "t"}) {
		t.Errorf("app = %+v", app)
	}

	e.must("DELETE", v2("/apps/g1"), nil, 204, nil)
	e.fails("GET", v2("/apps/g1"), nil, 400, disclient.CodeAppNotFound)
	e.fails("DELETE", v2("/apps/g1"), nil, 400, disclient.CodeAppNotFound)
	// A new app of the same name has none of the old checkpoints.
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g1"}, 201, nil)
	if cp := e.checkpoint("g1", "s", "0"); cp.SequenceNumber != "-1" {
		t.Errorf("re-created app sees old checkpoint %+v", cp)
	}
	if page := e.listApps("?stream_name=t"); !slices.Equal(appNames(page), []string{"g2"}) {
		t.Errorf("apps on t after delete = %v", appNames(page))
	}
}

func TestCheckpoints(t *testing.T) {
	e := newEnv(t)
	e.createStream("s", 3)
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g"}, 201, nil)

	raw := e.must("GET", v2("/checkpoints?app_name=g&stream_name=s&partition_id=0&checkpoint_type=LAST_READ"), nil, 200, nil)
	if string(raw) != `{"sequence_number":"-1","metadata":""}` {
		t.Errorf("no checkpoint = %s", raw)
	}
	e.putTo("s", 0, "a", "b")
	e.commit("g", "s", "0", "1", "öffset metadata")
	raw = e.must("GET", v2("/checkpoints?app_name=g&stream_name=s&partition_id=shardId-0000000000&checkpoint_type=LAST_READ"), nil, 200, nil)
	if string(raw) != `{"sequence_number":"1","metadata":"öffset metadata"}` {
		t.Errorf("checkpoint = %s", raw)
	}
	e.commit("g", "s", "0", "2", "")
	if cp := e.checkpoint("g", "s", "0"); cp.SequenceNumber != "2" || cp.Metadata != "" {
		t.Errorf("overwritten checkpoint = %+v", cp)
	}
	e.commit("g", "s", "1", "0", strings.Repeat("é", 1000))

	body := func(app, stream, partition, seq, metadata, typ string) disclient.CommitCheckpointRequest {
		return disclient.CommitCheckpointRequest{AppName: app, CheckpointType: typ, StreamName: stream, PartitionID: partition, SequenceNumber: seq, Metadata: metadata}
	}
	for _, tc := range []struct {
		req  disclient.CommitCheckpointRequest
		code string
	}{
		{body("nope", "s", "0", "1", "", "LAST_READ"), disclient.CodeAppNotFound},
		{body("g", "nope", "0", "1", "", "LAST_READ"), disclient.CodeStreamNotFound},
		{body("g", "s", "3", "1", "", "LAST_READ"), disclient.CodePartitionNotFound},
		{body("g", "s", "x", "1", "", "LAST_READ"), disclient.CodeInvalidPartitionID},
		{body("g", "s", "0", "one", "", "LAST_READ"), disclient.CodeInvalidSequence},
		{body("g", "s", "0", "1", strings.Repeat("m", 1001), "LAST_READ"), disclient.CodeInvalidRequest},
		{body("g", "s", "0", "1", "", "FIRST_READ"), disclient.CodeInvalidRequest},
		// As DIS: only a sequence number in [earliest : next].
		{body("g", "s", "0", "3", "", "LAST_READ"), disclient.CodeSequenceOutOfRange},
		{body("g", "s", "0", "-1", "", "LAST_READ"), disclient.CodeSequenceOutOfRange},
		{body("g", "s", "1", "1", "", "LAST_READ"), disclient.CodeSequenceOutOfRange},
	} {
		e.fails("POST", v2("/checkpoints"), tc.req, 400, tc.code)
	}
	e.fails("GET", v2("/checkpoints?app_name=nope&stream_name=s&partition_id=0&checkpoint_type=LAST_READ"), nil, 400, disclient.CodeAppNotFound)
	e.fails("GET", v2("/checkpoints?app_name=g&stream_name=s&partition_id=9&checkpoint_type=LAST_READ"), nil, 400, disclient.CodePartitionNotFound)
	e.fails("GET", v2("/checkpoints?app_name=g&stream_name=s&partition_id=0"), nil, 400, disclient.CodeInvalidRequest)

	// Consumer state: checkpoints and offsets per partition.
	raw = e.must("GET", v2("/apps/g/streams/s?checkpoint_type=LAST_READ"), nil, 200, nil)
	m := jsonKinds(t, raw)
	wantTypes(t, m, map[string]string{"has_more": "bool", "stream_name": "string", "app_name": "string", "partition_consuming_states": "array"})
	for _, st := range m["partition_consuming_states"].([]any) {
		wantTypes(t, st, map[string]string{"partition_id": "string", "sequence_number": "string", "latest_offset": "number", "earliest_offset": "number", "checkpoint_type": "string", "status": "string"})
	}
	var cs disclient.ConsumerStateResponse
	e.must("GET", v2("/apps/g/streams/s?checkpoint_type=LAST_READ"), nil, 200, &cs)
	want := []disclient.PartitionConsumingState{
		{PartitionID: "shardId-0000000000", SequenceNumber: "2", LatestOffset: 2, CheckpointType: "LAST_READ", Status: "ACTIVE"},
		{PartitionID: "shardId-0000000001", SequenceNumber: "0", CheckpointType: "LAST_READ", Status: "ACTIVE"},
		{PartitionID: "shardId-0000000002", SequenceNumber: "-1", CheckpointType: "LAST_READ", Status: "ACTIVE"},
	}
	if cs.AppName != "g" || cs.StreamName != "s" || cs.HasMore || !slices.Equal(cs.PartitionConsumingStates, want) {
		t.Errorf("consumer state = %+v", cs)
	}
	e.must("GET", v2("/apps/g/streams/s?checkpoint_type=LAST_READ&limit=1&start_partition_id=0"), nil, 200, &cs)
	if len(cs.PartitionConsumingStates) != 1 || cs.PartitionConsumingStates[0].PartitionID != "shardId-0000000001" || !cs.HasMore {
		t.Errorf("consumer state page = %+v", cs)
	}
	e.fails("GET", v2("/apps/nope/streams/s"), nil, 400, disclient.CodeAppNotFound)
	e.fails("GET", v2("/apps/g/streams/nope"), nil, 400, disclient.CodeStreamNotFound)

	// Delete one partition's checkpoint, then all of the stream's.
	e.must("DELETE", v2("/checkpoints?app_name=g&stream_name=s&partition_id=0&checkpoint_type=LAST_READ"), nil, 204, nil)
	if cp := e.checkpoint("g", "s", "0"); cp.SequenceNumber != "-1" {
		t.Errorf("deleted checkpoint = %+v", cp)
	}
	if cp := e.checkpoint("g", "s", "1"); cp.SequenceNumber != "0" {
		t.Errorf("other checkpoint after single delete = %+v", cp)
	}
	e.commit("g", "s", "2", "0", "")
	e.must("DELETE", v2("/checkpoints?app_name=g&stream_name=s&checkpoint_type=LAST_READ"), nil, 204, nil)
	for _, part := range []string{"0", "1", "2"} {
		if cp := e.checkpoint("g", "s", part); cp.SequenceNumber != "-1" {
			t.Errorf("partition %s after delete-all = %+v", part, cp)
		}
	}
	e.fails("DELETE", v2("/checkpoints?app_name=nope&stream_name=s&checkpoint_type=LAST_READ"), nil, 400, disclient.CodeAppNotFound)

	// Deleting a stream deletes its checkpoints.
	e.commit("g", "s", "0", "2", "")
	e.must("DELETE", v2("/streams/s"), nil, 204, nil)
	e.createStream("s", 1)
	if cp := e.checkpoint("g", "s", "0"); cp.SequenceNumber != "-1" {
		t.Errorf("checkpoint survived its stream: %+v", cp)
	}
	if page := e.listApps("?stream_name=s"); len(page.Apps) != 0 {
		t.Errorf("apps on the re-created stream = %v", appNames(page))
	}
}
