package test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// appsTargetEnv names the environment variable that points the Connect
// test at a real Apache Kafka broker instead of disgw (value "kafka"), to
// check the test's own expectations against Kafka.
const appsTargetEnv = "DISGW_APPS_TARGET"

// startAppsGateway starts a gateway over the embedded DIS as cmd/disgw
// runs a lone one: no initial rebalance delay.
func startAppsGateway(t *testing.T) *Cluster {
	t.Helper()
	return startCluster(t, func(c *gateway.Config) { c.InitialRebalanceDelay = -1 })
}

// startKafkaBroker starts an Apache Kafka broker for the test (skipping it
// without java or mvn) and stops it when the test ends.
func startKafkaBroker(ctx context.Context, t *testing.T) *KafkaBroker {
	t.Helper()
	skipWithoutJava(t)
	k, err := StartKafka(ctx, "kafka", t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.Stop()
		if t.Failed() {
			t.Logf("Kafka broker's log:\n%s", outputTail(k.LogPath))
		}
	})
	return k
}

// connectLine is the source file's line i, counting from 0.
func connectLine(i int) string { return fmt.Sprintf("line-%06d", i) }

// lineWriter appends numbered lines to the FileStream source's file.
type lineWriter struct {
	f       *os.File
	written atomic.Int64
}

// write appends lines up to (not including) n.
func (w *lineWriter) write(t *testing.T, n int) {
	var b strings.Builder
	for i := int(w.written.Load()); i < n; i++ {
		b.WriteString(connectLine(i) + "\n")
	}
	if _, err := w.f.WriteString(b.String()); err != nil {
		t.Error(err)
	}
	w.written.Store(int64(n))
}

// trickle appends one line every 2 ms until stop is closed, so that a
// worker killed meanwhile is killed in the middle of the stream.
func (w *lineWriter) trickle(t *testing.T, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Millisecond):
			w.write(t, int(w.written.Load())+1)
		}
	}
}

// sinkLines is what the FileStream sink has written so far.
func sinkLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	// A line the sink is still writing is left for the next look.
	complete := string(b[:bytes.LastIndexByte(b, '\n')+1])
	if complete == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(complete, "\n"), "\n")
}

// distinct is how many different lines lines holds.
func distinct(lines []string) int {
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	return len(seen)
}

// connectREST calls the worker's REST API and decodes its JSON answer
// into out (when not nil), returning the HTTP status, or 0 when the
// worker does not answer.
func connectREST(ctx context.Context, method, url string, body, out any) int {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// connectorStatus is the REST API's status of a connector.
type connectorStatus struct {
	Connector struct{ State string } `json:"connector"`
	Tasks     []struct{ State string }
}

// running reports whether the connector and all of its (at least one)
// tasks are RUNNING.
func (s connectorStatus) running() bool {
	if s.Connector.State != "RUNNING" || len(s.Tasks) == 0 {
		return false
	}
	for _, task := range s.Tasks {
		if task.State != "RUNNING" {
			return false
		}
	}
	return true
}

// statusRecord is a value of Connect's status topic.
type statusRecord struct {
	State      string `json:"state"`
	Generation int    `json:"generation"`
}

// readTopic reads every record of topic up to its end offsets now.
func readTopic(ctx context.Context, t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets of %s: %v %v", topic, err, ends.Error())
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
	if err != nil || starts.Error() != nil {
		t.Fatalf("start offsets of %s: %v %v", topic, err, starts.Error())
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if s, _ := starts.Lookup(topic, o.Partition); o.Offset > s.Offset {
			left[o.Partition] = o.Offset
		}
	})
	var recs []*kgo.Record
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset < end {
				recs = append(recs, r)
				if r.Offset == end-1 {
					delete(left, r.Partition)
				}
			}
		})
	}
	return recs
}

// connectStatuses is the latest value of each key of Connect's status
// topic.
func connectStatuses(ctx context.Context, t *testing.T, addr, topic string) map[string]statusRecord {
	t.Helper()
	got := map[string]statusRecord{}
	for _, r := range readTopic(ctx, t, addr, topic) {
		var s statusRecord
		if r.Value != nil && json.Unmarshal(r.Value, &s) == nil {
			got[string(r.Key)] = s
		}
	}
	return got
}

