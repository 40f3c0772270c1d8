package test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/cluster"
)

// holdDIS holds the first PutRecords to stream once armed until release
// closes, telling entered when it holds it: a produce in flight for as long
// as a test wants.
type holdDIS struct {
	disclient.API
	stream  string
	armed   *atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (d holdDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	if req.StreamName == d.stream && d.armed.CompareAndSwap(true, false) {
		close(d.entered)
		select {
		case <-d.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return d.API.PutRecords(ctx, req)
}

// TestGracefulShutdownHandsGroupsOn stops gateway 0 of two while a produce
// to it waits for DIS and a franz-go group member's coordinator is gateway
// 0. While it drains it is unready, refuses new connections, answers the
// group APIs NOT_COORDINATOR and names gateway 1 in FindCoordinator; the
// produce in flight is answered, not dropped; and once gateway 1 sees
// gateway 0 gone the member is assigned its partitions again by gateway 1
// within seconds, far below its 45 s session timeout.
func TestGracefulShutdownHandsGroupsOn(t *testing.T) {
	t.Parallel()
	const held = "held-0" // its partition's owner is checked below
	hold := holdDIS{stream: held, armed: &atomic.Bool{}, entered: make(chan struct{}), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(hold.release) }) }
	defer release()
	logs := &logBuffer{}
	c, err := Start(Options{Dir: t.TempDir(), Gateways: 2, Logger: zerolog.New(logs).Level(zerolog.InfoLevel),
		WrapDIS: func(api disclient.API) disclient.API { hold.API = api; return hold }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if ownerOf(c, cluster.PartitionKey(held, 0)) != 0 {
		t.Fatalf("partition 0 of %s is not gateway 0's; pick another name", held)
	}
	group := nameOwnedBy(c, "drain-group", 0, cluster.GroupKey)
	const topic = "drain-work"
	createTopic(t, c, topic, 2, nil)
	createTopic(t, c, held, 1, nil)

	var assignments atomic.Int32
	member := clientAt(t, c.Addrs, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if len(a[topic]) == 2 {
				assignments.Add(1)
			}
		}))
	polling, stopPolling := context.WithCancel(context.Background())
	defer stopPolling()
	go func() {
		for polling.Err() == nil {
			member.PollFetches(polling)
		}
	}()
	waitFor(t, "the member assigned both partitions by gateway 0", func() bool { return assignments.Load() == 1 })
	ready, _ := c.Gateways[0].Ready()
	if !ready {
		t.Fatal("gateway 0 is not ready before shutdown")
	}

	raw := dialRaw(t, c.Addrs[0])
	producer := clientAt(t, c.Addrs[:1], kgo.DefaultProduceTopic(held), kgo.RequiredAcks(kgo.AllISRAcks()))
	hold.armed.Store(true)
	produced := make(chan error, 1)
	go func() {
		produced <- producer.ProduceSync(testContext(t, 30*time.Second), kgo.StringRecord("in flight")).FirstErr()
	}()
	select {
	case <-hold.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the produce never reached DIS")
	}
	closed := make(chan error, 1)
	go func() { closed <- c.CloseGateway(0) }()
	waitFor(t, "gateway 0 draining", func() bool {
		ok, reason := c.Gateways[0].Ready()
		return !ok && strings.Contains(reason, "draining")
	})

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{group}
	fcResp := raw.roundTrip(fc).(*kmsg.FindCoordinatorResponse)
	if len(fcResp.Coordinators) != 1 || fcResp.Coordinators[0].ErrorCode != 0 || fcResp.Coordinators[0].NodeID != 1 {
		t.Errorf("draining gateway 0 answers FindCoordinator %+v, want gateway 1", fcResp.Coordinators)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.Generation, hb.MemberID = group, 1, "someone"
	if code := raw.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("draining gateway 0 answers Heartbeat %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	late := dialRaw(t, c.Addrs[0])
	late.send(kmsg.NewPtrApiVersionsRequest())
	late.expectClosed()

	select {
	case err := <-closed:
		t.Fatalf("gateway 0 closed (%v) with a produce in flight", err)
	default:
	}
	release()
	if err := <-produced; err != nil {
		t.Fatalf("the produce in flight at shutdown: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close gateway 0: %v", err)
	}
	gone := time.Now()
	// Gateway 1's prober would find gateway 0 gone; the test tells it.
	c.Members[1].SetLive(1)
	waitFor(t, "the member assigned both partitions again, by gateway 1", func() bool { return assignments.Load() >= 2 })
	if d := time.Since(gone); d > 20*time.Second {
		t.Errorf("the member was reassigned %v after gateway 0 stopped, not well within its 45 s session timeout", d)
	}
	if !strings.Contains(logs.String(), `"message":"shutdown complete"`) {
		t.Error("no shutdown complete line")
	}
}
