package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog"
)

// metaCountingDIS counts the DIS calls a client's metadata and offset
// requests can trigger, and its Close calls.
type metaCountingDIS struct {
	disclient.API
	describes, lists, checkpoints, closes atomic.Int64
}

func (d *metaCountingDIS) DescribeStream(ctx context.Context, name, start string, limit int) (*disclient.DescribeStreamResponse, error) {
	d.describes.Add(1)
	return d.API.DescribeStream(ctx, name, start, limit)
}

func (d *metaCountingDIS) ListStreams(ctx context.Context, limit int, start string) (*disclient.ListStreamsResponse, error) {
	d.lists.Add(1)
	return d.API.ListStreams(ctx, limit, start)
}

func (d *metaCountingDIS) GetCheckpoint(ctx context.Context, req *disclient.GetCheckpointRequest) (*disclient.GetCheckpointResponse, error) {
	d.checkpoints.Add(1)
	return d.API.GetCheckpoint(ctx, req)
}

func (d *metaCountingDIS) Close() { d.closes.Add(1) }

// localDIS serves an embedded DIS for one test and returns a client of it.
// startMetaCounted runs a gateway over a counted embedded DIS and returns a
// client connected to it, whose requests go straight to the gateway (no
// Metadata requests of the client's own). It returns once the gateway's
// first readiness probe (a ListStreams) is done, and no other probe comes
// within the hour, so that the counts a test takes are its requests' alone:
// under the race detector the first probe could land inside them.
func startMetaCounted(t *testing.T, tune func(*Config)) (*Gateway, *metaCountingDIS, *kgo.Broker) {
	t.Helper()
	dis := &metaCountingDIS{API: localDIS(t)}
	cfg := Config{ReadyProbeInterval: time.Hour}
	if tune != nil {
		tune(&cfg)
	}
	gw := startGateway(t, cfg, dis)
	waitFor(t, "the first readiness probe", func() bool { ready, _ := gw.Ready(); return ready })
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return gw, dis, cl.SeedBrokers()[0]
}

func createStreams(t *testing.T, dis disclient.API, partitions int32, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := dis.CreateStream(context.Background(), &disclient.CreateStreamRequest{StreamName: n, PartitionCount: partitions}); err != nil {
			t.Fatal(err)
		}
	}
}

func metadataFor(t *testing.T, cl *kgo.Broker, names ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := requestOn[*kmsg.MetadataResponse](t, cl, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Asking again and again for a topic DIS does not have costs one
// DescribeStream per UnknownTopicTTL, and creating it through the gateway
// makes it known at once.
func TestUnknownTopicIsCached(t *testing.T) {
	_, dis, cl := startMetaCounted(t, func(c *Config) { c.UnknownTopicTTL = time.Hour })
	for range 20 {
		resp := metadataFor(t, cl, "missing")
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("metadata for a missing topic: %+v", resp.Topics)
		}
	}
	if n := dis.describes.Load(); n != 1 {
		t.Fatalf("20 Metadata requests for one missing topic made %d DescribeStream calls, want 1", n)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "missing", 2, -1
	req.Topics = append(req.Topics, ct)
	cresp, err := requestOn[*kmsg.CreateTopicsResponse](t, cl, req)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, cresp)
	}
	resp := metadataFor(t, cl, "missing")
	if resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata right after CreateTopics: %+v", resp.Topics[0])
	}
}

