package sdkconformance_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/huaweicloud/huaweicloud-sdk-go-v3/services/dis/v2/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/gateway"
)

// A DIS-native consumer following docs/groups.md "Sharing a group with
// DIS-native consumers" shares a group with Kafka consumers on a raw
// topic: it reads the Kafka consumer's checkpoint with the official SDK as
// the next sequence number to read, starts there with AT_SEQUENCE_NUMBER
// and gets the first record the Kafka consumer did not; and a Kafka consumer
// of the group resumes at the next sequence number the SDK committed.
func TestSDKSharesGroupWithKafkaConsumers(t *testing.T) {
	srv := dislocaltest.Start(t,
		dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone }),
		dislocaltest.WithClient(func(c *disclient.Config) { c.ProjectID = sdkProject }))
	gw, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", InitialRebalanceDelay: 100 * time.Millisecond}, srv.Client)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group, n = "shared", "shared-group", 10
	seeds := kgo.SeedBrokers(gw.Addr().String())

	admin, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, map[string]*string{"dis.record.format": kadm.StringPtr("raw")}, topic); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// consumeFrom reads the group's records as a Kafka consumer, committing
	// after each of the first take, and returns the first offset it got.
	consumeFrom := func(take int) int64 {
		cl, err := kgo.NewClient(seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		first := int64(-1)
		for got := 0; got < take; {
			fs := cl.PollRecords(ctx, take-got)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			for _, r := range fs.Records() {
				if first < 0 {
					first = r.Offset
				}
				got++
				if err := cl.CommitRecords(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		return first
	}
	if first := consumeFrom(4); first != 0 {
		t.Fatalf("the Kafka consumer started at offset %d, want 0", first)
	}

	c := sdkClientFor(t, srv.HTTP)
	const part = "shardId-0000000000"
	cp := must(c.ShowCheckpoint(&model.ShowCheckpointRequest{
		StreamName: topic, PartitionId: part, AppName: group,
		CheckpointType: model.GetShowCheckpointRequestCheckpointTypeEnum().LAST_READ,
	}))(t)
	if seq := val(t, "sequence_number", cp.SequenceNumber); seq != "4" {
		t.Fatalf("the Kafka consumer's checkpoint is sequence number %s, want 4: the next to read", seq)
	}
	cursor := val(t, "partition_cursor", must(c.ShowCursor(&model.ShowCursorRequest{
		StreamName: topic, PartitionId: part,
		CursorType:             ptr(model.GetShowCursorRequestCursorTypeEnum().AT_SEQUENCE_NUMBER),
		StartingSequenceNumber: ptr("4"),
	}))(t).PartitionCursor)
	recs := val(t, "records", must(c.ConsumeRecords(&model.ConsumeRecordsRequest{PartitionCursor: cursor}))(t).Records)
	if len(recs) != n-4 || val(t, "sequence_number", recs[0].SequenceNumber) != "4" {
		t.Fatalf("the DIS-native consumer read %d records from the checkpoint, first %v; want %d from 4", len(recs), recs, n-4)
	}
	// It handles three of them and commits the next to read.
	next := strconv.Itoa(4 + 3)
	must(c.CommitCheckpoint(&model.CommitCheckpointRequest{Body: &model.CommitCheckpointReq{
		AppName: group, StreamName: topic, PartitionId: part, SequenceNumber: next,
		CheckpointType: model.GetCommitCheckpointReqCheckpointTypeEnum().LAST_READ,
	}}))(t)

	if first := consumeFrom(n - 7); first != 7 {
		t.Fatalf("after the DIS-native consumer committed %s, the Kafka consumer resumed at offset %d, want 7", next, first)
	}
}