// sourcePosition is the largest file position the FileStream source
// connector named connector has stored in Connect's offsets topic, -1 if
// none.
func sourcePosition(ctx context.Context, t *testing.T, addr, topic, connector string) int64 {
	t.Helper()
	pos := int64(-1)
	for _, r := range readTopic(ctx, t, addr, topic) {
		var key []json.RawMessage
		var value struct{ Position int64 }
		if json.Unmarshal(r.Key, &key) != nil || len(key) == 0 || string(key[0]) != fmt.Sprintf("%q", connector) || json.Unmarshal(r.Value, &value) != nil {
			continue
		}
		pos = max(pos, value.Position)
	}
	return pos
}

// TestAppsConnectFileStream runs a distributed Kafka Connect worker with
// the FileStream source and sink connectors over the gateway, kills it
// with SIGKILL in the middle of a stream of lines and starts it again:
// every line reaches the sink file in order, only lines from around the
// kill twice, because the source resumes from the position it stored in
// the (compacted, kept) offsets topic and the sink from its group's
// committed offset; the connectors are RUNNING again, as the REST API and
// the status topic say. DISGW_APPS_TARGET=kafka runs it against Apache
// Kafka instead.
func TestAppsConnectFileStream(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 3*time.Minute)
	cp := appsClasspath(ctx, t)
	var addr string
	if os.Getenv(appsTargetEnv) == "kafka" {
		addr = startKafkaBroker(ctx, t).Addr
	} else {
		addr = startAppsGateway(t).Addr
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admCl.Close)
	adm := kadm.NewClient(admCl)
	// One partition, so that the sink writes the lines in the order the
	// source read them.
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "lines"); err != nil || resp.Err != nil {
		t.Fatalf("creating lines: %v %v", err, resp.Err)
	}

	dir := t.TempDir()
	srcPath, sinkPath := filepath.Join(dir, "source.txt"), filepath.Join(dir, "sink.txt")
	src, err := os.Create(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	w := &lineWriter{f: src}
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	rest := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	const configs, offsets, statuses = "connect-configs", "connect-offsets", "connect-status"
	// The replication factors are Connect's default 3 otherwise, which a
	// single broker (and disgw, where DIS keeps the replicas) refuses.
	// Short sessions and heartbeats let the restarted worker take over
	// soon after the killed one's session ends. Connect's jars all list
	// their plugins (service_load), which saves seconds of scanning.
	props := filepath.Join(dir, "worker.properties")
	if err := os.WriteFile(props, fmt.Appendf(nil, `bootstrap.servers=%s
group.id=connect-e2e
config.storage.topic=%s
offset.storage.topic=%s
status.storage.topic=%s
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
offset.flush.interval.ms=500
listeners=%s
plugin.discovery=service_load
session.timeout.ms=6000
heartbeat.interval.ms=1000
scheduled.rebalance.max.delay.ms=1000
consumer.session.timeout.ms=6000
consumer.heartbeat.interval.ms=1000
`, addr, configs, offsets, statuses, rest), 0o644); err != nil {
		t.Fatal(err)
	}
	const mainClass = "org.apache.kafka.connect.cli.ConnectDistributed"
	worker := startJava(t, "connect-1", cp, mainClass, props)
	worker.awaitLog(ctx, "Kafka Connect started")

	connectors := map[string]map[string]string{
		"src":  {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": srcPath, "topic": "lines", "tasks.max": "1"},
		"sink": {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": sinkPath, "topics": "lines", "tasks.max": "1"},
	}
	for name, config := range connectors {
		// The worker answers 409 until it has joined its group.
		waitCtx(ctx, t, worker, "creating connector "+name, func() bool {
			code := connectREST(ctx, http.MethodPut, rest+"/connectors/"+name+"/config", config, nil)
			return code == http.StatusCreated || code == http.StatusOK
		})
	}

	// Before the kill: lines the sink wrote and committed, and the source
	// stored the position after.
	const before = 1000
	w.write(t, before)
	waitCtx(ctx, t, worker, "the sink writing the first lines", func() bool { return len(sinkLines(t, sinkPath)) >= before })
	srcInfo, _ := src.Stat()
	waitCtx(ctx, t, worker, "the source storing its position", func() bool {
		return sourcePosition(ctx, t, addr, offsets, "src") == srcInfo.Size()
	})
	waitCtx(ctx, t, worker, "the sink committing its offset", func() bool {
		o, err := adm.FetchOffsets(ctx, "connect-sink")
		got, _ := o.Lookup("lines", 0)
		return err == nil && got.At == before
	})
	generations := connectStatuses(ctx, t, addr, statuses)

	// The kill, in the middle of a stream of lines, and lines written
	// while no worker runs.
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() { defer close(trickled); w.trickle(t, stop) }()
	waitCtx(ctx, t, worker, "the sink writing streamed lines", func() bool { return len(sinkLines(t, sinkPath)) >= before+200 })
	worker.kill()
	atKill := int(w.written.Load())
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-trickled
	total := int(w.written.Load()) + 100
	w.write(t, total)
	t.Logf("%d lines before the kill, %d in all", atKill, total)

	worker = startJava(t, "connect-2", cp, mainClass, props)
	waitCtx(ctx, t, worker, "every line in the sink", func() bool { return distinct(sinkLines(t, sinkPath)) >= total })

	lines := sinkLines(t, sinkPath)
	count := map[string]int{}
	next := 0
	for _, l := range lines {
		count[l]++
		if count[l] > 1 {
			continue
		}
		if l != connectLine(next) {
			t.Fatalf("the sink's line %q came when %q had not: lines out of order or missing", l, connectLine(next))
		}
		next++
	}
	if next != total || len(count) != total {
		t.Fatalf("the sink has %d different lines, want %d", len(count), total)
	}
	dups := 0
	for i := range total {
		if n := count[connectLine(i)]; n > 1 {
			dups++
			// Only lines after the last commit before the kill may come
			// again: the source went on from its stored position, not the
			// start of the file.
			if i < before || i >= atKill {
				t.Errorf("%s came %d times, though it was written before the last commits or after the kill", connectLine(i), n)
			}
		}
	}
	t.Logf("%d lines in the sink, %d different, %d of them more than once", len(lines), len(count), dups)

	for name := range connectors {
		var st connectorStatus
		waitCtx(ctx, t, worker, name+" RUNNING after the restart", func() bool {
			st = connectorStatus{}
			return connectREST(ctx, http.MethodGet, rest+"/connectors/"+name+"/status", nil, &st) == http.StatusOK && st.running()
		})
	}
	now := connectStatuses(ctx, t, addr, statuses)
	for _, key := range []string{"status-connector-src", "status-task-src-0", "status-connector-sink", "status-task-sink-0"} {
		if got, was := now[key], generations[key]; got.State != "RUNNING" || got.Generation <= was.Generation {
			t.Errorf("status topic: %s is %+v, want RUNNING in a generation after the kill's (%+v)", key, got, was)
		}
	}

	described, err := adm.DescribeTopicConfigs(ctx, configs, offsets, statuses)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range described {
		policy := ""
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				policy = c.MaybeValue()
			}
		}
		if rc.Err != nil || policy != "compact" {
			t.Errorf("%s: cleanup.policy %q (%v), want compact", rc.Name, policy, rc.Err)
		}
	}
}

