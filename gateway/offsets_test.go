package gateway

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// gatedDIS holds the first CommitCheckpoint until released and records the
// offsets in the order the gateway wrote them.
type gatedDIS struct {
	disclient.API
	entered, release chan struct{}
	once             sync.Once

	mu      sync.Mutex
	written []string
}

func (d *gatedDIS) CommitCheckpoint(ctx context.Context, req *disclient.CommitCheckpointRequest) error {
	first := false
	d.once.Do(func() { first = true })
	if first {
		close(d.entered)
		<-d.release
	}
	// The topic is kafka-format: the committed offset is in the metadata.
	_, off, ok := decodeOffsetCheckpointMetadata(req.Metadata)
	if !ok {
		off = -1
	}
	d.mu.Lock()
	d.written = append(d.written, strconv.FormatInt(off, 10))
	d.mu.Unlock()
	return d.API.CommitCheckpoint(ctx, req)
}

func startGated(t *testing.T) (*Gateway, *gatedDIS) {
	t.Helper()
	dis := &gatedDIS{API: localDIS(t), entered: make(chan struct{}), release: make(chan struct{})}
	return startGateway(t, Config{InitialRebalanceDelay: -1}, dis), dis
}

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

// commitAsync sends a commit and delivers its partition's error code.
func commitAsync(t *testing.T, gw *Gateway, req *kmsg.OffsetCommitRequest) <-chan int16 {
	out := make(chan int16, 1)
	go func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()))
		if err != nil {
			t.Error(err)
			out <- -1
			return
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := cl.Request(ctx, req)
		if err != nil {
			t.Error(err)
			out <- -1
			return
		}
		out <- resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}()
	return out
}

// waitQueued waits until n commits of group wait behind the one in DIS.
func waitQueued(t *testing.T, gw *Gateway, group string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		gw.groups.mu.Lock()
		got := len(gw.groups.queues[offsetQueueKey{gw.tenant, group}])
		gw.groups.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commits queued for %s, want %d", got, group, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
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

// Two commits of one group: the second, sent while the first is still in
// DIS, waits for it, so the later commit is the one that stays.
func TestOffsetCommitsLandInAcceptedOrder(t *testing.T) {
	gw, dis := startGated(t)
	createTestTopic(t, gw)
	first := commitAsync(t, gw, offsetCommitReq("g", "", -1, 10))
	<-dis.entered
	second := commitAsync(t, gw, offsetCommitReq("g", "", -1, 20))
	waitQueued(t, gw, "g", 1)
	close(dis.release)
	if a, b := <-first, <-second; a != 0 || b != 0 {
		t.Fatalf("commits: %v, %v", kerr.ErrorForCode(a), kerr.ErrorForCode(b))
	}
	if !slices.Equal(dis.written, []string{"10", "20"}) {
		t.Fatalf("DIS saw %v, want [10 20]", dis.written)
	}
	if got := committed(t, gw, "g"); got != 20 {
		t.Fatalf("committed offset %d, want 20", got)
	}
}

// A commit of generation 1 still queued when the group reached generation 2
// never lands, even though the coordinator accepted it.
func TestStaleGenerationCommitDoesNotLand(t *testing.T) {
	gw, dis := startGated(t)
	createTestTopic(t, gw)
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID = "g", member
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		resp := kafkaRequest[*kmsg.JoinGroupResponse](t, gw, req)
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			req.MemberID = resp.MemberID
			resp = kafkaRequest[*kmsg.JoinGroupResponse](t, gw, req)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Version = 3
		sync.Group, sync.MemberID, sync.Generation = "g", resp.MemberID, resp.Generation
		if r := kafkaRequest[*kmsg.SyncGroupResponse](t, gw, sync); r.ErrorCode != 0 {
			t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		return resp
	}
	g1 := join("")
	member := g1.MemberID
	inDIS := commitAsync(t, gw, offsetCommitReq("g", member, g1.Generation, 10))
	<-dis.entered
	stale := commitAsync(t, gw, offsetCommitReq("g", member, g1.Generation, 15))
	waitQueued(t, gw, "g", 1)
	// The leader rejoins: the group moves to the next generation.
	g2 := join(member)
	if g2.Generation != g1.Generation+1 {
		t.Fatalf("generation %d after the rejoin, want %d", g2.Generation, g1.Generation+1)
	}
	newer := commitAsync(t, gw, offsetCommitReq("g", member, g2.Generation, 30))
	waitQueued(t, gw, "g", 2)
	close(dis.release)
	if a, b, c := <-inDIS, <-stale, <-newer; a != 0 || b != kerr.IllegalGeneration.Code || c != 0 {
		t.Fatalf("commits: %v, %v (want ILLEGAL_GENERATION), %v", kerr.ErrorForCode(a), kerr.ErrorForCode(b), kerr.ErrorForCode(c))
	}
	if !slices.Equal(dis.written, []string{"10", "30"}) {
		t.Fatalf("DIS saw %v, want [10 30]", dis.written)
	}
	if got := committed(t, gw, "g"); got != 30 {
		t.Fatalf("committed offset %d, want 30", got)
	}
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
