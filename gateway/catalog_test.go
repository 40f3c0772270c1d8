package gateway

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/topics"
)

// untaggedListing hides tags from ListStreams answers, as a DIS listing
// without stream_info_list would.
type untaggedListing struct {
	disclient.API
	describes atomic.Int32
}

func (d *untaggedListing) ListStreams(ctx context.Context, limit int, start string) (*disclient.ListStreamsResponse, error) {
	resp, err := d.API.ListStreams(ctx, limit, start)
	if resp != nil {
		resp.StreamInfoList = nil
	}
	return resp, err
}

func (d *untaggedListing) DescribeStream(ctx context.Context, name, start string, limit int) (*disclient.DescribeStreamResponse, error) {
	d.describes.Add(1)
	return d.API.DescribeStream(ctx, name, start, limit)
}

// The catalog maps streams to Kafka names by their tags, reading them with
// DescribeStream (once) when the listing lacks them, and takes no encoded
// stream whose tags name another topic, or none, for a topic.
func TestCatalogStreamNames(t *testing.T) {
	dis := &untaggedListing{API: localDIS(t)}
	gw := startGateway(t, Config{}, dis)
	ctx := context.Background()
	create := func(stream string, tags []disclient.Tag) {
		t.Helper()
		if err := dis.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: stream, PartitionCount: 1, Tags: tags}); err != nil {
			t.Fatal(err)
		}
	}
	create("plain", nil)
	create(topics.StreamName("orders.v1"), []disclient.Tag{{Key: "disgw-topic-name", Value: "orders.v1"}})
	create(topics.StreamName("forged.v1"), []disclient.Tag{{Key: "disgw-topic-name", Value: "other.v1"}})
	create("disgw-by-hand", nil)
	if err := gw.tenant.catalog.Create(ctx, "made.here", 1, nil, FormatKafka); err != nil {
		t.Fatal(err)
	}

	cat := gw.tenant.catalog
	for range 2 {
		cat.Invalidate("made.here") // each listing walks ListStreams again
		names, err := cat.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"made.here", "orders.v1", "plain"}; !slices.Equal(names, want) {
			t.Fatalf("list = %q, want %q", names, want)
		}
	}
	// Each encoded stream is described once; the answers for Kafka names
	// are kept, the others not.
	if n := dis.describes.Load(); n != 2+2*2 {
		t.Errorf("%d DescribeStream calls for two listings", n)
	}
	tm, err := cat.Get(ctx, "orders.v1")
	if err != nil || tm.Name != "orders.v1" || tm.Stream != topics.StreamName("orders.v1") {
		t.Fatalf("get orders.v1: %v %+v", err, tm)
	}
	if _, err := cat.Get(ctx, "forged.v1"); !errors.Is(err, topics.ErrUnknownTopic) {
		t.Fatalf("a stream whose tag names another topic: %v", err)
	}
	if got := cat.TopicsForStreams(ctx, []string{"plain", topics.StreamName("orders.v1"), "disgw-by-hand"}); !slices.Equal(got, []string{"plain", "orders.v1"}) {
		t.Fatalf("topicsForStreams = %q", got)
	}
}