// waitCtx polls cond every 100 ms until it holds, failing the test if the
// process p ends first, a minute passes or ctx expires.
func waitCtx(ctx context.Context, t *testing.T, p *javaProcess, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for !cond() {
		if ended, err := p.exited(); ended {
			t.Fatalf("waiting for %s: %s ended (%v)", what, p.name, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestAppsMirrorMakerFromKafka runs MirrorMaker 2 from an Apache Kafka
// broker into the gateway: a topic's records arrive as src.<topic>, each
// at its offset with its key, value and header; a consumer group's offsets
// committed on Kafka are translated and committed on the gateway; a config
// changed on Kafka follows; and MirrorMaker's topics on the gateway are
// compacted.
func TestAppsMirrorMakerFromKafka(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 3*time.Minute)
	cp := appsClasspath(ctx, t)
	k := startKafkaBroker(ctx, t)
	c := startAppsGateway(t)

	const topic, group, partitions, records = "orders", "billing", 3, 600
	srcCl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srcCl.Close)
	srcAdm := kadm.NewClient(srcCl)
	if resp, err := srcAdm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("creating %s on Kafka: %v %v", topic, err, resp.Err)
	}
	// Record i is at offset i/3 of partition i%3.
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Partition: int32(i % partitions), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i),
			Headers: []kgo.RecordHeader{{Key: "n", Value: fmt.Appendf(nil, "%d", i)}}})
	}
	if err := srcCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The group reads on Kafka and commits all of partition 0, part of
	// partition 1 and nothing of partition 2.
	committed := map[int32]int64{0: records / partitions, 1: 77}
	member, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	read := map[int32]int64{}
	for read[0] < committed[0] || read[1] < committed[1] {
		fs := member.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { read[r.Partition] = max(read[r.Partition], r.Offset+1) })
	}
	commit := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range committed {
		commit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var commitErr error
	member.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				commitErr = cmp.Or(commitErr, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	})
	member.Close()
	if commitErr != nil {
		t.Fatalf("committing on Kafka: %v", commitErr)
	}

	dir := t.TempDir()
	props := filepath.Join(dir, "mm2.properties")
	// Every interval is a second, so that topics, groups, checkpoints
	// and configs are looked at again while the test waits; the
	// replication factors are 3 otherwise; plugin.discovery as the
	// Connect test's.
	if err := os.WriteFile(props, fmt.Appendf(nil, `clusters=src, dst
src.bootstrap.servers=%s
dst.bootstrap.servers=%s
src->dst.enabled=true
src->dst.topics=%s
src->dst.groups=%s
replication.factor=1
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=1
emit.checkpoints.interval.seconds=1
emit.heartbeats.interval.seconds=1
refresh.topics.interval.seconds=1
refresh.groups.interval.seconds=1
sync.topic.configs.interval.seconds=1
offset.flush.interval.ms=500
plugin.discovery=service_load
`, k.Addr, c.Addr, topic, group), 0o644); err != nil {
		t.Fatal(err)
	}
	mm := startJava(t, "mirror-maker", cp, "org.apache.kafka.connect.mirror.MirrorMaker", props)

	dstCl := newClient(t, c)
	dstAdm := kadm.NewClient(dstCl)
	mirrored := "src." + topic
	waitCtx(ctx, t, mm, "the mirrored records", func() bool {
		ends, err := dstAdm.ListEndOffsets(ctx, mirrored)
		n := int64(0)
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return err == nil && ends.Error() == nil && n >= records
	})
	got := readTopic(ctx, t, c.Addr, mirrored)
	if len(got) != records {
		t.Errorf("%s holds %d records, want %d", mirrored, len(got), records)
	}
	for _, r := range got {
		i := int(r.Offset)*partitions + int(r.Partition)
		if string(r.Key) != fmt.Sprintf("k%d", i) || string(r.Value) != fmt.Sprintf("v%d", i) ||
			len(r.Headers) != 1 || r.Headers[0].Key != "n" || string(r.Headers[0].Value) != fmt.Sprint(i) {
			t.Errorf("%s partition %d offset %d: key %q value %q headers %v, want record %d", mirrored, r.Partition, r.Offset, r.Key, r.Value, r.Headers, i)
		}
	}

	// MirrorMaker translates a committed offset to the mirrored record
	// after the nearest offset sync at or below it, never past it. Which
	// syncs there are depends on when its tasks commit (the one for the
	// end of partition 0 may come much later), so the test asks for a
	// translation of each committed partition, at most as far as Kafka's.
	var translated kadm.OffsetResponses
	defer func() {
		if t.Failed() {
			t.Logf("translated offsets when the test failed: %v", translated)
		}
	}()
	waitCtx(ctx, t, mm, "the translated offsets", func() bool {
		translated, err = dstAdm.FetchOffsets(ctx, group)
		for p := range committed {
			if o, ok := translated.Lookup(mirrored, p); !ok || o.At < 1 {
				return false
			}
		}
		return err == nil
	})
	translated.Each(func(o kadm.OffsetResponse) {
		if o.Topic != mirrored || o.Err != nil || o.At < 1 || o.At > committed[o.Partition] || committed[o.Partition] == 0 {
			t.Errorf("translated offset %s %d: %d (%v), Kafka's is %d", o.Topic, o.Partition, o.At, o.Err, committed[o.Partition])
		}
	})
	t.Logf("committed on Kafka %v, on disgw %v", committed, translated)

	// A config changed on Kafka follows.
	if resps, err := srcAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("172800000")}}, topic); err != nil || resps[0].Err != nil {
		t.Fatalf("altering %s on Kafka: %v %v", topic, err, resps)
	}
	waitCtx(ctx, t, mm, "retention.ms following on "+mirrored, func() bool {
		return topicConfig(ctx, t, dstAdm, mirrored, "retention.ms") == "172800000"
	})

	for _, internal := range []string{"src.checkpoints.internal", "heartbeats", "mm2-configs.src.internal", "mm2-offsets.src.internal", "mm2-status.src.internal"} {
		if policy := topicConfig(ctx, t, dstAdm, internal, "cleanup.policy"); policy != "compact" {
			t.Errorf("%s: cleanup.policy %q, want compact", internal, policy)
		}
	}
}

// topicConfig is the value DescribeConfigs gives topic's config name, ""
// when it gives none.
func topicConfig(ctx context.Context, t *testing.T, adm *kadm.Client, topic, name string) string {
	t.Helper()
	described, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := described.On(topic, nil)
	if err != nil {
		t.Fatalf("describing %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}
