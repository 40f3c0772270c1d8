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
// each of two partitions, and the clients that feed and read them; read
// are further options of the client reading the output.
func newWordCount(t *testing.T, c *Cluster, appID string, read ...kgo.Opt) *wordCount {
	ctx := testContext(t, 4*time.Minute)
	w := &wordCount{t: t, ctx: ctx, c: c, cp: appsClasspath(ctx, t), appID: appID,
		input: appID + "-lines", output: appID + "-counts",
		produced: map[string]int64{}, counts: map[string][]int64{}, rnd: rand.New(rand.NewPCG(37, 1))}
	createTopic(t, c, w.input, 2, nil)
	createTopic(t, c, w.output, 2, nil)
	w.prod = newClient(t, c, kgo.DefaultProduceTopic(w.input))
	w.cons = newClient(t, c, append([]kgo.Opt{kgo.ConsumeTopics(w.output), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, read...)...)
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

// checkSequences fails the test unless every word's counts in the output
// went 1, 2, 3… with none skipped or written twice; with awaitCounts, they
// end at the number of times the word was produced.
func (w *wordCount) checkSequences() {
	w.t.Helper()
	for word, seen := range w.counts {
		for i, n := range seen {
			if n != int64(i+1) {
				w.t.Fatalf("%s's counts were %v, want 1, 2, 3…", word, seen)
			}
		}
	}
}

// openTransaction reports whether a transaction holds output records not
// yet committed: a partition's end (high watermark) is above its last
// stable offset.
func (w *wordCount) openTransaction() bool {
	w.t.Helper()
	ends, err := w.adm.ListEndOffsets(w.ctx, w.output)
	if err != nil {
		w.t.Fatal(err)
	}
	stable, err := w.adm.ListCommittedOffsets(w.ctx, w.output)
	if err != nil {
		w.t.Fatal(err)
	}
	open := false
	ends.Each(func(end kadm.ListedOffset) {
		lso, ok := stable.Lookup(end.Topic, end.Partition)
		open = open || ok && end.Err == nil && lso.Err == nil && end.Offset > lso.Offset
	})
	return open
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
	t.Parallel()
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
	w.checkSequences()
}

// TestAppsStreamsExactlyOnce runs the word count with exactly_once_v2 and
// kills it with SIGKILL three times while lines keep coming, each time at
// a random moment when a transaction of its holds output records not yet
// committed, and starts it again on the same state directory (so with the
// same transactional ids). Each new instance fences the one before, whose
// open transaction is aborted, restores its store from the changelog and
// counts on from the input offsets committed with the last committed
// transaction. A read_committed consumer of the output sees, for every
// word, exactly 1, 2, …, N, N being the times it was produced: nothing
// counted twice, nothing skipped, however much the killed instances had
// read, counted and written.
func TestAppsStreamsExactlyOnce(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	w := newWordCount(t, c, "eos", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	dir := filepath.Join(t.TempDir(), "state")
	// A transaction of a second, its records sent as they are counted (no
	// linger), is open with output in it most of the time, not only while
	// the commit flushes.
	eos := []string{"processing.guarantee=exactly_once_v2", "commit.interval.ms=1000", "producer.linger.ms=0"}
	const kills = 3
	open := 0
	var delays []time.Duration
	for i := range kills + 1 {
		app := w.start(fmt.Sprintf("eos-%d", i+1), dir, eos...)
		w.produce(50)
		w.awaitCounts(app)
		if i == kills {
			break
		}
		// Lines come in small batches, for a random time (another each run:
		// the global source, not w.rnd) and then until a transaction is
		// open: the kill lands while the instance is reading, counting and
		// writing, not just after a commit.
		delay := time.Duration(200+rand.IntN(2000)) * time.Millisecond
		delays = append(delays, delay)
		until := time.Now().Add(delay)
		for time.Now().Before(until) || !w.openTransaction() {
			if ended, err := app.exited(); ended {
				t.Fatalf("%s ended (%v)", app.name, err)
			}
			w.produce(3)
			time.Sleep(10 * time.Millisecond)
		}
		app.kill()
		// The transaction may have committed between the look and the kill;
		// most kills leave it open, for the next instance to abort.
		if w.openTransaction() {
			open++
		}
		w.produce(20)
	}
	t.Logf("killed after %v; %d of %d kills left a transaction open; %d lines, words produced %v", delays, open, kills, w.lines, w.produced)
	if open == 0 {
		t.Errorf("no kill left a transaction open")
	}
	w.checkSequences()
}

// TestAppsStreamsPurgesRepartition runs the word count with Streams'
// purge of its repartition topic every second: after a commit, Streams
// deletes (DeleteRecords) the repartition records it committed, so the
// topic's log start (ListOffsets earliest) moves above 0 while it runs
// and records below it are gone for readers; the counts stay right, so
// nothing Streams had still to read was purged.
func TestAppsStreamsPurgesRepartition(t *testing.T) {
	t.Parallel()
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
