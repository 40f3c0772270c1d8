package test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaTools runs Apache Kafka's command-line tools (kafka-topics.sh and
// the others, by their main classes from the jars test/kafkatools/pom.xml
// resolves) against one gateway.
type kafkaTools struct {
	t    *testing.T
	ctx  context.Context
	cp   string
	addr string
}

// startKafkaTools skips the test without Java or Maven, resolves the
// tools' class path and starts a gateway for them.
func startKafkaTools(t *testing.T) (*kafkaTools, *Cluster) {
	t.Helper()
	skipWithoutJava(t)
	ctx := testContext(t, 5*time.Minute)
	cp := kafkaToolsClasspath(ctx, t)
	c := startCluster(t, nil)
	return &kafkaTools{t: t, ctx: ctx, cp: cp, addr: c.Addr}, c
}

// try runs main class with --bootstrap-server and args, stdin fed from
// stdin, and returns its standard output and error streams and how it
// exited. The JVM is tuned for a short life: the tools start in well under
// a second.
func (k *kafkaTools) try(stdin, class string, args ...string) (stdout, stderr string, err error) {
	k.t.Helper()
	argv := append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", k.cp, class, "--bootstrap-server", k.addr}, args...)
	cmd := exec.CommandContext(k.ctx, "java", argv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	k.t.Logf("%s %s: %v in %v", class[strings.LastIndex(class, ".")+1:], strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	return out.String(), errOut.String(), err
}

// run is try for a command that must succeed: it returns the standard
// output and fails the test on a non-zero exit.
func (k *kafkaTools) run(class string, args ...string) string {
	k.t.Helper()
	out, errOut, err := k.try("", class, args...)
	if err != nil {
		k.t.Fatalf("%s %s: %v\n%s%s", class, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fail is try for a command the gateway must refuse: the tool exits
// non-zero and says want.
func (k *kafkaTools) fail(want, class string, args ...string) {
	k.t.Helper()
	out, errOut, err := k.try("", class, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out+errOut, want) {
		k.t.Errorf("%s %s: exit %v, want a failure saying %q:\n%s%s", class, strings.Join(args, " "), err, want, out, errOut)
	}
}

// The tools' main classes, as the shell scripts of Kafka 4.4 name them.
const (
	topicCommand         = "org.apache.kafka.tools.TopicCommand"
	consumerGroupCommand = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	configCommand        = "org.apache.kafka.tools.ConfigCommand"
	getOffsetShell       = "org.apache.kafka.tools.GetOffsetShell"
	deleteRecordsCommand = "org.apache.kafka.tools.DeleteRecordsCommand"
	consoleProducer      = "org.apache.kafka.tools.ConsoleProducer"
	consoleConsumer      = "org.apache.kafka.tools.consumer.ConsoleConsumer"
	shareGroupCommand    = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
)

// lines splits a tool's output into its non-empty lines.
func lines(out string) []string {
	var ls []string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.TrimSpace(l) != "" {
			ls = append(ls, strings.TrimRight(l, "\r"))
		}
	}
	return ls
}

// table finds the column header in a tool's output and returns the rows
// under it, split into fields and sorted, so that they compare with a
// want written in the test.
func table(t *testing.T, out string, header ...string) [][]string {
	t.Helper()
	ls := lines(out)
	i := slices.IndexFunc(ls, func(l string) bool { return slices.Equal(strings.Fields(l), header) })
	if i < 0 {
		t.Fatalf("no header %q in:\n%s", header, out)
	}
	var rows [][]string
	for _, l := range ls[i+1:] {
		rows = append(rows, strings.Fields(l))
	}
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
	return rows
}

// checkRows compares a table's rows with want, column by column; a want
// cell of "*" matches anything.
func checkRows(t *testing.T, what string, got [][]string, want ...[]string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = len(got[i]) == len(want[i])
		for j := 0; ok && j < len(got[i]); j++ {
			ok = want[i][j] == "*" || want[i][j] == got[i][j]
		}
	}
	if !ok {
		t.Errorf("%s: rows\n%q\nwant\n%q", what, got, want)
	}
}

// describedTopic is kafka-topics.sh --describe for one topic: the topic
// line's fields and each partition line's, by partition.
type describedTopic struct {
	topic      map[string]string
	partitions map[string]map[string]string
}

// describeTopicTool parses kafka-topics.sh --describe --topic name, whose
// lines are tab-separated "Key: value" fields.
func describeTopicTool(k *kafkaTools, name string) describedTopic {
	k.t.Helper()
	out := k.run(topicCommand, "--describe", "--topic", name)
	d := describedTopic{partitions: make(map[string]map[string]string)}
	for _, l := range lines(out) {
		fields := make(map[string]string)
		for f := range strings.SplitSeq(strings.TrimSpace(l), "\t") {
			key, value, ok := strings.Cut(f, ": ")
			if !ok {
				k.t.Fatalf("field %q of %q is not \"Key: value\"", f, l)
			}
			fields[key] = value
		}
		if fields["Topic"] != name {
			k.t.Fatalf("describe %s printed %q", name, l)
		}
		if p, ok := fields["Partition"]; ok {
			d.partitions[p] = fields
		} else {
			d.topic = fields
		}
	}
	return d
}

// TestKafkaToolTopics runs kafka-topics.sh: --create with partitions and a
// config, --list, --describe (topic id, partition count, replication
// factor, configs, and each partition's leader, replicas and ISR as
// Metadata gives them), --alter --partitions up (down is refused),
// --delete. A replication factor other than 1 is refused: DIS keeps its
// own replicas.
func TestKafkaToolTopics(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const topic = "tools-topic"
	if out := k.run(topicCommand, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1", "--config", "retention.ms=172800000"); !strings.Contains(out, "Created topic "+topic+".") {
		t.Errorf("create printed %q", out)
	}
	// A name DIS cannot hold as a stream name is listed as Kafka's.
	k.run(topicCommand, "--create", "--topic", "tools.dotted", "--partitions", "1")
	k.fail("replication factor must be 1", topicCommand, "--create", "--topic", "tools-rf3", "--partitions", "1", "--replication-factor", "3")
	k.fail("already exists", topicCommand, "--create", "--topic", topic, "--partitions", "1")
	// As on Kafka, --list shows the internal offsets topic too
	// (--exclude-internal leaves it out).
	if got := lines(k.run(topicCommand, "--list")); !slices.Equal(got, []string{"__consumer_offsets", topic, "tools.dotted"}) {
		t.Errorf("--list: %q, want %q", got, []string{"__consumer_offsets", topic, "tools.dotted"})
	}
	if got := lines(k.run(topicCommand, "--list", "--exclude-internal")); !slices.Equal(got, []string{topic, "tools.dotted"}) {
		t.Errorf("--list --exclude-internal: %q, want %q", got, []string{topic, "tools.dotted"})
	}

	checkDescribed := func(partitions int) {
		t.Helper()
		d := describeTopicTool(k, topic)
		md, err := kadm.NewClient(newClient(t, c)).Metadata(k.ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		td := md.Topics[topic]
		want := map[string]string{
			"Topic": topic, "TopicId": base64.RawURLEncoding.EncodeToString(td.ID[:]),
			"PartitionCount": strconv.Itoa(partitions), "ReplicationFactor": "1", "Configs": "retention.ms=172800000",
		}
		if fmt.Sprint(d.topic) != fmt.Sprint(want) {
			t.Errorf("topic line %v, want %v", d.topic, want)
		}
		if len(d.partitions) != partitions || len(td.Partitions) != partitions {
			t.Fatalf("%d partitions described, %d in Metadata, want %d", len(d.partitions), len(td.Partitions), partitions)
		}
		for p, pd := range td.Partitions {
			leader := strconv.Itoa(int(pd.Leader))
			got := d.partitions[strconv.Itoa(int(p))]
			if got["Leader"] != leader || got["Replicas"] != leader || got["Isr"] != leader {
				t.Errorf("partition %d: %v, want leader, replicas and ISR %s", p, got, leader)
			}
		}
	}
	checkDescribed(2)

	k.run(topicCommand, "--alter", "--topic", topic, "--partitions", "3")
	checkDescribed(3)
	k.fail("cannot remove partitions", topicCommand, "--alter", "--topic", topic, "--partitions", "2")

	k.run(topicCommand, "--delete", "--topic", topic)
	if got := lines(k.run(topicCommand, "--list", "--exclude-internal")); !slices.Equal(got, []string{"tools.dotted"}) {
		t.Errorf("--list after --delete: %q", got)
	}
	k.fail("does not exist", topicCommand, "--describe", "--topic", topic)
}

// TestKafkaToolConsole feeds key:value lines to kafka-console-producer.sh
// on stdin and reads them back with kafka-console-consumer.sh
// --from-beginning: every line comes back, each key's in the order sent
// (one key, one partition).
func TestKafkaToolConsole(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const topic = "tools-console"
	createTopic(t, c, topic, 3, nil)
	var sent []string
	for i := range 12 {
		sent = append(sent, fmt.Sprintf("k%d:value %d", i%4, i))
	}
	// Kafka 4.4 names the line reader's and the formatter's settings
	// --reader-property and --formatter-property (--property is deprecated).
	out, errOut, err := k.try(strings.Join(sent, "\n")+"\n", consoleProducer, "--topic", topic,
		"--reader-property", "parse.key=true", "--reader-property", "key.separator=:")
	if err != nil {
		t.Fatalf("console producer: %v\n%s%s", err, out, errOut)
	}

	out = k.run(consoleConsumer, "--topic", topic, "--from-beginning", "--max-messages", strconv.Itoa(len(sent)), "--timeout-ms", "60000",
		"--formatter-property", "print.key=true", "--formatter-property", "key.separator=:")
	got := lines(out)
	if want, have := slices.Sorted(slices.Values(sent)), slices.Sorted(slices.Values(got)); !slices.Equal(have, want) {
		t.Fatalf("console consumer printed\n%q\nwant (in any order across partitions)\n%q", got, sent)
	}
	byKey := func(ls []string) map[string][]string {
		m := make(map[string][]string)
		for _, l := range ls {
			key, _, _ := strings.Cut(l, ":")
			m[key] = append(m[key], l)
		}
		return m
	}
	if g, w := byKey(got), byKey(sent); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("records by key %v, want %v", g, w)
	}
}

// produceAt writes one record per timestamp (milliseconds) to partition p
// of topic, in one batch.
func produceAt(t *testing.T, c *Cluster, topic string, p int32, stamps ...int64) {
	t.Helper()
	cl := newClient(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i, ts := range stamps {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Timestamp: time.UnixMilli(ts), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
	}
	if err := cl.ProduceSync(testContext(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, p, err)
	}
}

// TestKafkaToolGetOffsets runs kafka-get-offsets.sh: latest (the default,
// and -1), earliest (-2), earliest-local (-4), max-timestamp (-3),
// latest-tiered (-5), earliest-pending-upload (-6) and a timestamp, printed as topic:partition:offset; a partition without an
// answer (an empty one, for a timestamp) is left out, as Kafka's tool does
// for UNKNOWN_OFFSET; --topic-partitions picks partitions.
func TestKafkaToolGetOffsets(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const topic = "tools-offsets"
	createTopic(t, c, topic, 3, nil)
	base := time.Now().Add(-time.Hour).UnixMilli()
	produceAt(t, c, topic, 0, base, base+1000, base+2000, base+3000, base+4000)
	produceAt(t, c, topic, 1, base+10000, base+5000)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"tools-offsets:0:5", "tools-offsets:1:2", "tools-offsets:2:0"}},
		{[]string{"--time", "-1"}, []string{"tools-offsets:0:5", "tools-offsets:1:2", "tools-offsets:2:0"}},
		{[]string{"--time", "-2"}, []string{"tools-offsets:0:0", "tools-offsets:1:0", "tools-offsets:2:0"}},
		{[]string{"--time", "-4"}, []string{"tools-offsets:0:0", "tools-offsets:1:0", "tools-offsets:2:0"}},
		{[]string{"--time", "-3"}, []string{"tools-offsets:0:4", "tools-offsets:1:0"}},
		// Nothing is tiered: no offset, so no line (ListOffsets v9 and v11).
		{[]string{"--time", "latest-tiered"}, nil},
		{[]string{"--time", "earliest-pending-upload"}, nil},
		{[]string{"--time", strconv.FormatInt(base+2500, 10)}, []string{"tools-offsets:0:3", "tools-offsets:1:0"}},
		{[]string{"--time", strconv.FormatInt(base+7000, 10)}, []string{"tools-offsets:1:0"}},
	} {
		// The tool skips a partition whose answer is an error, saying so
		// on stderr only: stderr must stay empty.
		out, errOut, err := k.try("", getOffsetShell, append([]string{"--topic", topic}, tc.args...)...)
		if got := lines(out); err != nil || errOut != "" || !slices.Equal(got, tc.want) {
			t.Errorf("--topic %s %q: %v, %q, want %q\n%s", topic, tc.args, err, got, tc.want, errOut)
		}
	}
	if got := lines(k.run(getOffsetShell, "--topic-partitions", topic+":1")); !slices.Equal(got, []string{"tools-offsets:1:2"}) {
		t.Errorf("--topic-partitions %s:1: %q", topic, got)
	}
}

// TestKafkaToolConsumerGroups runs kafka-consumer-groups.sh over a group a
// franz-go member consumed and committed in: --list; --describe with the
// member (its consumer id, host and client id) and after it left (current
// offset, log end and lag per partition); delete and reset refused while
// it is active; --reset-offsets --to-earliest, --to-datetime and
// --shift-by -2 with --execute, each checked in --describe and in the
// committed offsets franz-go reads; --delete of the empty group.
func TestKafkaToolConsumerGroups(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const topic, group = "tools-groups", "tools-group"
	createTopic(t, c, topic, 2, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	const minute = 60_000
	produceAt(t, c, topic, 0, base, base+minute, base+2*minute, base+3*minute, base+4*minute)
	produceAt(t, c, topic, 1, base+minute/2, base+3*minute/2, base+5*minute/2)

	member := newClient(t, c, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("tools-member"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for n := 0; n < 8; {
		fs := member.PollFetches(k.ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		n += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(k.ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	if got := lines(k.run(consumerGroupCommand, "--list")); !slices.Equal(got, []string{group}) {
		t.Errorf("--list: %q, want %q", got, []string{group})
	}
	describeHeader := []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}
	describe := func() [][]string {
		t.Helper()
		return table(t, k.run(consumerGroupCommand, "--describe", "--group", group), describeHeader...)
	}
	checkRows(t, "describe with the member", describe(),
		[]string{group, topic, "0", "5", "5", "0", "*", "/127.0.0.1", "tools-member"},
		[]string{group, topic, "1", "3", "3", "0", "*", "/127.0.0.1", "tools-member"})
	if out := k.run(consumerGroupCommand, "--delete", "--group", group); !strings.Contains(out, "GroupNotEmptyException") {
		t.Errorf("--delete of an active group printed %q, want GroupNotEmptyException", out)
	}
	if out := k.run(consumerGroupCommand, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"); !strings.Contains(out, "can only be reset if the group '"+group+"' is inactive") {
		t.Errorf("--reset-offsets of an active group printed %q", out)
	}

	member.Close()
	produceAt(t, c, topic, 0, time.Now().UnixMilli(), time.Now().UnixMilli())
	// The tool says so on stderr, before the table on stdout.
	if out, errOut, err := k.try("", consumerGroupCommand, "--describe", "--group", group); err != nil || !strings.Contains(errOut, "Consumer group '"+group+"' has no active members.") {
		t.Errorf("describe after the member left: %v\n%s%s", err, out, errOut)
	}
	checkRows(t, "describe after the member left", describe(),
		[]string{group, topic, "0", "5", "7", "2", "-", "-", "-"},
		[]string{group, topic, "1", "3", "3", "0", "-", "-", "-"})

	adm := kadm.NewClient(newClient(t, c))
	reset := func(how string, p0, p1 int64, args ...string) {
		t.Helper()
		out := k.run(consumerGroupCommand, append([]string{"--reset-offsets", "--group", group, "--topic", topic, "--execute"}, args...)...)
		o0, o1 := strconv.FormatInt(p0, 10), strconv.FormatInt(p1, 10)
		checkRows(t, how, table(t, out, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
			[]string{group, topic, "0", o0}, []string{group, topic, "1", o1})
		checkRows(t, "describe after "+how, describe(),
			[]string{group, topic, "0", o0, "7", strconv.FormatInt(7-p0, 10), "-", "-", "-"},
			[]string{group, topic, "1", o1, "3", strconv.FormatInt(3-p1, 10), "-", "-", "-"})
		committed, err := adm.FetchOffsets(k.ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range []int64{p0, p1} {
			if r, ok := committed.Lookup(topic, int32(p)); !ok || r.Err != nil || r.At != want {
				t.Errorf("%s: partition %d committed %+v, want %d", how, p, r, want)
			}
		}
	}
	reset("--to-earliest", 0, 0, "--to-earliest")
	// The first records at or after 2.5 minutes past base: p0's fourth
	// (3 minutes), p1's third (2.5 minutes).
	at := time.UnixMilli(base + 5*minute/2).UTC().Format("2006-01-02T15:04:05.000Z")
	reset("--to-datetime "+at, 3, 2, "--to-datetime", at)
	reset("--shift-by -2", 1, 0, "--shift-by", "-2")

	if out := k.run(consumerGroupCommand, "--delete", "--group", group); !strings.Contains(out, "Deletion of requested consumer groups ('"+group+"') was successful.") {
		t.Errorf("--delete printed %q", out)
	}
	if got := lines(k.run(consumerGroupCommand, "--list")); len(got) != 0 {
		t.Errorf("--list after --delete: %q", got)
	}
	if out := k.run(consumerGroupCommand, "--describe", "--group", group); !strings.Contains(out, "Consumer group '"+group+"' does not exist.") {
		t.Errorf("describe after --delete printed %q", out)
	}
}

// TestKafkaToolShareGroups runs kafka-share-groups.sh against a gateway
// (kafkaToolShareGroups).
func TestKafkaToolShareGroups(t *testing.T) {
	t.Parallel()
	k, _ := startKafkaTools(t)
	kafkaToolShareGroups(t, k)
}

// kafkaToolShareGroups runs kafka-share-groups.sh over a share group a
// franz-go share consumer read a topic in, accepting every record:
// --list; --describe --state and --members with the member; --describe
// --offsets (no lag); --delete and
// --reset-offsets refused while it is active; after it left,
// --reset-offsets --to-earliest --execute and the lag it makes,
// --delete-offsets, after which the group has no offsets, and --delete.
// It talks to k's address only, so that it runs against Apache Kafka
// alike.
func kafkaToolShareGroups(t *testing.T, k *kafkaTools) {
	const topic, group = "tools-share", "tools-share-group"
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 10_000
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: 2, ReplicationFactor: 1}}
	if resp, err := create.RequestWith(k.ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	for i := range 8 {
		if err := cl.ProduceSync(k.ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	configs := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	configs.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	if resp, err := configs.RequestWith(k.ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %v %+v", err, resp)
	}

	member, err := kgo.NewClient(kgo.SeedBrokers(k.addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("tools-share-member"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for n := 0; n < 8; {
		fs := member.PollRecords(k.ctx, 100)
		if err := fs.Err0(); err != nil {
			t.Fatalf("share poll: %v", err)
		}
		member.MarkAcks(kgo.AckAccept, fs.Records()...)
		n += fs.NumRecords()
	}
	if err := member.FlushAcks(k.ctx); err != nil {
		t.Fatalf("acknowledge: %v", err)
	}

	if got := lines(k.run(shareGroupCommand, "--list")); !slices.Equal(got, []string{group}) {
		t.Errorf("--list: %q, want %q", got, []string{group})
	}
	checkRows(t, "--describe --state", table(t, k.run(shareGroupCommand, "--describe", "--group", group, "--state"), "GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"),
		[]string{group, "*", "*", "Stable", "1"})
	checkRows(t, "--describe --members", table(t, k.run(shareGroupCommand, "--describe", "--group", group, "--members"), "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"),
		[]string{group, "*", "/127.0.0.1", "tools-share-member", "2", topic + ":0,1"})
	offsetsHeader := []string{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}
	offsets := func() string { return k.run(shareGroupCommand, "--describe", "--group", group, "--offsets") }
	// Every record is done, so no lag; Kafka reports the start offset as
	// its share coordinator last wrote it, which may trail (0 here).
	checkRows(t, "--describe --offsets with the member", table(t, offsets(), offsetsHeader...),
		[]string{group, topic, "0", "*", "0"}, []string{group, topic, "1", "*", "0"})
	if out := k.run(shareGroupCommand, "--delete", "--group", group); !strings.Contains(out, "GroupNotEmptyException") {
		t.Errorf("--delete of an active share group printed %q, want GroupNotEmptyException", out)
	}
	k.fail("Share group '"+group+"' is not empty.", shareGroupCommand, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")

	member.Close()
	for {
		out, errOut, err := k.try("", shareGroupCommand, "--describe", "--group", group, "--members")
		if err != nil {
			t.Fatalf("--describe --members after the member left: %v\n%s%s", err, out, errOut)
		}
		if strings.Contains(errOut, "Share group '"+group+"' has no active members.") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkRows(t, "--reset-offsets --to-earliest", table(t, k.run(shareGroupCommand, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"), "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
		[]string{group, topic, "0", "0"}, []string{group, topic, "1", "0"})
	checkRows(t, "--describe --offsets after the reset", table(t, offsets(), offsetsHeader...),
		[]string{group, topic, "0", "0", "4"}, []string{group, topic, "1", "0", "4"})
	checkRows(t, "--delete-offsets", table(t, k.run(shareGroupCommand, "--delete-offsets", "--group", group, "--topic", topic), "TOPIC", "STATUS"),
		[]string{topic, "Successful"})
	if out := offsets(); !strings.Contains(out, "Share group '"+group+"' has no offset information.") {
		t.Errorf("--describe --offsets after --delete-offsets printed %q", out)
	}
	if out := k.run(shareGroupCommand, "--delete", "--group", group); !strings.Contains(out, "Deletion of requested share groups ('"+group+"') was successful.") {
		t.Errorf("--delete printed %q", out)
	}
	if got := lines(k.run(shareGroupCommand, "--list")); len(got) != 0 {
		t.Errorf("--list after --delete: %q", got)
	}
}

// TestKafkaToolConfigs runs kafka-configs.sh on a topic: --describe (no
// override, then the one --alter --add-config set, with its synonyms),
// retention.ms rounded up to whole hours as DIS keeps it, a retention
// over 72 hours refused, --describe --all, and
// --delete-config back to the 24 h default; a broker describes without
// dynamic configs; a group describes with the consumer protocol's
// heartbeat interval and session timeout, which it cannot alter.
func TestKafkaToolConfigs(t *testing.T) {
	t.Parallel()
	k, c := startKafkaTools(t)
	const topic = "tools-configs"
	createTopic(t, c, topic, 1, nil)
	entity := []string{"--entity-type", "topics", "--entity-name", topic}
	describe := func(extra ...string) []string {
		t.Helper()
		ls := lines(k.run(configCommand, append(append([]string{"--describe"}, entity...), extra...)...))
		if len(ls) == 0 {
			t.Fatal("describe printed nothing")
		}
		for i := range ls {
			ls[i] = strings.TrimSpace(ls[i])
		}
		return ls
	}
	alter := func(args ...string) {
		t.Helper()
		if out := k.run(configCommand, append(append([]string{"--alter"}, entity...), args...)...); !strings.Contains(out, "Completed updating config for topic "+topic+".") {
			t.Errorf("--alter %q printed %q", args, out)
		}
	}
	dynamic := "Dynamic configs for topic " + topic + " are:"
	if got := describe(); !slices.Equal(got, []string{dynamic}) {
		t.Errorf("describe before --alter: %q", got)
	}

	alter("--add-config", "retention.ms=172800000")
	want := []string{dynamic, "retention.ms=172800000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=172800000, DEFAULT_CONFIG:retention.ms=86400000}"}
	if got := describe(); !slices.Equal(got, want) {
		t.Errorf("describe after --add-config:\n%q\nwant\n%q", got, want)
	}
	alter("--add-config", "retention.ms=100000000")
	if got := describe(); len(got) != 2 || !strings.HasPrefix(got[1], "retention.ms=100800000 ") {
		t.Errorf("describe after retention.ms=100000000: %q, want 100800000 (28 h, rounded up to whole hours)", got)
	}
	k.fail("at least 1 ms", configCommand, append(append([]string{"--alter"}, entity...), "--add-config", "retention.ms=0")...)

	all := describe("--all")
	for _, w := range []string{"All configs for topic " + topic + " are:", "cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:cleanup.policy=delete}",
		"retention.ms=100800000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=100800000, DEFAULT_CONFIG:retention.ms=86400000}"} {
		if !slices.Contains(all, w) {
			t.Errorf("describe --all lacks %q:\n%q", w, all)
		}
	}

	alter("--delete-config", "retention.ms")
	if got := describe(); !slices.Equal(got, []string{dynamic}) {
		t.Errorf("describe after --delete-config: %q", got)
	}
	if all := describe("--all"); !slices.Contains(all, "retention.ms=86400000 sensitive=false synonyms={DEFAULT_CONFIG:retention.ms=86400000}") {
		t.Errorf("describe --all after --delete-config:\n%q", all)
	}

	md, err := kadm.NewClient(newClient(t, c)).BrokerMetadata(k.ctx)
	if err != nil {
		t.Fatal(err)
	}
	broker := strconv.Itoa(int(md.Brokers[0].NodeID))
	if got := lines(k.run(configCommand, "--describe", "--entity-type", "brokers", "--entity-name", broker)); !slices.Equal(got, []string{"Dynamic configs for broker " + broker + " are:"}) {
		t.Errorf("broker %s: %q", broker, got)
	}

	// A group's consumer-protocol configs (KIP-848) and share timings are
	// the gateway's, the same for every group; its share.* configs
	// (KIP-932) are its own.
	group := []string{"--entity-type", "groups", "--entity-name", "tools-config-group"}
	if got := lines(k.run(configCommand, append([]string{"--describe"}, group...)...)); !slices.Equal(got, []string{"Dynamic configs for group tools-config-group are:"}) {
		t.Errorf("group: %q", got)
	}
	want = []string{"All configs for group tools-config-group are:",
		"  consumer.heartbeat.interval.ms=5000 sensitive=false synonyms={DEFAULT_CONFIG:consumer.heartbeat.interval.ms=5000}",
		"  consumer.session.timeout.ms=45000 sensitive=false synonyms={DEFAULT_CONFIG:consumer.session.timeout.ms=45000}",
		"  share.auto.offset.reset=latest sensitive=false synonyms={DEFAULT_CONFIG:share.auto.offset.reset=latest}",
		"  share.heartbeat.interval.ms=5000 sensitive=false synonyms={DEFAULT_CONFIG:share.heartbeat.interval.ms=5000}",
		"  share.isolation.level=read_uncommitted sensitive=false synonyms={DEFAULT_CONFIG:share.isolation.level=read_uncommitted}",
		"  share.record.lock.duration.ms=30000 sensitive=false synonyms={DEFAULT_CONFIG:share.record.lock.duration.ms=30000}",
		"  share.session.timeout.ms=45000 sensitive=false synonyms={DEFAULT_CONFIG:share.session.timeout.ms=45000}"}
	if got := lines(k.run(configCommand, append([]string{"--describe", "--all"}, group...)...)); !slices.Equal(got, want) {
		t.Errorf("group --all:\n%q\nwant\n%q", got, want)
	}
	k.run(configCommand, append([]string{"--alter", "--add-config", "share.auto.offset.reset=earliest"}, group...)...)
	want = []string{"Dynamic configs for group tools-config-group are:",
		"  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}"}
	if got := lines(k.run(configCommand, append([]string{"--describe"}, group...)...)); !slices.Equal(got, want) {
		t.Errorf("group after --alter:\n%q\nwant\n%q", got, want)
	}
	k.fail("the same for every group", configCommand, append([]string{"--alter", "--add-config", "consumer.session.timeout.ms=30000"}, group...)...)
}
