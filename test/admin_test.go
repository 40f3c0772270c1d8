package test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// TestKadmTopicLifecycle creates, describes, grows and deletes topics with
// franz-go's admin client and checks each result.
func TestKadmTopicLifecycle(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 60*time.Second)

	created, err := adm.CreateTopics(ctx, 2, 1, nil, "life-a", "life-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range created.Sorted() {
		if ct.Err != nil || ct.ID == [16]byte{} || ct.NumPartitions != 2 {
			t.Fatalf("create %s: %v, id %v, %d partitions", ct.Topic, ct.Err, ct.ID, ct.NumPartitions)
		}
	}
	again, err := adm.CreateTopics(ctx, 2, 1, nil, "life-a")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(again["life-a"].Err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v, want TOPIC_ALREADY_EXISTS", again["life-a"].Err)
	}
	bad, err := adm.CreateTopics(ctx, 1, 3, nil, "life-c")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(bad["life-c"].Err, kerr.InvalidReplicationFactor) || bad["life-c"].ErrMessage == "" {
		t.Fatalf("replication factor 3: %v %q", bad["life-c"].Err, bad["life-c"].ErrMessage)
	}
	spaced, err := adm.CreateTopics(ctx, 1, 1, nil, "orders v1")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(spaced["orders v1"].Err, kerr.InvalidTopicException) || spaced["orders v1"].ErrMessage == "" {
		t.Fatalf("a name Kafka refuses: %v %q", spaced["orders v1"].Err, spaced["orders v1"].ErrMessage)
	}

	grown, err := adm.UpdatePartitions(ctx, 4, "life-a")
	if err != nil || grown["life-a"].Err != nil {
		t.Fatalf("grow to 4: %v %v", err, grown["life-a"].Err)
	}
	shrunk, err := adm.UpdatePartitions(ctx, 3, "life-a")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(shrunk["life-a"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrink to 3: %v, want INVALID_PARTITIONS", shrunk["life-a"].Err)
	}
	meta, err := adm.Metadata(ctx, "life-a", "life-b")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(meta.Topics["life-a"].Partitions); n != 4 {
		t.Fatalf("life-a has %d partitions after growing, want 4", n)
	}
	if d, err := c.Client.DescribeStream(ctx, "life-a", "", 100); err != nil || len(d.Partitions) != 4 {
		t.Fatalf("DIS stream after growing: %v, %v", d, err)
	}

	// kadm has no DescribeCluster: send the request as franz-go would.
	cluster, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, newClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(cluster.Brokers) != 1 || cluster.Brokers[0].Host != "127.0.0.1" || cluster.ControllerID != 0 || cluster.ClusterID == "" {
		t.Fatalf("describe cluster: %+v", cluster)
	}

	deleted, err := adm.DeleteTopics(ctx, "life-a")
	if err != nil || deleted["life-a"].Err != nil {
		t.Fatalf("delete: %v %v", err, deleted["life-a"].Err)
	}
	if _, err := c.Client.DescribeStream(ctx, "life-a", "", 100); !disclient.IsCode(err, disclient.CodeStreamNotFound) {
		t.Fatalf("the stream is still there: %v", err)
	}
	// Re-created under the same name, the topic starts empty with a new id.
	recreated, err := adm.CreateTopics(ctx, 1, 1, nil, "life-b")
	if err != nil || !errors.Is(recreated["life-b"].Err, kerr.TopicAlreadyExists) {
		t.Fatalf("life-b should still exist: %v %v", err, recreated["life-b"].Err)
	}
	gone, err := adm.DeleteTopics(ctx, "no-such-topic")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(gone["no-such-topic"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting a missing topic: %v", gone["no-such-topic"].Err)
	}
}

// A topic deleted and created again through the gateway never serves the
// old records, even from the gateway's caches.
func TestRecreatedTopicStartsEmpty(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 60*time.Second)
	createTopic(t, c, "again", 1, nil)
	produceValues(t, c, "again", 0, 10)
	if _, err := adm.DeleteTopics(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, c, "again", 1, nil)
	produceValues(t, c, "again", 100, 101)
	cl := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"again": {0: kgo.NewOffset().AtStart()}}))
	fs := cl.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "v100" || recs[0].Offset != 0 {
		t.Fatalf("the re-created topic holds %d records, first %q", len(recs), recs[0].Value)
	}
}

