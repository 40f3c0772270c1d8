package test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wordCountClass is the Kafka Streams word count of test/apps.
const wordCountClass = "disgw.apps.WordCount"

// streamsSettings are Streams configs that keep a test short: commits
// every 100 ms, every count written at once (no cache), a dead instance's
// group member gone after the gateway's shortest session timeout.
var streamsSettings = []string{
	"commit.interval.ms=100",
	"statestore.cache.max.bytes=0",
	"consumer.session.timeout.ms=6000",
	"consumer.heartbeat.interval.ms=500",
}

// wordCount is one run of the word count: the topics it reads and writes,
// the words produced to it so far, and its output as read back.
type wordCount struct {
	t      *testing.T
	ctx    context.Context
	c      *Cluster
	cp     string
	appID  string
	input  string
	output string
	// produced counts each word produced to the input topic.
	produced map[string]int64
	// counts holds, by word, every count the output topic had, in order.
	counts map[string][]int64
	lines  int
	rnd    *rand.Rand
	prod   *kgo.Client
	cons   *kgo.Client
	adm    *kadm.Client
}

// newWordCount creates the input and output topics of application appID,
// each of two partitions, and the clients that feed and read them.
func newWordCount(t *testing.T, c *Cluster, appID string) *wordCount {
	ctx := testContext(t, 2*time.Minute)
	w := &wordCount{t: t, ctx: ctx, c: c, cp: appsClasspath(ctx, t), appID: appID,
		input: appID + "-lines", output: appID + "-counts",
		produced: map[string]int64{}, counts: map[string][]int64{}, rnd: rand.New(rand.NewPCG(37, 1))}
	createTopic(t, c, w.input, 2, nil)
	createTopic(t, c, w.output, 2, nil)
	w.prod = newClient(t, c, kgo.DefaultProduceTopic(w.input))
	w.cons = newClient(t, c, kgo.ConsumeTopics(w.output), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	w.adm = kadm.NewClient(newClient(t, c))
	return w
}

// start runs an instance of the application with state directory dir
// and the extra Streams configs.
func (w *wordCount) start(name, dir string, extra ...string) *javaProcess {
	args := append([]string{w.c.Addr, w.appID, dir, w.input, w.output}, streamsSettings...)
	return startJava(w.t, name, w.cp, wordCountClass, append(args, extra...)...)
}

// words is the vocabulary lines are made of.
var words = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango")

// produce writes n lines of one to six words, each keyed by its line
// number so that they spread over both partitions, and counts the words.
func (w *wordCount) produce(n int) {
	w.t.Helper()
	var recs []*kgo.Record
	for range n {
		line := make([]string, 1+w.rnd.IntN(6))
		for i := range line {
			line[i] = words[w.rnd.IntN(len(words))]
			w.produced[line[i]]++
		}
		// Upper case and punctuation, which the application folds and drops.
		line[0] = strings.ToUpper(line[0]) + ","
		recs = append(recs, &kgo.Record{Key: strconv.AppendInt(nil, int64(w.lines), 10), Value: []byte(strings.Join(line, " "))})
		w.lines++
	}
	if err := w.prod.ProduceSync(w.ctx, recs...).FirstErr(); err != nil {
		w.t.Fatal(err)
	}
}

// awaitCounts reads the output topic until every word's latest count is
// what was produced, failing the test if a count overshoots, or app ends
// or has not got there in 45 s.
func (w *wordCount) awaitCounts(app *javaProcess) {
	w.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !maps.EqualFunc(w.produced, w.counts, func(n int64, seen []int64) bool { return seen[len(seen)-1] == n }) {
		if ended, err := app.exited(); ended {
			w.t.Fatalf("%s ended (%v); counts so far: %s", app.name, err, w.diff())
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the output's latest counts are not what was produced: %s", w.diff())
		}
		ctx, cancel := context.WithTimeout(w.ctx, time.Second)
		fetches := w.cons.PollFetches(ctx)
		cancel()
		if err := fetches.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			w.t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				w.t.Fatalf("output %q: %q is no count", r.Key, r.Value)
			}
			w.counts[string(r.Key)] = append(w.counts[string(r.Key)], n)
			if n > w.produced[string(r.Key)] {
				w.t.Fatalf("%q counted %d times, produced %d times", r.Key, n, w.produced[string(r.Key)])
			}
		})
	}
}

// diff lists the words whose latest output count is not what was produced.
func (w *wordCount) diff() string {
	var b strings.Builder
	for _, word := range words {
		seen := w.counts[word]
		if len(seen) == 0 || seen[len(seen)-1] != w.produced[word] {
			fmt.Fprintf(&b, "\n%s: produced %d, counted %v", word, w.produced[word], seen)
		}
	}
	return b.String()
}

