package disclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
)

// TestClientAgainstEmbeddedServer runs every client operation against the
// embedded DIS server, the pairing disgw uses by default.
func TestClientAgainstEmbeddedServer(t *testing.T) {
	c := dislocaltest.Start(t).Client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	hours := int32(48)
	if err := c.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 2, DataDuration: &hours,
		Tags: []disclient.Tag{{Key: "k", Value: "v"}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "s", PartitionCount: 1}); !disclient.IsCode(err, disclient.CodeStreamExists) {
		t.Fatalf("duplicate stream: %v, want DIS.4307", err)
	}
	list, err := c.ListStreams(ctx, 10, "")
	if err != nil || len(list.StreamNames) != 1 || list.StreamNames[0] != "s" {
		t.Fatalf("list: %+v, %v", list, err)
	}

	ts := int64(1_700_000_000_000)
	put, err := c.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "s", Records: []disclient.PutRecordsEntry{
		{Data: []byte("a"), PartitionID: "1", Timestamp: &ts},
		{Data: []byte("b"), PartitionID: "shardId-0000000001", PartitionKey: "key"},
		{Data: []byte("c"), PartitionID: "7"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if put.FailedRecordCount != 1 || put.Records[0].SequenceNumber != "0" || put.Records[1].SequenceNumber != "1" ||
		put.Records[0].PartitionID != "shardId-0000000001" || put.Records[2].ErrorCode == "" {
		t.Fatalf("put: %+v", put)
	}

	d, err := c.DescribeStream(ctx, "s", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if d.RetentionPeriod != 48 || len(d.Partitions) != 2 || d.Partitions[1].SequenceNumberRange != "[0 : 2]" || d.StreamID == "" {
		t.Fatalf("describe: %+v", d)
	}

	cur, err := c.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "s", PartitionID: "1", CursorType: disclient.CursorTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.GetRecords(ctx, cur.PartitionCursor, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Records) != 2 || string(recs.Records[0].Data) != "a" || recs.Records[0].Timestamp != ts ||
		recs.Records[1].PartitionKey != "key" || recs.NextPartitionCursor == "" {
		t.Fatalf("records: %+v", recs)
	}
	empty, err := c.GetRecords(ctx, recs.NextPartitionCursor, 0)
	if err != nil || len(empty.Records) != 0 || empty.NextPartitionCursor == "" {
		t.Fatalf("read at the end: %+v, %v", empty, err)
	}
	if _, err := c.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "s", PartitionID: "1",
		CursorType: disclient.CursorAtSequenceNumber, StartingSequenceNumber: "3"}); !disclient.IsCode(err, disclient.CodeSequenceOutOfRange) {
		t.Fatalf("cursor past the end: %v, want DIS.4224", err)
	}
	atTime, err := c.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "s", PartitionID: "1", CursorType: disclient.CursorAtTimestamp, Timestamp: ts + 1})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.GetRecords(ctx, atTime.PartitionCursor, 0); err != nil || len(r.Records) != 1 || r.Records[0].SequenceNumber != "1" {
		t.Fatalf("AT_TIMESTAMP read: %+v, %v", r, err)
	}

	if err := c.CreateApp(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitCheckpoint(ctx, &disclient.CommitCheckpointRequest{AppName: "g1", StreamName: "s", PartitionID: "1",
		SequenceNumber: "2", Metadata: "meta"}); err != nil {
		t.Fatal(err)
	}
	cp, err := c.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: "g1", StreamName: "s", PartitionID: "1"})
	if err != nil || cp.SequenceNumber != "2" || cp.Metadata != "meta" {
		t.Fatalf("checkpoint: %+v, %v", cp, err)
	}
	state, err := c.ConsumerState(ctx, "g1", "s", 100, "")
	if err != nil || len(state.PartitionConsumingStates) != 2 || state.PartitionConsumingStates[1].LatestOffset != 2 {
		t.Fatalf("consumer state: %+v, %v", state, err)
	}
	apps, err := c.ListApps(ctx, 10, "", "s")
	if err != nil || len(apps.Apps) != 1 || apps.Apps[0].AppName != "g1" {
		t.Fatalf("apps on s: %+v, %v", apps, err)
	}
	if err := c.DeleteCheckpoint(ctx, &disclient.DeleteCheckpointRequest{AppName: "g1", StreamName: "s"}); err != nil {
		t.Fatal(err)
	}
	if cp, err := c.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: "g1", StreamName: "s", PartitionID: "1"}); err != nil || cp.SequenceNumber != "-1" {
		t.Fatalf("deleted checkpoint: %+v, %v", cp, err)
	}
	if err := c.DeleteApp(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeApp(ctx, "g1"); !disclient.IsCode(err, disclient.CodeAppNotFound) {
		t.Fatalf("deleted app: %v, want DIS.4332", err)
	}

	if err := c.UpdatePartitionCount(ctx, &disclient.UpdatePartitionCountRequest{StreamName: "s", TargetPartitionCount: 3}); err != nil {
		t.Fatal(err)
	}
	newHours := int32(72)
	if err := c.UpdateStream(ctx, &disclient.UpdateStreamRequest{StreamName: "s", DataDuration: &newHours}); err != nil {
		t.Fatal(err)
	}
	d, err = c.DescribeStream(ctx, "s", "", 100)
	if err != nil || len(d.Partitions) != 3 || d.RetentionPeriod != 72 {
		t.Fatalf("after update: %+v, %v", d, err)
	}
	if err := c.DeleteStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeStream(ctx, "s", "", 100); !disclient.IsCode(err, disclient.CodeStreamNotFound) {
		t.Fatalf("deleted stream: %v, want DIS.4301", err)
	}
}
