package test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

const offsetsTopic = "__consumer_offsets"

// offsetsTopicIn returns the offsets topic of a Metadata response, checked
// to be listed as Kafka lists it: internal, 50 partitions led by a broker.
func offsetsTopicIn(t *testing.T, resp *kmsg.MetadataResponse) kmsg.MetadataResponseTopic {
	t.Helper()
	for _, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != offsetsTopic {
			continue
		}
		if mt.ErrorCode != 0 || !mt.IsInternal || len(mt.Partitions) != 50 {
			t.Fatalf("%s: error %d, internal %v, %d partitions; want 0, true, 50", offsetsTopic, mt.ErrorCode, mt.IsInternal, len(mt.Partitions))
		}
		for i, p := range mt.Partitions {
			if p.Partition != int32(i) || p.Leader != 0 || !slices.Equal(p.Replicas, []int32{0}) {
				t.Fatalf("%s partition %d: %+v", offsetsTopic, i, p)
			}
		}
		return mt
	}
	t.Fatalf("Metadata lacks %s: %d topics", offsetsTopic, len(resp.Topics))
	return kmsg.MetadataResponseTopic{}
}

// TestOffsetsTopicMetadata: __consumer_offsets is listed as Kafka lists it,
// whether all topics are asked for, or it by name or id; it reads as an
// empty log; writing, creating, deleting and growing it are refused as
// Kafka refuses them; and kadm's topic listing hides it as on Kafka.
func TestOffsetsTopicMetadata(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "plain", 2, nil)
	rc := dialRaw(t, c.Addr)

	all := kmsg.NewPtrMetadataRequest()
	all.Version = 12
	resp := rc.roundTrip(all).(*kmsg.MetadataResponse)
	ot := offsetsTopicIn(t, resp)
	if ot.TopicID == ([16]byte{}) {
		t.Fatal("the offsets topic has no topic id")
	}
	for _, mt := range resp.Topics {
		if *mt.Topic == "plain" && (mt.IsInternal || len(mt.Partitions) != 2) {
			t.Fatalf("plain: internal %v, %d partitions", mt.IsInternal, len(mt.Partitions))
		}
	}
	for _, v := range []int16{0, 1, 12} {
		named := kmsg.NewPtrMetadataRequest()
		named.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(offsetsTopic)
		named.Topics = []kmsg.MetadataRequestTopic{rt}
		resp := rc.roundTrip(named).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 {
			t.Fatalf("v%d: %d topics for one named", v, len(resp.Topics))
		}
		if v >= 1 {
			offsetsTopicIn(t, resp)
		}
	}
	byID := kmsg.NewPtrMetadataRequest()
	byID.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = ot.TopicID
	byID.Topics = []kmsg.MetadataRequestTopic{rt}
	offsetsTopicIn(t, rc.roundTrip(byID).(*kmsg.MetadataResponse))

	// Kafka refuses a client's write to an internal topic.
	pr := rc.roundTrip(produceReq(9, offsetsTopic, 0, testBatch(-1, -1, 0, time.Now().UnixMilli(), "v"))).(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to %s: error %d, want INVALID_TOPIC_EXCEPTION", offsetsTopic, code)
	}

	for _, tc := range []struct {
		version   int16
		partition int32
		offset    int64
		code      int16
	}{
		{12, 0, 0, 0},
		{13, 49, 0, 0},
		{13, 3, 7, kerr.OffsetOutOfRange.Code},
		{12, 50, 0, kerr.UnknownTopicOrPartition.Code},
	} {
		fr := rc.roundTrip(fetchReq(tc.version, offsetsTopic, ot.TopicID, tc.partition, tc.offset)).(*kmsg.FetchResponse)
		sp := fr.Topics[0].Partitions[0]
		if sp.ErrorCode != tc.code || (tc.code == 0 && (sp.HighWatermark != 0 || len(sp.RecordBatches) != 0)) {
			t.Fatalf("fetch v%d %s/%d at %d: error %d, high watermark %d, %d bytes; want error %d on an empty log",
				tc.version, offsetsTopic, tc.partition, tc.offset, sp.ErrorCode, sp.HighWatermark, len(sp.RecordBatches), tc.code)
		}
	}

	adm := kadm.NewClient(newClient(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, offsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup(offsetsTopic, 17); !ok || o.Err != nil || o.Offset != 0 {
		t.Fatalf("end offset of %s/17: %+v, want 0", offsetsTopic, o)
	}

	if _, err := adm.CreateTopic(ctx, 3, 1, nil, offsetsTopic); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create %s: %v, want TOPIC_ALREADY_EXISTS", offsetsTopic, err)
	}
	if _, err := adm.DeleteTopic(ctx, offsetsTopic); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("delete %s: %v, want INVALID_TOPIC_EXCEPTION", offsetsTopic, err)
	}
	grown, err := adm.CreatePartitions(ctx, 10, offsetsTopic)
	if err != nil || !errors.Is(grown[offsetsTopic].Err, kerr.InvalidTopicException) {
		t.Fatalf("create partitions of %s: %v %v, want INVALID_TOPIC_EXCEPTION", offsetsTopic, err, grown[offsetsTopic].Err)
	}

	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Names(); !slices.Equal(got, []string{"plain"}) {
		t.Fatalf("ListTopics = %q, want only plain", got)
	}
	withInternal, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := withInternal[offsetsTopic]; !ok || !d.IsInternal || len(d.Partitions) != 50 {
		t.Fatalf("ListTopicsWithInternal lacks the internal %s: %+v", offsetsTopic, d)
	}
}

// TestRegexSkipsOffsetsTopic: a regex subscription matching every topic
// consumes the user's topics and, as on Kafka, never subscribes to the
// internal offsets topic.
func TestRegexSkipsOffsetsTopic(t *testing.T) {
	t.Parallel()
	c := startCluster(t, func(cfg *gateway.Config) { cfg.InitialRebalanceDelay = -1 })
	createTopic(t, c, "rx-a", 1, nil)
	createTopic(t, c, "rx-b", 1, nil)
	prod := newClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{"rx-a", "rx-b"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, c, kgo.ConsumeRegex(), kgo.ConsumeTopics(".*"), kgo.ConsumerGroup("rx"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 2 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Topic) })
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"rx-a", "rx-b"}) {
		t.Fatalf("consumed %q", got)
	}
	groups, err := kadm.NewClient(newClient(t, c)).DescribeGroups(ctx, "rx")
	if err != nil {
		t.Fatal(err)
	}
	members := groups["rx"].Members
	if len(members) != 1 {
		t.Fatalf("group rx: %+v", groups["rx"])
	}
	sub, ok := members[0].Join.AsConsumer()
	if !ok {
		t.Fatal("the member's subscription is not the consumer protocol's")
	}
	if topics := slices.Sorted(slices.Values(sub.Topics)); !slices.Equal(topics, []string{"rx-a", "rx-b"}) {
		t.Fatalf("the regex subscribed to %q, want rx-a and rx-b alone", topics)
	}
}