// A Metadata request naming 10 000 topics costs at most
// MaxDescribesPerRequest DescribeStream calls plus one ListStreams pass, and
// answers every topic: missing ones UNKNOWN_TOPIC_OR_PARTITION, existing
// ones beyond the budget LEADER_NOT_AVAILABLE until a retry describes them.
func TestMetadataDescribesAreCapped(t *testing.T) {
	const budget = 50
	_, dis, cl := startMetaCounted(t, func(c *Config) {
		c.MaxDescribesPerRequest = budget
		c.UnknownTopicTTL = time.Hour
	})
	real := []string{"real-a", "real-b", "real-c"}
	createStreams(t, dis, 1, real...)
	var names []string
	for i := range 10000 - len(real) {
		names = append(names, fmt.Sprintf("nope-%05d", i))
	}
	names = append(names, real...)

	resp := metadataFor(t, cl, names...)
	if len(resp.Topics) != len(names) {
		t.Fatalf("answered %d topics of %d", len(resp.Topics), len(names))
	}
	if n := dis.describes.Load(); n > budget {
		t.Fatalf("one Metadata request made %d DescribeStream calls, budget %d", n, budget)
	}
	if n := dis.lists.Load(); n > 2 {
		t.Fatalf("one Metadata request made %d ListStreams calls", n)
	}
	for _, mt := range resp.Topics {
		want := kerr.UnknownTopicOrPartition.Code
		if (*mt.Topic)[:4] == "real" {
			want = kerr.LeaderNotAvailable.Code
		}
		if mt.ErrorCode != want {
			t.Fatalf("topic %s: error %d, want %d", *mt.Topic, mt.ErrorCode, want)
		}
	}

	// The retry: the missing topics are remembered, the real ones described.
	before := dis.describes.Load()
	resp = metadataFor(t, cl, names...)
	if n := dis.describes.Load() - before; n != int64(len(real)) {
		t.Fatalf("the retry made %d DescribeStream calls, want %d", n, len(real))
	}
	for _, mt := range resp.Topics[len(names)-len(real):] {
		if mt.ErrorCode != 0 || len(mt.Partitions) != 1 {
			t.Fatalf("topic %s on retry: %+v", *mt.Topic, mt)
		}
	}
}

// Topic ids no stream has cost one ListStreams pass and are then remembered;
// an id of an existing stream resolves.
func TestTopicIDLookupsAreCapped(t *testing.T) {
	gw, dis, cl := startMetaCounted(t, func(c *Config) { c.UnknownTopicTTL = time.Hour })
	createStreams(t, dis, 1, "by-id")
	tm, err := gw.tenant.catalog.Get(context.Background(), "by-id")
	if err != nil {
		t.Fatal(err)
	}
	gw.tenant.catalog.Invalidate("by-id") // forgets the id too: it must be found again
	req := kmsg.NewPtrMetadataRequest()
	for i := range 1000 {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = [16]byte{1, byte(i), byte(i >> 8)}
		req.Topics = append(req.Topics, rt)
	}
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = tm.ID
	req.Topics = append(req.Topics, rt)
	describes, lists := dis.describes.Load(), dis.lists.Load()
	for range 5 {
		resp, err := requestOn[*kmsg.MetadataResponse](t, cl, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != len(req.Topics) {
			t.Fatalf("answered %d topics of %d", len(resp.Topics), len(req.Topics))
		}
		last := resp.Topics[len(resp.Topics)-1]
		if last.ErrorCode != 0 || last.Topic == nil || *last.Topic != "by-id" {
			t.Fatalf("the existing topic's id: %+v", last)
		}
		if resp.Topics[0].ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("an unknown id: %+v", resp.Topics[0])
		}
	}
	if n := dis.lists.Load() - lists; n != 1 {
		t.Fatalf("5 requests with 1000 unknown ids made %d ListStreams calls, want 1", n)
	}
	if n := dis.describes.Load() - describes; n > 2 {
		t.Fatalf("5 requests with 1000 unknown ids made %d DescribeStream calls", n)
	}
}

