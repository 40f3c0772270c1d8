package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchAt sends one Fetch for partition 0 of topic at offset and returns
// its partition answer.
func fetchAt(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	details, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, details[topic].Err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, details[topic].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = offset, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch at %d: %v %+v", offset, err, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestDeleteRecords moves a partition's log start with kadm, as
// kafka-delete-records.sh and Kafka Streams do: ListOffsets earliest and
// Fetch's log start follow it, a fetch below it is out of range, a
// consumer from the start begins there, an offset past the end is refused,
// and a restarted gateway still knows it.
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	ctx := testContext(t, 2*time.Minute)
	const topic = "delrec"
	createTopic(t, c, topic, 1, nil)
	produceValues(t, c, topic, 0, 100)
	cl := newClient(t, c)
	adm := kadm.NewClient(cl)

	deleted, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 45}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := deleted.Lookup(topic, 0); d.Err != nil || d.LowWatermark != 45 {
		t.Fatalf("DeleteRecords to 45: %+v", d)
	}
	checkStart := func(cl *kgo.Client, want int64) {
		t.Helper()
		starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := starts.Lookup(topic, 0); o.Err != nil || o.Offset != want {
			t.Fatalf("ListOffsets earliest: %+v, want %d", o, want)
		}
		if p := fetchAt(ctx, t, cl, topic, want-1); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != want {
			t.Fatalf("fetch below the log start: error %d, log start %d; want OFFSET_OUT_OF_RANGE and %d", p.ErrorCode, p.LogStartOffset, want)
		}
		if p := fetchAt(ctx, t, cl, topic, want); p.ErrorCode != 0 || p.LogStartOffset != want || len(p.RecordBatches) == 0 {
			t.Fatalf("fetch at the log start: error %d, log start %d, %d bytes", p.ErrorCode, p.LogStartOffset, len(p.RecordBatches))
		}
	}
	checkStart(cl, 45)

	// A consumer from the start begins at the log start.
	cons := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	fetches := cons.PollFetches(ctx)
	if err := fetches.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fetches.Records(); len(recs) == 0 || recs[0].Offset != 45 || string(recs[0].Value) != "v45" {
		t.Fatalf("consuming from the start: %d records, first %+v", len(recs), recs)
	}

	// Backwards is nothing to do; past the end is refused.
	back, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Lookup(topic, 0); d.Err != nil || d.LowWatermark != 45 {
		t.Fatalf("DeleteRecords to 10 after 45: %+v, want low watermark 45", d)
	}
	beyond, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 101}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := beyond.Lookup(topic, 0); !errors.Is(d.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords past the end: %+v, want OFFSET_OUT_OF_RANGE", d)
	}

	// Another gateway on the same DIS knows the log start.
	if err := c.RestartGateway(); err != nil {
		t.Fatal(err)
	}
	checkStart(newClient(t, c), 45)

	// -1 is the high watermark: the partition reads as empty, and goes on.
	end, err := kadm.NewClient(newClient(t, c)).DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := end.Lookup(topic, 0); d.Err != nil || d.LowWatermark != 100 {
		t.Fatalf("DeleteRecords to the end: %+v, want low watermark 100", d)
	}
	cl2 := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if r, err := cl2.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).First(); err != nil || r.Offset != 100 {
		t.Fatalf("produce after deleting everything: %v at %d, want offset 100", err, r.Offset)
	}
	checkStart(cl2, 100)
}

