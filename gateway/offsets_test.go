package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// kafkaRequest sends req over a client of its own, so that a request the
// gateway holds does not hold up the responses others wait for on one
// connection.
func kafkaRequest[R kmsg.Response](t *testing.T, gw *Gateway, req kmsg.Request) R {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

func offsetCommitReq(group, member string, generation int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = group, member, generation
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.Partitions = "t", []kmsg.OffsetCommitRequestTopicPartition{p}
	req.Topics = append(req.Topics, t)
	return req
}

func createTestTopic(t *testing.T, gw *Gateway) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "t", 1, 1
	req.Topics = append(req.Topics, ct)
	resp := kafkaRequest[*kmsg.CreateTopicsResponse](t, gw, req)
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic: %v", kerr.ErrorForCode(code))
	}
}

func committed(t *testing.T, gw *Gateway, group string) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, ft)
	resp := kafkaRequest[*kmsg.OffsetFetchResponse](t, gw, req)
	return resp.Topics[0].Partitions[0].Offset
}

// An empty group whose last commit is older than OffsetsRetention expires:
// its DIS app, holding every committed offset, is deleted (Kafka's
// offsets.retention.minutes), and its offsets read back as none.
func TestEmptyGroupOffsetsExpire(t *testing.T) {
	dis := localDIS(t)
	gw := startGateway(t, Config{InitialRebalanceDelay: -1, OffsetsRetention: 300 * time.Millisecond}, dis)
	createTestTopic(t, gw)
	resp := kafkaRequest[*kmsg.OffsetCommitResponse](t, gw, offsetCommitReq("expiring", "", -1, 7))
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(code))
	}
	if got := committed(t, gw, "expiring"); got != 7 {
		t.Fatalf("committed %d, want 7", got)
	}
	app := appNameFor("expiring")
	ctx := context.Background()
	if _, err := dis.DescribeApp(ctx, app); err != nil {
		t.Fatalf("the group's DIS app after a commit: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := dis.DescribeApp(ctx, app)
		if disclient.IsCode(err, disclient.CodeAppNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DIS app of a group past its retention is still there (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := committed(t, gw, "expiring"); got != -1 {
		t.Fatalf("committed %d after expiry, want -1", got)
	}
}