// OffsetFetch reads checkpoints only of partitions that exist, at most
// MaxCheckpointReadsPerRequest per request; the rest answer POLICY_VIOLATION.
func TestOffsetFetchCheckpointReadsAreCapped(t *testing.T) {
	_, dis, cl := startMetaCounted(t, func(c *Config) { c.MaxCheckpointReadsPerRequest = 2 })
	createStreams(t, dis, 3, "offs")
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "g"
	for i := range 2000 {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic = fmt.Sprintf("nope-%d", i)
		rt.Partitions = []int32{0}
		g.Topics = append(g.Topics, rt)
	}
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic = "offs"
	for p := range int32(1000) {
		rt.Partitions = append(rt.Partitions, p)
	}
	g.Topics = append([]kmsg.OffsetFetchRequestGroupTopic{rt}, g.Topics...)
	req.Groups = append(req.Groups, g)
	resp, err := requestOn[*kmsg.OffsetFetchResponse](t, cl, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := dis.checkpoints.Load(); n != 2 {
		t.Fatalf("%d GetCheckpoint calls, want 2 (the budget)", n)
	}
	if n := dis.describes.Load(); n > int64(defaultMaxDescribes()) {
		t.Fatalf("%d DescribeStream calls", n)
	}
	refused := 0
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != len(g.Topics) {
		t.Fatalf("answered %+v", resp)
	}
	for _, t2 := range resp.Groups[0].Topics {
		for _, p := range t2.Partitions {
			switch {
			case p.ErrorCode == kerr.PolicyViolation.Code:
				refused++
			case p.ErrorCode != 0 || p.Offset != -1:
				t.Fatalf("%s/%d: %+v", t2.Topic, p.Partition, p)
			}
		}
	}
	if refused != 1 {
		t.Fatalf("%d partitions refused, want 1 (3 exist, budget 2)", refused)
	}
}

func defaultMaxDescribes() int {
	var c Config
	c.setDefaults()
	return c.MaxDescribesPerRequest
}

// newIdleTestGateway is a gateway that is never started, so only the
// sweeps a test runs itself evict anything.
func newIdleTestGateway(t *testing.T, dis disclient.API, tune func(*Config)) *Gateway {
	t.Helper()
	cfg := Config{StateIdleTimeout: time.Minute}
	if tune != nil {
		tune(&cfg)
	}
	gw, err := New(cfg, dis)
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// A passthrough tenant without connections is dropped after StateIdleTimeout
// with its DIS client closed; MaxTenants bounds how many are held, making
// room by dropping an idle one, refusing when none is.
func TestPassthroughTenantsEvictedAndBounded(t *testing.T) {
	backend := localDIS(t)
	var built []*metaCountingDIS
	var mu sync.Mutex
	gw := newIdleTestGateway(t, backend, func(c *Config) {
		c.SASLPassthrough = true
		c.MaxTenants = 1
		c.NewTenantDIS = func(ak, sk string) (disclient.API, error) {
			d := &metaCountingDIS{API: backend}
			mu.Lock()
			built = append(built, d)
			mu.Unlock()
			return d, nil
		}
	})
	ctx := context.Background()
	a, err := gw.passthroughTenant(ctx, "AKA", "secret-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.passthroughTenant(ctx, "AKB", "secret-b"); err != errTooManyTenants {
		t.Fatalf("a second tenant while the first has a connection: %v, want errTooManyTenants", err)
	}
	again, err := gw.passthroughTenant(ctx, "AKA", "secret-a")
	if err != nil || again != a || a.conns != 2 {
		t.Fatalf("signing in again with the same keys: %v, same tenant %v, conns %d", err, again == a, a.conns)
	}
	gw.releaseTenant(a)
	gw.releaseTenant(a)
	gw.sweepOnce(time.Now())
	if len(gw.tenants) != 1 {
		t.Fatal("a tenant idle for less than StateIdleTimeout was dropped")
	}
	gw.sweepOnce(time.Now().Add(2 * time.Minute))
	if len(gw.tenants) != 0 || built[0].closes.Load() != 1 {
		t.Fatalf("after StateIdleTimeout: %d tenants, DIS client closed %d times", len(gw.tenants), built[0].closes.Load())
	}

	a, err = gw.passthroughTenant(ctx, "AKA", "secret-a")
	if err != nil {
		t.Fatal(err)
	}
	gw.releaseTenant(a)
	b, err := gw.passthroughTenant(ctx, "AKB", "secret-b")
	if err != nil {
		t.Fatalf("a new tenant when the only one held is idle: %v", err)
	}
	if len(gw.tenants) != 1 || gw.tenants[b.id] != b || built[len(built)-2].closes.Load() != 1 {
		t.Fatal("the idle tenant was not dropped to make room")
	}
}

// requestOn sends req to broker b and returns the typed response.
func requestOn[R kmsg.Response](t *testing.T, b *kgo.Broker, req kmsg.Request) (R, error) {
	t.Helper()
	resp, err := b.Request(context.Background(), req)
	if err != nil {
		var zero R
		return zero, err
	}
	return resp.(R), nil
}

// Listing every topic walks ListStreams once per describe TTL, however many
// requests ask, and a topic created or deleted through the gateway shows at
// once.
func TestTopicListingShared(t *testing.T) {
	_, dis, cl := startMetaCounted(t, func(c *Config) { c.MetadataTTL = time.Hour })
	createStreams(t, dis, 1, "listed-a")
	listed := func() []string {
		t.Helper()
		resp, err := requestOn[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mt := range resp.Topics {
			if *mt.Topic != offsetsTopic {
				names = append(names, *mt.Topic)
			}
		}
		slices.Sort(names)
		return names
	}
	lists := dis.lists.Load()
	for range 10 {
		if got := listed(); !slices.Equal(got, []string{"listed-a"}) {
			t.Fatalf("topics %v, want [listed-a]", got)
		}
	}
	if n := dis.lists.Load() - lists; n != 1 {
		t.Fatalf("ten Metadata requests for all topics made %d ListStreams calls, want 1", n)
	}
	// A stream made behind the gateway's back waits for the TTL...
	createStreams(t, dis, 1, "listed-b")
	if got := listed(); !slices.Equal(got, []string{"listed-a"}) {
		t.Fatalf("topics %v before the TTL, want [listed-a]", got)
	}
	// ...but a topic made or deleted through it is listed, or not, at once.
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "listed-c", 1, -1
	create.Topics = append(create.Topics, ct)
	if _, err := requestOn[*kmsg.CreateTopicsResponse](t, cl, create); err != nil {
		t.Fatal(err)
	}
	if got := listed(); !slices.Equal(got, []string{"listed-a", "listed-b", "listed-c"}) {
		t.Fatalf("topics %v after CreateTopics, want all three", got)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("listed-a")
	del.Topics = append(del.Topics, dt)
	if dr, err := requestOn[*kmsg.DeleteTopicsResponse](t, cl, del); err != nil || dr.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics: %v %+v", err, dr)
	}
	if got := listed(); !slices.Equal(got, []string{"listed-b", "listed-c"}) {
		t.Fatalf("topics %v after DeleteTopics, want listed-b and listed-c", got)
	}
}

// refusingDeleteDIS is the local DIS with DeleteStream refused on RBAC
// grounds, as for a passthrough tenant whose keys may not delete streams.
type refusingDeleteDIS struct{ disclient.API }

func (refusingDeleteDIS) DeleteStream(context.Context, string) error {
	return &disclient.Error{Status: 403, Code: disclient.CodeRBACDenied, Message: "not allowed"}
}

// Evicting writers while produces look them up loses no produce and keeps
// one PutRecords in flight per partition: every batch completes and reaches
// DIS, none through a writer already dropped.
func TestEvictionLosesNoProduce(t *testing.T) {
	dis := &countingDIS{API: localDIS(t), putInFlight: map[string]int{}, putCallsSeen: map[string]int{}}
	createStreams(t, dis, 1, "evict")
	gw := newIdleTestGateway(t, dis, nil)
	k := partitionKey{tenant: gw.tenant, topic: "evict", stream: "s", partition: 0}
	newOp := func(v string) *plog.Append {
		op := plog.NewAppend(false)
		op.Entries = []disclient.PutRecordsEntry{{Data: []byte(v), PartitionID: disclient.PartitionID(0)}}
		return op
	}

	// A produce that looked the writer up just before it was evicted.
	stale := gw.partitionFor(k)
	gw.tenant.parts.EvictIdle(time.Now().Add(time.Hour))
	op := newOp("late")
	if _, code := stale.Enqueue(context.Background(), op); code != 0 {
		t.Fatalf("enqueue on an evicted writer: code %d", code)
	}
	<-op.Done()
	if op.ErrCode != 0 {
		t.Fatalf("produce through an evicted writer: %d %s", op.ErrCode, op.ErrMsg)
	}
	if successor, ok := gw.tenant.parts.Peek(k.log()); !ok || successor == stale {
		t.Fatal("a produce went through an evicted writer rather than its successor")
	}

	stop := make(chan struct{})
	var sweeps sync.WaitGroup
	sweeps.Add(1)
	go func() {
		defer sweeps.Done()
		for {
			select {
			case <-stop:
				return
			default:
				// A cutoff in the future makes every writer idle enough.
				gw.tenant.parts.EvictIdle(time.Now().Add(time.Hour))
			}
		}
	}()
	const producers, perProducer = 4, 50
	var seenMu sync.Mutex
	seen := map[*plog.Partition]bool{}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				op := newOp(fmt.Sprintf("%d-%d", p, i))
				w := gw.partitionFor(k)
				seenMu.Lock()
				seen[w] = true
				seenMu.Unlock()
				if _, code := w.Enqueue(context.Background(), op); code != 0 {
					t.Errorf("enqueue: code %d", code)
					return
				}
				<-op.Done()
				if op.ErrCode != 0 {
					t.Errorf("produce failed: %d %s", op.ErrCode, op.ErrMsg)
					return
				}
				// Leave the writer idle now and then, so sweeps drop it.
				time.Sleep(time.Duration(p) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(stop)
	sweeps.Wait()
	d, err := dis.DescribeStream(context.Background(), "evict", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	_, next, err := disclient.ParseSequenceNumberRange(d.Partitions[0].SequenceNumberRange)
	if err != nil {
		t.Fatal(err)
	}
	if next != producers*perProducer+1 {
		t.Fatalf("DIS holds %d records, want %d", next, producers*perProducer+1)
	}
	if len(seen) < 2 {
		t.Fatal("no writer was evicted while producing")
	}
	if dis.maxInFlight != 1 {
		t.Fatalf("%d PutRecords calls in flight for one partition, want 1", dis.maxInFlight)
	}
}

// A DeleteTopics that DIS refuses leaves the topic's partition state in
// place for every tenant; one DIS confirms drops it.
func TestDeleteTopicForgetsStateOnlyOnceDISDeleted(t *testing.T) {
	local := localDIS(t)
	gw := newIdleTestGateway(t, refusingDeleteDIS{local}, nil)
	ctx := context.Background()
	if err := gw.tenant.catalog.Create(ctx, "doomed", 1, nil, FormatKafka); err != nil {
		t.Fatal(err)
	}
	topic, err := gw.tenant.catalog.Get(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	gw.partitionFor(partitionKey{tenant: gw.tenant, topic: "doomed", stream: topic.StreamID, partition: 0})
	if code, _ := gw.deleteTopic(ctx, gw.tenant, "doomed"); code == 0 {
		t.Fatal("a delete DIS refused answered success")
	}
	if len(gw.tenant.parts.All()) != 1 {
		t.Fatal("a refused delete dropped the topic's partition state")
	}
	gw.tenant.dis = local
	if code, msg := gw.deleteTopic(ctx, gw.tenant, "doomed"); code != 0 {
		t.Fatalf("delete: error %d %v", code, msg)
	}
	if len(gw.tenant.parts.All()) != 0 {
		t.Fatal("a delete DIS confirmed kept the topic's partition state")
	}
}