// TestDeleteRecordsRefused: a raw-format topic (offsets are DIS sequence
// numbers) gets POLICY_VIOLATION and the internal offsets topic
// INVALID_TOPIC_EXCEPTION; nothing moves.
func TestDeleteRecordsRefused(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	ctx := testContext(t, time.Minute)
	createTopic(t, c, "delrec-raw", 1, map[string]*string{"dis.record.format": kmsg.StringPtr("raw")})
	produceValues(t, c, "delrec-raw", 0, 5)
	adm := kadm.NewClient(newClient(t, c))
	res, err := adm.DeleteRecords(ctx, kadm.Offsets{"delrec-raw": {0: {At: 3}}, "__consumer_offsets": {0: {At: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := res.Lookup("delrec-raw", 0); !errors.Is(d.Err, kerr.PolicyViolation) {
		t.Errorf("raw topic: %+v, want POLICY_VIOLATION", d)
	}
	if d, _ := res.Lookup("__consumer_offsets", 0); !errors.Is(d.Err, kerr.InvalidTopicException) {
		t.Errorf("offsets topic: %+v, want INVALID_TOPIC_EXCEPTION", d)
	}
	starts, err := adm.ListStartOffsets(ctx, "delrec-raw")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("delrec-raw", 0); o.Offset != 0 {
		t.Errorf("raw topic's log start after a refused DeleteRecords: %d", o.Offset)
	}
}

// TestKafkaToolDeleteRecords runs kafka-delete-records.sh with an offset
// file, as its users do, on a plain topic and on a kept one (retention.ms
// -1, as Kafka Streams' repartition topics), to an offset and to the high
// watermark (-1): the tool reports each partition's low watermark, and
// ListOffsets earliest, the tool's own kafka-get-offsets.sh, Fetch and a
// consumer from the start all begin there. An offset past the end is
// reported as the tool reports errors, and moves nothing.
func TestKafkaToolDeleteRecords(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const plain, kept = "tools-delrec", "tools-delrec-kept"
	createTopic(t, c, plain, 1, nil)
	createTopic(t, c, kept, 2, map[string]*string{"retention.ms": kadm.StringPtr("-1")})
	prod := newClient(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range 30 {
		for _, tp := range []struct {
			topic     string
			partition int32
		}{{plain, 0}, {kept, 0}, {kept, 1}} {
			recs = append(recs, &kgo.Record{Topic: tp.topic, Partition: tp.partition, Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)})
		}
	}
	if err := prod.ProduceSync(k.ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsetFile := func(json string) string {
		file := filepath.Join(t.TempDir(), "offsets.json")
		if err := os.WriteFile(file, []byte(json), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	out := k.run(deleteRecordsCommand, "--offset-json-file", offsetFile(`{"version":1,"partitions":[`+
		`{"topic":"`+plain+`","partition":0,"offset":12},`+
		`{"topic":"`+kept+`","partition":0,"offset":5},`+
		`{"topic":"`+kept+`","partition":1,"offset":-1}]}`))
	got := table(t, out, "Records", "delete", "operation", "completed:")
	checkRows(t, "kafka-delete-records.sh", got,
		[]string{"partition:", plain + "-0", "low_watermark:", "12"},
		[]string{"partition:", kept + "-0", "low_watermark:", "5"},
		[]string{"partition:", kept + "-1", "low_watermark:", "30"})
	if got := lines(k.run(getOffsetShell, "--topic", plain, "--time", "-2")); len(got) != 1 || got[0] != plain+":0:12" {
		t.Errorf("earliest offset after the tool: %q", got)
	}

	// Past the end: the tool names the error and the log start stays.
	out = k.run(deleteRecordsCommand, "--offset-json-file", offsetFile(`{"version":1,"partitions":[{"topic":"`+kept+`","partition":0,"offset":31}]}`))
	if !strings.Contains(out, "partition: "+kept+"-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException") {
		t.Errorf("kafka-delete-records.sh past the end said:\n%s", out)
	}

	cl := newClient(t, c)
	want := map[string]map[int32]int64{plain: {0: 12}, kept: {0: 5, 1: 30}}
	starts, err := kadm.NewClient(cl).ListStartOffsets(k.ctx, plain, kept)
	if err != nil {
		t.Fatal(err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != want[o.Topic][o.Partition] {
			t.Errorf("ListOffsets earliest of %s-%d: %d %v, want %d", o.Topic, o.Partition, o.Offset, o.Err, want[o.Topic][o.Partition])
		}
	})
	for _, topic := range []string{plain, kept} {
		start := want[topic][0]
		if p := fetchAt(k.ctx, t, cl, topic, start-1); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != start {
			t.Errorf("%s: fetch below the log start: error %d, log start %d; want OFFSET_OUT_OF_RANGE and %d", topic, p.ErrorCode, p.LogStartOffset, start)
		}
	}

	// A consumer from the start reads partition 0 of each from its new
	// log start; the emptied partition 1 from what comes next.
	if _, err := prod.ProduceSync(k.ctx, &kgo.Record{Topic: kept, Partition: 1, Key: []byte("k"), Value: []byte("next")}).First(); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, c, kgo.ConsumeTopics(plain, kept), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	first := map[string]*kgo.Record{}
	for len(first) < 3 {
		fetches := cons.PollFetches(k.ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if tp := fmt.Sprintf("%s-%d", r.Topic, r.Partition); first[tp] == nil {
				first[tp] = r
			}
		})
	}
	for tp, want := range map[string]string{plain + "-0": "12 v12", kept + "-0": "5 v5", kept + "-1": "30 next"} {
		if r := first[tp]; fmt.Sprintf("%d %s", r.Offset, r.Value) != want {
			t.Errorf("%s: a consumer from the start read first offset %d %q, want %s", tp, r.Offset, r.Value, want)
		}
	}
}