// awaitCommitted waits until the application's group has committed every
// record of the input and repartition topics: what the instance counted
// is in the changelog, and nothing will be counted again.
func (w *wordCount) awaitCommitted() {
	w.t.Helper()
	topics := []string{w.input, w.appID + "-words-repartition"}
	waitFor(w.t, "the application to commit everything it read", func() bool {
		ends, err := w.adm.ListEndOffsets(w.ctx, topics...)
		if err != nil {
			w.t.Fatal(err)
		}
		committed, err := w.adm.FetchOffsets(w.ctx, w.appID)
		if err != nil {
			w.t.Fatal(err)
		}
		done := true
		ends.Each(func(end kadm.ListedOffset) {
			at, _ := committed.Lookup(end.Topic, end.Partition)
			done = done && end.Err == nil && at.At == end.Offset
		})
		return done
	})
}

// restored is how many changelog records the instance's log says it
// restored its store from, by changelog partition.
func restored(t *testing.T, p *javaProcess) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, m := range regexp.MustCompile(`WORDCOUNT RESTORED counts from (\S+): (\d+) records`).FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		got[m[1]] += n
	}
	return got
}

// TestAppsStreamsWordCount runs Kafka Streams' word count (a repartition
// topic and a counting state store with its changelog, at_least_once)
// against the gateway, kills it with SIGKILL and starts it again with an
// empty state directory: the new instance restores its store from the
// changelog, every record of it, and counts on from there, so every word's
// last count in the output is the number of times it was produced, and a
// word's counts go up by one, none written twice.
func TestAppsStreamsWordCount(t *testing.T) {
	c := startCluster(t, nil)
	w := newWordCount(t, c, "wordcount")
	w.produce(200)
	first := w.start("wordcount-1", filepath.Join(t.TempDir(), "state-1"))
	first.awaitLog(w.ctx, "WORDCOUNT RUNNING")
	w.awaitCounts(first)

	// Streams made its internal topics kept ones (docs/design.md §12).
	changelog, repartition := w.appID+"-counts-changelog", w.appID+"-words-repartition"
	checkConfig(t, describeTopicConfigs(t, c, changelog), changelog, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, describeTopicConfigs(t, c, repartition), repartition, "retention.ms", "-1", kmsg.ConfigSourceDynamicTopicConfig)

	// Killed once all it counted is committed: at_least_once would count
	// again what it read after its last commit, and the counts would be
	// more than what was produced.
	w.awaitCommitted()
	first.kill()
	ends, err := w.adm.ListEndOffsets(w.ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	w.produce(200)

	second := w.start("wordcount-2", filepath.Join(t.TempDir(), "state-2"))
	w.awaitCounts(second)
	got := restored(t, second)
	want := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[fmt.Sprintf("%s-%d", o.Topic, o.Partition)] = o.Offset })
	if !maps.Equal(got, want) || len(got) != 2 {
		t.Errorf("restored from the changelog %v, want its %v records (by partition)", got, want)
	}
	for word, seen := range w.counts {
		for i, n := range seen {
			if n != int64(i+1) {
				t.Fatalf("%s's counts were %v, want 1, 2, 3…", word, seen)
			}
		}
	}
}

// TestAppsStreamsPurgesRepartition runs the word count with Streams'
// purge of its repartition topic every second: after a commit, Streams
// deletes (DeleteRecords) the repartition records it committed, so the
// topic's log start (ListOffsets earliest) moves above 0 while it runs
// and records below it are gone for readers; the counts stay right, so
// nothing Streams had still to read was purged.
func TestAppsStreamsPurgesRepartition(t *testing.T) {
	c := startCluster(t, nil)
	w := newWordCount(t, c, "purging")
	app := w.start("purging", filepath.Join(t.TempDir(), "state"), "repartition.purge.interval.ms=1000")
	app.awaitLog(w.ctx, "WORDCOUNT RUNNING")
	repartition := w.appID + "-words-repartition"
	var starts kadm.ListedOffsets
	purged := func() bool {
		var err error
		if starts, err = w.adm.ListStartOffsets(w.ctx, repartition); err != nil {
			t.Fatal(err)
		}
		moved := len(starts[repartition]) == 2
		starts.Each(func(o kadm.ListedOffset) { moved = moved && o.Err == nil && o.Offset > 0 })
		return moved
	}
	// Streams purges after a commit once the interval has passed, so lines
	// keep coming until it has.
	for deadline := time.Now().Add(30 * time.Second); !purged(); time.Sleep(200 * time.Millisecond) {
		if ended, _ := app.exited(); ended || time.Now().After(deadline) {
			t.Fatalf("the repartition topic's log start did not move (the application ended: %v): %+v", ended, starts)
		}
		w.produce(10)
	}
	w.awaitCounts(app)
	start, _ := starts.Lookup(repartition, 0)
	if p := fetchAt(w.ctx, t, w.prod, repartition, start.Offset-1); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch below the purged log start %d: error %d, want OFFSET_OUT_OF_RANGE", start.Offset, p.ErrorCode)
	}
}
