package test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
)

// Kept topics end to end (docs/design.md §12): franz-go clients over real
// sockets, one gateway, and the embedded DIS, with one clock the test
// moves that both go by, so that DIS really expires the topic's records
// and the keeper really rewrites them, days at a time.

// keepClock is the wall clock plus a skew the test adds to.
type keepClock struct{ skew atomic.Int64 }

func (c *keepClock) now() time.Time          { return time.Now().Add(time.Duration(c.skew.Load())) }
func (c *keepClock) advance(d time.Duration) { c.skew.Add(int64(d)) }

// swapRegistry registers the gateway's metrics with a registry the test
// replaces before it starts another gateway with the same configuration.
type swapRegistry struct {
	mu  sync.Mutex
	reg *prometheus.Registry
}

func (r *swapRegistry) current() *prometheus.Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reg
}

func (r *swapRegistry) Register(c prometheus.Collector) error   { return r.current().Register(c) }
func (r *swapRegistry) MustRegister(cs ...prometheus.Collector) { r.current().MustRegister(cs...) }
func (r *swapRegistry) Unregister(c prometheus.Collector) bool  { return r.current().Unregister(c) }

func (r *swapRegistry) renew() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reg = prometheus.NewRegistry()
}

// keptCluster is a gateway whose keeper looks every 50 ms, over an
// embedded DIS, both on the test's clock.
type keptCluster struct {
	*Cluster
	t     *testing.T
	ctx   context.Context
	clock *keepClock
	reg   *swapRegistry
	// name is the test's one topic.
	name string
	// step is how far pass moves the clock: half of how long DIS keeps
	// the topic's records, when the keeper's next rewrite is due.
	step time.Duration
	// passes counts pass; cut is the end offset before the last, which
	// is the cut of the generation it made.
	passes int
	cut    int64
}