// TestKadmOffsetsForTimes looks offsets up by timestamp.
func TestKadmOffsetsForTimes(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "times2", 1, nil)
	cl := newClient(t, c, kgo.DefaultProduceTopic("times2"))
	ctx := testContext(t, 30*time.Second)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Timestamp: base.Add(time.Duration(i) * time.Second)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	offs, err := adm.ListOffsetsAfterMilli(ctx, base.Add(2500*time.Millisecond).UnixMilli(), "times2")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("times2", 0); !ok || o.Err != nil || o.Offset != 3 || o.Timestamp != base.Add(3*time.Second).UnixMilli() {
		t.Fatalf("offset after 2.5 s: %+v", o)
	}
	starts, err := adm.ListStartOffsets(ctx, "times2")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "times2")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup("times2", 0); s.Offset != 0 {
		t.Fatalf("start offset %d", s.Offset)
	}
	if e, _ := ends.Lookup("times2", 0); e.Offset != 5 {
		t.Fatalf("end offset %d", e.Offset)
	}
}

// TestSaramaClusterAdmin drives the same operations through sarama.
func TestSaramaClusterAdmin(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	adm, err := sarama.NewClusterAdmin([]string{c.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic("sarama-admin", &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	err = adm.CreateTopic("sarama-admin", &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := topics["sarama-admin"]; !ok || d.NumPartitions != 2 {
		t.Fatalf("list topics: %+v", topics)
	}
	if err := adm.CreatePartitions("sarama-admin", 3, nil, false); err != nil {
		t.Fatal(err)
	}
	meta, err := adm.DescribeTopics([]string{"sarama-admin"})
	if err != nil || len(meta) != 1 || len(meta[0].Partitions) != 3 {
		t.Fatalf("describe topics: %v, %+v", err, meta)
	}
	brokers, controller, err := adm.DescribeCluster()
	if err != nil || len(brokers) != 1 || controller != 0 {
		t.Fatalf("describe cluster: %v, %d brokers, controller %d", err, len(brokers), controller)
	}
	if err := adm.DeleteTopic("sarama-admin"); err != nil {
		t.Fatal(err)
	}
	topics, err = adm.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics["sarama-admin"]; ok {
		t.Fatal("the topic is still listed after DeleteTopic")
	}
}

// TestStreamsCreatedOutsideDisgw: a stream made directly in DIS is a raw
// topic; after DIS scales it in, the closed partition stays readable and is
// never written.
func TestStreamsCreatedOutsideDisgw(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	ctx := testContext(t, 60*time.Second)
	if err := c.Client.CreateStream(ctx, &disclient.CreateStreamRequest{StreamName: "native", PartitionCount: 2}); err != nil {
		t.Fatal(err)
	}
	put, err := c.Client.PutRecords(ctx, &disclient.PutRecordsRequest{StreamName: "native", Records: []disclient.PutRecordsEntry{
		{Data: []byte("from-dis"), PartitionID: "1", PartitionKey: "k1"},
	}})
	if err != nil || put.FailedRecordCount != 0 {
		t.Fatalf("put: %v %+v", err, put)
	}
	cl := newClient(t, c, kgo.DefaultProduceTopic("native"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Key: []byte("k2"), Value: []byte("from-kafka")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Raw format: a DIS-native reader sees the plain value.
	cur, err := c.Client.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: "native", PartitionID: "1", CursorType: disclient.CursorTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Client.GetRecords(ctx, cur.PartitionCursor, 0)
	if err != nil || len(recs.Records) != 2 || string(recs.Records[1].Data) != "from-kafka" || recs.Records[1].PartitionKey != "k2" {
		t.Fatalf("DIS-native read: %+v, %v", recs, err)
	}
	// Headers do not fit the raw format: an untagged stream drops them
	// (dis.raw.headers=drop, test/raw_policy_test.go).
	err = cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "h"}}}).FirstErr()
	if err != nil {
		t.Fatalf("headers on a raw topic: %v, want them dropped", err)
	}

	if err := c.Client.UpdatePartitionCount(ctx, &disclient.UpdatePartitionCountRequest{StreamName: "native", TargetPartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, c))
	waitFor(t, "the scale-in to show in Metadata", func() bool {
		ends, err := adm.ListEndOffsets(ctx, "native")
		if err != nil {
			return false
		}
		e, ok := ends.Lookup("native", 1)
		return ok && e.Err == nil && e.Offset == 2
	})
	meta, err := adm.Metadata(ctx, "native")
	if err != nil {
		t.Fatal(err)
	}
	if ps := meta.Topics["native"].Partitions; len(ps) != 2 {
		t.Fatalf("metadata lists %d partitions, want the closed one too", len(ps))
	}
	consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"native": {1: kgo.NewOffset().AtStart()}}))
	var values []string
	for len(values) < 2 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v from the closed partition", values)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	if !slices.Equal(values, []string{"from-dis", "from-kafka"}) {
		t.Fatalf("closed partition holds %v", values)
	}
	writer := newClient(t, c, kgo.DefaultProduceTopic("native"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(1), kgo.MetadataMinAge(10*time.Millisecond))
	err = writer.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("late")}).FirstErr()
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("writing the closed partition: %v, want POLICY_VIOLATION", err)
	}
}
