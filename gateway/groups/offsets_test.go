package groups

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/gateway/topics"
)

// noPartition stands in for the partition log of a raw-format topic the
// gateway has read nothing of.
type noPartition struct{}

func (noPartition) CheckpointSeq(context.Context, int64, int64) (int64, error) {
	panic("a raw-format topic's checkpoint holds the offset itself")
}

func (noPartition) OffsetOfSeq(context.Context, int64) (int64, error) {
	panic("a raw-format topic's checkpoint holds the offset itself")
}

func (noPartition) KnownHWM() int64 { return -1 }

// disDriver is a driver of testDeps over an embedded DIS, every tenant's,
// with the given offsets retention and a catalog whose topics are
// raw-format, closed when the test ends.
func disDriver(t *testing.T, retention time.Duration) (*Driver[*testTenant], disclient.API, *topics.Catalog) {
	t.Helper()
	dis := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) { c.Sync = dislocal.SyncNone })).Client
	sequential := func(n int, fn func(i int)) {
		for i := range n {
			fn(i)
		}
	}
	kafkaCode := func(error) int16 { return kerr.UnknownServerError.Code }
	catalog := topics.NewCatalog(topics.Deps{
		Config: topics.Config{
			DefaultRecordFormat:    topics.FormatRaw,
			DefaultRetentionHours:  24,
			MaxRecordBytes:         1 << 20,
			MetadataTTL:            5 * time.Second,
			UnknownTopicTTL:        5 * time.Second,
			MaxDescribesPerRequest: 100,
		},
		DIS:       dis,
		Log:       zerolog.Nop(),
		Parallel:  sequential,
		KafkaCode: kafkaCode,
	})
	var apps sync.Map
	deps := testDeps()
	deps.Coord.OffsetsRetention = retention
	deps.Ctx, deps.RequestTimeout, deps.MaxCheckpointReads = context.Background(), 10*time.Second, 100
	deps.DIS = func(*testTenant) disclient.API { return dis }
	deps.Catalog = func(*testTenant) *topics.Catalog { return catalog }
	deps.Apps = func(*testTenant) *sync.Map { return &apps }
	deps.Partition = func(*testTenant, *topics.Meta, int32) Partition { return noPartition{} }
	deps.WatermarkApp, deps.KafkaCode, deps.Parallel = "disgw-offsets", kafkaCode, sequential
	deps.Committed = func(*testTenant, string, *topics.Meta, int32, int64) {}
	d := New(deps)
	t.Cleanup(d.Close)
	return d, dis, catalog
}

// An empty group whose last commit is older than OffsetsRetention expires:
// its DIS app, holding every committed offset, is deleted (Kafka's
// offsets.retention.minutes), and its offsets read back as none.
func TestEmptyGroupOffsetsExpire(t *testing.T) {
	d, dis, catalog := disDriver(t, 300*time.Millisecond)
	tn, ctx := &testTenant{}, context.Background()
	if err := catalog.Create(ctx, "t", 1, nil, topics.FormatRaw); err != nil {
		t.Fatal(err)
	}
	written := make(chan int16, 1)
	code := d.Commit(tn, "expiring", "", nil, -1, func(bool) {
		written <- d.CommitOffset(ctx, tn, "expiring", "t", 0, 7, nil)
	})
	if code == 0 {
		code = <-written
	}
	if code != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(code))
	}
	committed := func() int64 {
		t.Helper()
		off, _, code := d.committedOffset(ctx, tn, "expiring", "t", 0)
		if code != 0 {
			t.Fatalf("reading the committed offset: %v", kerr.ErrorForCode(code))
		}
		return off
	}
	if got := committed(); got != 7 {
		t.Fatalf("committed %d, want 7", got)
	}
	app := appNameFor("expiring")
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
	if got := committed(); got != -1 {
		t.Fatalf("committed %d after expiry, want -1", got)
	}
}
