package test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
)

// Topic names DIS cannot hold as stream names: a dot, 249 characters (the
// most Kafka allows), and the encoded prefix itself.
var (
	dottedTopic = "orders.v1"
	longTopic   = strings.Repeat("l", 240) + ".long_-.x"
	prefixTopic = "disgw-orders"
	plainTopic  = "under_score-dash"
)

// TestTopicNamesKcat produces to and consumes from topics whose names DIS
// cannot hold, with kcat: orders.v1 auto-created by kcat's own Metadata
// request, a 249-character name, and a name with '_' and '-'.
func TestTopicNamesKcat(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	c := startCluster(t, nil)
	if len(longTopic) != 249 {
		t.Fatalf("the long name has %d characters", len(longTopic))
	}
	createTopic(t, c, longTopic, 1, nil)
	createTopic(t, c, plainTopic, 1, nil)
	for _, topic := range []string{dottedTopic, longTopic, plainTopic} {
		runKcat(t, "k1:v1\nk2:v2\n", "-b", c.Addr, "-P", "-t", topic, "-p", "0", "-K:")
		got := runKcat(t, "", "-b", c.Addr, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", `%t %k=%s@%o\n`)
		if want := topic + " k1=v1@0\n" + topic + " k2=v2@1\n"; got != want {
			t.Fatalf("kcat consumed %q, want %q", got, want)
		}
	}
	meta := runKcat(t, "", "-b", c.Addr, "-L")
	for _, topic := range []string{dottedTopic, longTopic, plainTopic} {
		if !strings.Contains(meta, `topic "`+topic+`" with 1 partitions`) {
			t.Errorf("kcat -L lacks %s:\n%s", topic, meta)
		}
	}
	if strings.Contains(meta, "disgw-orders_v1-") {
		t.Errorf("kcat -L shows an encoded stream name:\n%s", meta)
	}
}

// TestTopicNamesAdmin runs the admin APIs on topics DIS holds under encoded
// stream names, checks what a DIS-native listing shows, and that Kafka's
// '.' against '_' collision rule and name rules hold.
func TestTopicNamesAdmin(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	cl := newClient(t, c)
	adm := kadm.NewClient(cl)
	ctx := testContext(t, 60*time.Second)
	names := []string{dottedTopic, longTopic, prefixTopic, plainTopic}

	created, err := adm.CreateTopics(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("172800000")}, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if ct := created[n]; ct.Err != nil || ct.ID == [16]byte{} || ct.NumPartitions != 2 {
			t.Fatalf("create %s: %v %q", n, ct.Err, ct.ErrMessage)
		}
	}
	again, err := adm.CreateTopics(ctx, 1, 1, nil, dottedTopic)
	if err != nil || !errors.Is(again[dottedTopic].Err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v %v", err, again[dottedTopic].Err)
	}

	// Kafka refuses a name that differs from an existing one only by '.'
	// against '_', both ways round, even when only validating.
	for _, collide := range []string{"orders_v1", "under.score-dash"} {
		for _, validate := range []bool{false, true} {
			create := adm.CreateTopics
			if validate {
				create = adm.ValidateCreateTopics
			}
			res, err := create(ctx, 1, 1, nil, collide)
			if err != nil {
				t.Fatal(err)
			}
			if r := res[collide]; !errors.Is(r.Err, kerr.InvalidTopicException) || !strings.Contains(r.ErrMessage, "collides with existing topics") {
				t.Fatalf("%s (validate %v): %v %q, want INVALID_TOPIC_EXCEPTION", collide, validate, r.Err, r.ErrMessage)
			}
		}
	}
	for _, bad := range []string{strings.Repeat("x", 250), "..", ".", "a b", "a/b"} {
		res, err := adm.CreateTopics(ctx, 1, 1, nil, bad)
		if err != nil {
			t.Fatal(err)
		}
		if r := res[bad]; !errors.Is(r.Err, kerr.InvalidTopicException) || r.ErrMessage == "" {
			t.Fatalf("%.20q: %v %q, want INVALID_TOPIC_EXCEPTION", bad, r.Err, r.ErrMessage)
		}
	}

	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed.Names(); !sameSet(got, names) {
		t.Fatalf("ListTopics = %q, want %q", got, names)
	}
	for _, n := range names {
		if d := listed[n]; d.Err != nil || len(d.Partitions) != 2 || d.ID != created[n].ID {
			t.Fatalf("ListTopics %s: %v, %d partitions, id %v", n, d.Err, len(d.Partitions), d.ID)
		}
	}
	byID, err := adm.ListTopics(ctx, dottedTopic)
	if err != nil || byID[dottedTopic].Err != nil {
		t.Fatalf("metadata of one named topic: %v %v", err, byID[dottedTopic].Err)
	}

	// A DIS-native listing shows the encoded stream names, with the Kafka
	// name in the disgw-topic-name tags.
	streams := map[string][]disclient.Tag{}
	for start := ""; ; {
		resp, err := c.Client.ListStreams(ctx, 100, start)
		if err != nil {
			t.Fatal(err)
		}
		for _, si := range resp.StreamInfoList {
			streams[si.StreamName] = si.Tags
		}
		if !resp.HasMoreStreams {
			break
		}
		start = resp.StreamNames[len(resp.StreamNames)-1]
	}
	if _, ok := streams[plainTopic]; !ok {
		t.Errorf("%s is not its own stream: %v", plainTopic, streams)
	}
	for _, n := range []string{dottedTopic, longTopic, prefixTopic} {
		if _, ok := streams[n]; ok {
			t.Errorf("%s is a stream of that name: DIS cannot hold it", n)
		}
	}
	var dotted string
	for s, tags := range streams {
		if strings.HasPrefix(s, "disgw-orders_v1-") {
			dotted = s
			if v := tagValue(tags, "disgw-topic-name"); v != dottedTopic {
				t.Errorf("stream %s carries topic name %q", s, v)
			}
		}
		if len(s) > 64 {
			t.Errorf("stream name %s is longer than DIS allows", s)
		}
	}
	if dotted == "" {
		t.Fatalf("no encoded stream for %s among %v", dottedTopic, streams)
	}
	var long strings.Builder
	for _, tags := range streams {
		if v := tagValue(tags, "disgw-topic-name"); strings.HasPrefix(v, "llll") {
			long.WriteString(v)
			for i := 1; tagValue(tags, "disgw-topic-name-"+string(rune('0'+i))) != ""; i++ {
				long.WriteString(tagValue(tags, "disgw-topic-name-"+string(rune('0'+i))))
			}
		}
	}
	if long.String() != longTopic {
		t.Errorf("the long name's tags read %q", long.String())
	}

	// Configs read and change under the Kafka name.
	described, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range described {
		if rc.Err != nil || !slices.Contains(names, rc.Name) {
			t.Fatalf("DescribeConfigs %s: %v", rc.Name, rc.Err)
		}
		if v := configValue(rc, "retention.ms"); v != "172800000" {
			t.Fatalf("%s retention.ms = %q", rc.Name, v)
		}
	}
	alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("259200000")}}
	altered, err := adm.AlterTopicConfigs(ctx, alter, dottedTopic, longTopic)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range altered {
		if r.Err != nil {
			t.Fatalf("alter %s: %v %q", r.Name, r.Err, r.ErrMessage)
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, longTopic)
	if err != nil || len(rcs) != 1 || configValue(rcs[0], "retention.ms") != "259200000" {
		t.Fatalf("after the alter: %v %v", err, rcs)
	}
	grown, err := adm.UpdatePartitions(ctx, 3, dottedTopic)
	if err != nil || grown[dottedTopic].Err != nil {
		t.Fatalf("grow %s: %v %v", dottedTopic, err, grown[dottedTopic].Err)
	}

	// A group commits on the dotted topic; fetching all its offsets names
	// the topic by its Kafka name.
	pcl := newClient(t, c, kgo.DefaultProduceTopic(dottedTopic))
	if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// franz-go fetches by topic id (Fetch v13+) and lists offsets by name.
	ccl := newClient(t, c, kgo.ConsumeTopics(dottedTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := ccl.PollFetches(ctx)
	if err := fetches.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fetches.Records(); len(recs) != 1 || recs[0].Topic != dottedTopic || string(recs[0].Value) != "v" {
		t.Fatalf("consumed %+v", recs)
	}
	ends, err := adm.ListEndOffsets(ctx, dottedTopic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("ListOffsets: %v %v", err, ends.Error())
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 1 {
		t.Fatalf("end offsets sum to %d, want 1", total)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: dottedTopic, Partition: 0, At: 0, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "names-group", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, "names-group")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, fetched.Error())
	}
	if _, ok := fetched.Lookup(dottedTopic, 0); !ok {
		t.Fatalf("offsets fetched for all topics lack %s: %v", dottedTopic, fetched)
	}

	deleted, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if deleted[n].Err != nil {
			t.Fatalf("delete %s: %v", n, deleted[n].Err)
		}
	}
	if _, err := c.Client.DescribeStream(ctx, dotted, "", 1); !disclient.IsCode(err, disclient.CodeStreamNotFound) {
		t.Fatalf("the stream of a deleted topic: %v", err)
	}
	// The collision rule is against existing topics only.
	res, err := adm.CreateTopics(ctx, 1, 1, nil, "orders_v1")
	if err != nil || res["orders_v1"].Err != nil {
		t.Fatalf("create orders_v1 after deleting orders.v1: %v %v", err, res["orders_v1"].Err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func tagValue(tags []disclient.Tag, key string) string {
	for _, t := range tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

func configValue(rc kadm.ResourceConfig, name string) string {
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}