func startKeptCluster(t *testing.T) *keptCluster {
	t.Helper()
	k := &keptCluster{t: t, ctx: testContext(t, 3*time.Minute), clock: &keepClock{}, reg: &swapRegistry{reg: prometheus.NewRegistry()}}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Sync: dislocal.SyncNone, Logger: log, Clock: k.clock.now,
		Gateway: func(cfg *gateway.Config) {
			cfg.KeepInterval = 50 * time.Millisecond
			cfg.Registry = k.reg
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	k.Cluster = c
	return k
}

// createKept creates the test's topic, a one-partition kept topic with
// configs, and sets the step by how long DIS keeps its stream's records.
func (k *keptCluster) createKept(topic string, configs map[string]*string) {
	k.t.Helper()
	createTopic(k.t, k.Cluster, topic, 1, configs)
	k.name = topic
	k.step = time.Duration(streamRetention(k.t, k.Cluster, topic)) * time.Hour / 2
}

// rewrites is disgw_keep_rewrites_total{result} of the running gateway.
func (k *keptCluster) rewrites(result string) float64 {
	k.t.Helper()
	mfs, err := k.reg.current().Gather()
	if err != nil {
		k.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "disgw_keep_rewrites_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// awaitRewrites waits until the keeper has made n generations current,
// and fails if a rewrite failed or was fenced.
func (k *keptCluster) awaitRewrites(n float64) {
	k.t.Helper()
	for k.rewrites("written") < n {
		if bad := k.rewrites("failed") + k.rewrites("fenced"); bad > 0 {
			k.t.Fatalf("%v rewrites failed or were fenced (the log says why)", bad)
		}
		if k.ctx.Err() != nil {
			k.t.Fatalf("the keeper made %v generations, want %v", k.rewrites("written"), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pass moves the clock on by a step and waits for the keeper's rewrite,
// which is due then.
func (k *keptCluster) pass() {
	k.t.Helper()
	k.cut = k.endOffset(k.name)
	before := k.rewrites("written")
	k.clock.advance(k.step)
	k.awaitRewrites(before + 1)
	k.passes++
}

// restart starts a new gateway on the same embedded DIS.
func (k *keptCluster) restart() {
	k.t.Helper()
	k.reg.renew()
	if err := k.RestartGateway(); err != nil {
		k.t.Fatal(err)
	}
}

// endOffset is ListOffsets latest of partition 0 of topic.
func (k *keptCluster) endOffset(topic string) int64 {
	k.t.Helper()
	ends, err := kadm.NewClient(newClient(k.t, k.Cluster)).ListEndOffsets(k.ctx, topic)
	if err != nil {
		k.t.Fatal(err)
	}
	o, _ := ends.Lookup(topic, 0)
	if o.Err != nil {
		k.t.Fatal(o.Err)
	}
	return o.Offset
}

// seqRange is what DIS holds of partition 0 of stream: its earliest and
// next sequence numbers.
func (k *keptCluster) seqRange(stream string) (earliest, next int64) {
	k.t.Helper()
	d, err := k.Client.DescribeStream(k.ctx, stream, "", 10)
	if err != nil {
		k.t.Fatal(err)
	}
	earliest, next, err = disclient.ParseSequenceNumberRange(d.Partitions[0].SequenceNumberRange)
	if err != nil {
		k.t.Fatal(err)
	}
	return earliest, next
}

// awaitExpired waits until DIS has expired the records of stream below
// sequence number seq.
func (k *keptCluster) awaitExpired(stream string, seq int64) {
	k.t.Helper()
	waitFor(k.t, fmt.Sprintf("DIS to expire %s below %d", stream, seq), func() bool {
		e, _ := k.seqRange(stream)
		return e >= seq
	})
}

// produce writes recs to partition 0 of topic and gives them to the model.
func (k *keptCluster) produce(m *keyModel, topic string, recs ...*kgo.Record) {
	k.t.Helper()
	cl := newClient(k.t, k.Cluster, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	res := cl.ProduceSync(k.ctx, recs...)
	if err := res.FirstErr(); err != nil {
		k.t.Fatal(err)
	}
	for _, r := range res {
		m.wrote(r.Record, k.passes)
	}
}

// consume polls cl until it has the record before end, checking that
// offsets only go up from after.
func (k *keptCluster) consume(cl *kgo.Client, after, end int64) []*kgo.Record {
	k.t.Helper()
	var out []*kgo.Record
	for last := after; last < end-1; {
		fs := cl.PollFetches(k.ctx)
		if k.ctx.Err() != nil {
			k.t.Fatalf("consumed up to offset %d of %d", last, end)
		}
		fs.EachError(func(topic string, p int32, err error) {
			k.t.Fatalf("fetch %s-%d after offset %d: %v", topic, p, last, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				k.t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			out = append(out, r)
		})
	}
	return out
}

// readAll reads partition 0 of topic from its earliest offset to its end
// with a fresh consumer.
func (k *keptCluster) readAll(topic string) []*kgo.Record {
	k.t.Helper()
	end := k.endOffset(topic)
	cl := newClient(k.t, k.Cluster, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	return k.consume(cl, -1, end)
}

// keyWrite is a key's latest record: its offset and value (nil for a
// tombstone), and how many passes there had been before it was written.
type keyWrite struct {
	offset int64
	value  []byte
	passes int
}

// keyModel is what a compacted topic must serve: each key's latest write.
type keyModel struct{ latest map[string]keyWrite }

func newKeyModel() *keyModel { return &keyModel{latest: map[string]keyWrite{}} }

func (m *keyModel) wrote(r *kgo.Record, passes int) {
	m.latest[string(r.Key)] = keyWrite{offset: r.Offset, value: r.Value, passes: passes}
}

// deleteRetention is the delete.retention.ms of the compacted topics
// here: more than one step (36 h) and less than two, so that a tombstone
// first compacted by pass p is kept by pass p+1 and gone after pass p+2.
const deleteRetention = 54 * time.Hour

// check checks what a consumer read from the earliest offset: for every
// live key its latest value at its offset; for a deleted key its
// tombstone, or nothing once deleteRetention has passed since the pass
// that first compacted it (the one after it was written); below the cut
// of the last pass, each key once.
func (m *keyModel) check(t *testing.T, recs []*kgo.Record, passes int, cut int64) {
	t.Helper()
	seen := map[string]*kgo.Record{}
	below := map[string]int64{}
	for _, r := range recs {
		key := string(r.Key)
		if r.Offset < cut {
			if prev, ok := below[key]; ok {
				t.Fatalf("key %s at offsets %d and %d, below the cut %d: not compacted", key, prev, r.Offset, cut)
			}
			below[key] = r.Offset
		}
		seen[key] = r
	}
	live, kept, gone := 0, 0, 0
	for key, w := range m.latest {
		r, ok := seen[key]
		switch {
		case w.value != nil:
			live++
			if !ok || r.Offset != w.offset || !bytes.Equal(r.Value, w.value) {
				t.Fatalf("key %s: read %v, want %q at offset %d", key, r, w.value, w.offset)
			}
		case passes >= w.passes+3:
			gone++
			if ok {
				t.Fatalf("key %s: deleted at offset %d before pass %d, still read (offset %d, value %q) after pass %d",
					key, w.offset, w.passes+1, r.Offset, r.Value, passes)
			}
		default:
			kept++
			if !ok || r.Offset != w.offset || r.Value != nil {
				t.Fatalf("key %s: read %v, want its tombstone at offset %d", key, r, w.offset)
			}
		}
	}
	for key := range seen {
		if _, ok := m.latest[key]; !ok {
			t.Fatalf("key %s read, never written", key)
		}
	}
	t.Logf("after %d passes: %d records read, %d live keys, %d tombstones kept, %d gone", passes, len(recs), live, kept, gone)
}

// keyRecords are records for keys [from, to) with values naming round.
func keyRecords(from, to, round int) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		key := fmt.Sprintf("k%05d", i%10_000)
		recs = append(recs, &kgo.Record{Key: []byte(key), Value: fmt.Appendf(nil, "%s round %d", key, round)})
	}
	return recs
}

func compactConfigs() map[string]*string {
	return map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"),
		"delete.retention.ms": kmsg.StringPtr(fmt.Sprint(deleteRetention.Milliseconds()))}
}

// A compacted topic of 10 000 keys, updated and deleted from for ten DIS
// retention periods while DIS expires everything older underneath: a
// consumer from the earliest offset reads each live key's latest value,
// offsets only going up, tombstones until delete.retention.ms after their
// compaction, and a restarted gateway serves the same and rewrites on.
func TestKeptCompactedTopicOverTenRetentionPeriods(t *testing.T) {
	t.Parallel()
	k := startKeptCluster(t)
	const topic = "kept-compact"
	k.createKept(topic, compactConfigs())
	m := newKeyModel()
	for from := 0; from < 10_000; from += 250 {
		k.produce(m, topic, keyRecords(from, from+250, 0)...)
	}
	k.awaitRewrites(1) // the first is due as soon as there are records
	_, initial := k.seqRange(topic)

	// seqs[p] is the topic stream's next sequence number after pass p's
	// writes: DIS has expired them by pass p+2, a retention period on.
	seqs := []int64{initial}
	periods := 10 * 2 // passes: a step is half of DIS's retention
	round := func() {
		k.pass()
		p := k.passes
		if p >= 2 {
			k.awaitExpired(topic, seqs[p-2])
		}
		k.produce(m, topic, keyRecords(p*1_231, p*1_231+400, p)...)
		var deletes []*kgo.Record
		for j := range 40 {
			deletes = append(deletes, &kgo.Record{Key: fmt.Appendf(nil, "k%05d", (p*7_919+j*211)%10_000)})
		}
		k.produce(m, topic, deletes...)
		_, next := k.seqRange(topic)
		seqs = append(seqs, next)
	}
	start := time.Now()
	for range periods {
		round()
	}
	t.Logf("%d passes of %v in %v", periods, k.step, time.Since(start))

	// DIS holds none of the records first written, in the topic's stream
	// or as the first generations in the keep stream.
	if e, _ := k.seqRange(topic); e < initial {
		t.Fatalf("the topic's stream still holds sequence number %d of the first %d", e, initial)
	}
	if e, _ := k.seqRange(keepStream(topic)); e == 0 {
		t.Fatal("the keep stream still holds its first generation")
	}
	recs := k.readAll(topic)
	m.check(t, recs, k.passes, k.cut)
	starts, err := kadm.NewClient(newClient(t, k.Cluster)).ListStartOffsets(k.ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Err != nil || o.Offset > recs[0].Offset {
		t.Fatalf("ListOffsets earliest %+v, past the first record read, %d", o, recs[0].Offset)
	}

	// Another gateway, knowing only what DIS holds, serves the same, and
	// rewrites on.
	k.restart()
	m.check(t, k.readAll(topic), k.passes, k.cut)
	round()
	round()
	m.check(t, k.readAll(topic), k.passes, k.cut)
}

// A topic with retention.ms -1 keeps every record from offset 0 across ten
// DIS retention periods, also for a restarted gateway.
func TestKeptForeverTopicOverTenRetentionPeriods(t *testing.T) {
	t.Parallel()
	k := startKeptCluster(t)
	const topic = "kept-forever"
	k.createKept(topic, map[string]*string{"cleanup.policy": kmsg.StringPtr("delete"), "retention.ms": kmsg.StringPtr("-1")})
	var values [][]byte
	produce := func(n, round int) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "record %d of round %d", len(values)+i, round)}
		}
		k.produce(newKeyModel(), topic, recs...)
		for _, r := range recs {
			if r.Offset != int64(len(values)) {
				t.Fatalf("produced at offset %d, want %d", r.Offset, len(values))
			}
			values = append(values, r.Value)
		}
	}
	check := func() {
		t.Helper()
		recs := k.readAll(topic)
		if len(recs) != len(values) {
			t.Fatalf("read %d records, want %d", len(recs), len(values))
		}
		for i, r := range recs {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, values[i]) {
				t.Fatalf("record %d: offset %d %q, want %q", i, r.Offset, r.Value, values[i])
			}
		}
	}
	produce(1_000, 0)
	k.awaitRewrites(1)
	_, initial := k.seqRange(topic)
	for p := 1; p <= 20; p++ {
		k.pass()
		produce(200, p)
		if p%10 == 0 {
			check()
		}
	}
	if e, _ := k.seqRange(topic); e < initial {
		t.Fatalf("the topic's stream still holds sequence number %d of the first %d", e, initial)
	}
	k.restart()
	check()
	k.pass()
	produce(1, k.passes)
	check()
}

// A consumer group on a compacted topic commits offsets in the middle of
// a generation: at a record that stays, at one the next rewrite compacts
// away, and one member stays in the group, consuming on across the
// rewrite. After the rewrite, and after DIS expired the records the
// generation replaced, each resumes where it committed and reads what a
// fresh consumer reads from there on.
func TestKeptGroupResumesAfterRewrite(t *testing.T) {
	t.Parallel()
	k := startKeptCluster(t)
	const topic = "kept-group"
	k.createKept(topic, compactConfigs())
	m := newKeyModel()
	for from := 0; from < 2_000; from += 100 {
		k.produce(m, topic, keyRecords(from, from+100, 0)...)
	}
	k.awaitRewrites(1)
	k.pass() // the generation holds offsets [0, 2000)

	member := func(group string) *kgo.Client {
		return newClient(t, k.Cluster, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(100*time.Millisecond), kgo.FetchMaxBytes(16<<10), kgo.FetchMaxPartitionBytes(16<<10))
	}
	commit := func(cl *kgo.Client, offset int64) {
		t.Helper()
		var cerr error
		cl.CommitOffsetsSync(k.ctx, map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: offset}}},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if cerr = err; err == nil {
					for _, rt := range resp.Topics {
						for _, rp := range rt.Partitions {
							if rp.ErrorCode != 0 {
								cerr = fmt.Errorf("partition %d: error %d", rp.Partition, rp.ErrorCode)
							}
						}
					}
				}
			})
		if cerr != nil {
			t.Fatalf("commit %d: %v", offset, cerr)
		}
	}
	commitAt := map[string]int64{"stays": 700, "compacted": 350}
	for group, offset := range commitAt {
		cl := member(group)
		k.consume(cl, -1, offset+1)
		commit(cl, offset)
		cl.Close()
	}
	across := member("across")
	early := k.consume(across, -1, 1_000)
	last := early[len(early)-1].Offset
	commit(across, last+1)

	// Keys 0-499 and 1500-1599 get new values, 1000-1049 are deleted: the
	// next rewrite drops or filters their batches in the generation.
	k.produce(m, topic, keyRecords(0, 500, 1)...)
	var deletes []*kgo.Record
	for i := 1_000; i < 1_050; i++ {
		deletes = append(deletes, &kgo.Record{Key: fmt.Appendf(nil, "k%05d", i)})
	}
	k.produce(m, topic, deletes...)
	k.produce(m, topic, keyRecords(1_500, 1_600, 1)...)
	_, written := k.seqRange(topic)
	k.pass()

	// The member that stayed reads on from its position, now in the new
	// generation, to the end; with what it read before, every key's latest.
	rest := k.consume(across, last, k.endOffset(topic))
	m.check(t, append(early, rest...), k.passes, 0)
	across.Close()

	// Two passes more, a retention period, and DIS has expired the topic's
	// stream's records: everything below the end is in the keep stream only.
	for range 2 {
		k.pass()
	}
	k.awaitExpired(topic, written)
	k.produce(m, topic, keyRecords(1_900, 1_901, 2)...)
	all := k.readAll(topic)
	m.check(t, all, k.passes, k.cut)
	end := k.endOffset(topic)
	for group, offset := range commitAt {
		got := k.consume(member(group), offset-1, end)
		var want []*kgo.Record
		for _, r := range all {
			if r.Offset >= offset {
				want = append(want, r)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("group %s resumed at %d: %d records, want %d", group, offset, len(got), len(want))
		}
		for i := range got {
			if got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("group %s: record %d at offset %d %q, want %d %q", group, i, got[i].Offset, got[i].Value, want[i].Offset, want[i].Value)
			}
		}
		t.Logf("group %s resumed at %d: first record at %d, %d records", group, offset, got[0].Offset, len(got))
	}
}
