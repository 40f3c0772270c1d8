package main

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient"
)

// bench holds what every phase shares.
type bench struct {
	s        settings
	disgw    target
	kafka    *target // nil without the Kafka comparison
	dis      disclient.API
	rss      *rssSampler // nil in -mode inprocess
	payloads map[int]payload
	// disgwAdmin is the disgw process's admin listener, for its metrics;
	// "" in -mode inprocess.
	disgwAdmin string
}

// payload is the payload of values of size bytes.
func (b *bench) payload(size int) payload {
	p, ok := b.payloads[size]
	if !ok {
		p = newPayload(size)
		b.payloads[size] = p
	}
	return p
}

// targets are the servers every Kafka workload runs against.
func (b *bench) targets() []target {
	if b.kafka == nil {
		return []target{b.disgw}
	}
	return []target{b.disgw, *b.kafka}
}

// runAll runs every workload in turn and prints its lines.
func (b *bench) runAll(ctx context.Context) error {
	if err := b.warmUp(ctx); err != nil {
		return err
	}
	if b.s.phases[phaseThroughput] {
		if err := b.runThroughput(ctx); err != nil {
			return err
		}
	}
	if b.s.phases[phaseLatency] {
		if err := b.runLatency(ctx); err != nil {
			return err
		}
	}
	if b.s.phases[phaseTransactions] {
		if err := b.runTransactions(ctx); err != nil {
			return err
		}
	}
	if b.s.phases[phaseShare] {
		if err := b.runShare(ctx); err != nil {
			return err
		}
	}
	b.printMemory()
	return nil
}

// runThroughput runs each value size's direct per-record phases and its
// cells of every batch size.
func (b *bench) runThroughput(ctx context.Context) error {
	for _, size := range b.s.sizes {
		b := b.forSize(size)
		fmt.Printf("cell size=%d records=%d\n", size, b.s.records)
		labels := fmt.Sprintf("size=%d", size)
		stream := fmt.Sprintf("bench-direct-records-%d", size)
		directProduce, err := b.produceDirectRecords(ctx, stream, size)
		if err != nil {
			return fmt.Errorf("direct produce, %s: %w", labels, err)
		}
		printThroughput("produce.direct-records", labels, directProduce)
		directConsume, err := b.consumeDirectRecords(ctx, stream, size)
		if err != nil {
			return fmt.Errorf("direct consume, %s: %w", labels, err)
		}
		printThroughput("consume.direct-records", labels, directConsume)

		for _, batch := range b.s.batches {
			if err := b.runCell(ctx, size, batch, directProduce, directConsume); err != nil {
				return err
			}
		}
	}
	return nil
}

// forSize is the bench for the phases of size-byte values: each moves
// -records records, or for smaller values as many as carry the value
// bytes of -records records of 1 KiB. 200 000 records of 100 B were read
// in 56-108 ms, short enough for one scheduling delay to halve a phase's
// rate.
func (b *bench) forSize(size int) *bench {
	sb := *b
	sb.s.records = max(b.s.records, int(int64(b.s.records)*1024/int64(size)))
	return &sb
}

// warmUp produces and consumes -warmup records of 1 KiB on every target in
// each batch size of -batches, untimed, so that the JVM's just-in-time
// compiler and both servers' first segments and connections do not weigh
// on the measured phases. Each batch size runs its own code paths as often
// as its batches come: warmed with 100 000 records in 1 MB batches only,
// Kafka's 1 KiB, 16 KiB produce rounds ran at 52 082, 100 216 and
// 138 134 records/s one after the other, its CPU time per round falling
// from 6.3 s to 2.0 s.
func (b *bench) warmUp(ctx context.Context) error {
	if b.s.warmup == 0 {
		return nil
	}
	w := *b
	w.s.records = b.s.warmup
	for _, t := range b.targets() {
		for _, batch := range b.s.batches {
			topic := fmt.Sprintf("bench-warmup-%d", batch)
			if _, err := w.produce(ctx, t, topic, 1024, batch); err != nil {
				return fmt.Errorf("%s warm-up produce: %w", t.name, err)
			}
			if _, err := w.consume(ctx, t, topic, 1024); err != nil {
				return fmt.Errorf("%s warm-up consume: %w", t.name, err)
			}
		}
	}
	return nil
}

// runCell runs produce and consume of size-byte values in batch-byte
// batches against every target and straight to DIS, -rounds times over,
// the servers taking turns to go first, then prints the ratios of the
// phases' median rates: a phase slowed by the machine in one round does
// not decide a ratio, and drift over the run meets every phase alike.
func (b *bench) runCell(ctx context.Context, size, batch int, directProduce, directConsume throughput) error {
	labels := fmt.Sprintf("size=%d batch=%d", size, batch)
	rounds := phaseRounds{}
	for r := range b.s.rounds {
		if err := b.runRound(ctx, size, batch, r, labels, rounds); err != nil {
			return err
		}
	}
	median := rounds.median
	for _, dir := range []string{"produce", "consume"} {
		gw := *median(dir + ".disgw")
		direct := directProduce
		if dir == "consume" {
			direct = directConsume
		}
		pre := *median(dir + ".prebuilt.disgw")
		fmt.Printf("ratio %s %s disgw/kafka=%s gateway/direct-batches=%s gateway/direct-native=%s gateway/direct-records=%s gateway/direct-client=%s prebuilt-gateway/direct-client=%s prebuilt-disgw/kafka=%s\n",
			dir, labels, ratio(gw, median(dir+".kafka")), ratio(gw, median(dir+".direct-batches")), ratio(gw, median(dir+".direct-native")),
			ratio(gw, &direct), ratio(gw, median(dir+".direct-client")), ratio(pre, median(dir+".direct-client")), ratio(pre, median(dir+".prebuilt.kafka")))
	}
	return nil
}

// phaseRounds holds each phase's throughput in every round, by the name
// its lines print.
type phaseRounds map[string][]throughput

// add records t for phase name and prints its line.
func (pr phaseRounds) add(name, labels string, round int, t throughput) {
	pr[name] = append(pr[name], t)
	printThroughput(name, fmt.Sprintf("%s round=%d", labels, round+1), t)
}

// median is the round of phase name with the median records/s (the lower
// middle one of an even count), nil when the phase did not run.
func (pr phaseRounds) median(name string) *throughput {
	ts := slices.Clone(pr[name])
	if len(ts) == 0 {
		return nil
	}
	slices.SortFunc(ts, func(a, b throughput) int { return cmp.Compare(a.recordsPerSecond(), b.recordsPerSecond()) })
	return &ts[(len(ts)-1)/2]
}

// runRound runs one round of a cell's phases: produce and consume against
// every target, then the direct batch, native and client phases, each
// into topics and streams of its own. Each produce and its consume run as
// a pair (runPair). The servers take turns going first, round by round, so
// that neither always runs after the other's phases or closer to the
// direct ones.
func (b *bench) runRound(ctx context.Context, size, batch, round int, labels string, rounds phaseRounds) error {
	suffix := fmt.Sprintf("%d-%d-r%d", size, batch, round+1)
	targets := b.targets()
	if round%2 == 1 {
		slices.Reverse(targets)
	}
	for _, t := range targets {
		err := b.runPair(t.name, labels, round, rounds, func(attempt string) (p, c throughput, err error) {
			topic := "bench-" + suffix + attempt
			if p, err = b.produce(ctx, t, topic, size, batch); err != nil {
				return p, c, fmt.Errorf("%s produce, %s: %w", t.name, labels, err)
			}
			if c, err = b.consume(ctx, t, topic, size); err != nil {
				return p, c, fmt.Errorf("%s consume, %s: %w", t.name, labels, err)
			}
			return p, c, nil
		})
		if err != nil {
			return err
		}
	}
	batches, err := b.buildBatches(size, batch, b.modRecords)
	if err != nil {
		return err
	}
	err = b.runPair("direct-batches", labels, round, rounds, func(attempt string) (p, c throughput, err error) {
		stream := "bench-direct-batches-" + suffix + attempt
		if p, err = b.produceDirectBatches(ctx, stream, size, batches); err != nil {
			return p, c, fmt.Errorf("direct batch produce, %s: %w", labels, err)
		}
		if c, err = b.consumeDirectBatches(ctx, stream, batches, size); err != nil {
			return p, c, fmt.Errorf("direct batch consume, %s: %w", labels, err)
		}
		return p, c, nil
	})
	if err != nil {
		return err
	}
	err = b.runPair("direct-native", labels, round, rounds, func(attempt string) (p, c throughput, err error) {
		stream := "bench-direct-native-" + suffix + attempt
		p, counts, err := b.produceDirectNative(ctx, stream, size, batch)
		if err != nil {
			return p, c, fmt.Errorf("direct native produce, %s: %w", labels, err)
		}
		if c, err = b.consumeDirectNative(ctx, stream, size, counts); err != nil {
			return p, c, fmt.Errorf("direct native consume, %s: %w", labels, err)
		}
		return p, c, nil
	})
	if err != nil {
		return err
	}
	keyed, err := b.keyedBatches(size, batch)
	if err != nil {
		return err
	}
	err = b.runPair("direct-client", labels, round, rounds, func(attempt string) (throughput, throughput, error) {
		return b.runDirectClient(ctx, size, keyed, "bench-direct-client-"+suffix+attempt, labels)
	})
	if err != nil {
		return err
	}
	for _, t := range targets {
		err := b.runPair("prebuilt."+t.name, labels, round, rounds, func(attempt string) (p, c throughput, err error) {
			if p, c, err = b.runPrebuilt(ctx, t, "bench-prebuilt-"+suffix+attempt, size, keyed); err != nil {
				return p, c, fmt.Errorf("%s prebuilt, %s: %w", t.name, labels, err)
			}
			return p, c, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// runPair runs one round of the produce and consume phases of name (run
// moves the records into a topic or stream of its own, its name ending in
// attempt) and adds them to rounds. While either phase lost more than
// -max-steal of the machine's CPU time to its host (steal), the pair is
// run again, at most -steal-retries times, the lost attempt printed with
// discarded=steal and left out of the medians: such a phase measures the
// host's other tenants, not the server, and steal comes in bursts that
// strike one server's phases and spare the other's.
func (b *bench) runPair(name, labels string, round int, rounds phaseRounds, run func(attempt string) (produced, consumed throughput, err error)) error {
	for try := 0; ; try++ {
		attempt := ""
		if try > 0 {
			attempt = fmt.Sprintf("-a%d", try+1)
		}
		p, c, err := run(attempt)
		if err != nil {
			return err
		}
		if try < b.s.stealRetries && (b.stolen(p) || b.stolen(c)) {
			l := fmt.Sprintf("%s round=%d discarded=steal", labels, round+1)
			printThroughput("produce."+name, l, p)
			printThroughput("consume."+name, l, c)
			continue
		}
		rounds.add("produce."+name, labels, round, p)
		rounds.add("consume."+name, labels, round, c)
		return nil
	}
}

// stolen says whether t lost more than -max-steal of the CPU time the
// machine had over its wall time to steal.
func (b *bench) stolen(t throughput) bool {
	return float64(t.steal) > b.s.maxSteal*float64(t.elapsed)*float64(runtime.NumCPU())
}

// runLatency measures the end-to-end latency at a fixed rate and the
// unloaded produce latency against every target.
func (b *bench) runLatency(ctx context.Context) error {
	labels := fmt.Sprintf("rate=%d size=%d", b.s.latencyRate, b.s.latencySize)
	e2e, unloaded := map[string][4]time.Duration{}, map[string][4]time.Duration{}
	for _, t := range b.targets() {
		lat, err := b.latencyEndToEnd(ctx, t, "bench-latency", labels)
		if err != nil {
			return fmt.Errorf("%s end-to-end latency: %w", t.name, err)
		}
		e2e[t.name] = quantiles(lat)
		printLatency("latency.e2e."+t.name, labels, e2e[t.name], len(lat))
	}
	for _, t := range b.targets() {
		lat, err := b.produceUnloaded(ctx, t, "bench-unloaded")
		if err != nil {
			return fmt.Errorf("%s unloaded produce: %w", t.name, err)
		}
		unloaded[t.name] = quantiles(lat)
		printLatency("latency.unloaded."+t.name, fmt.Sprintf("size=%d", b.s.latencySize), unloaded[t.name], len(lat))
	}
	if b.kafka != nil {
		r := func(m map[string][4]time.Duration, i int) string {
			return fmt.Sprintf("%.2f", float64(m["disgw"][i])/float64(m["kafka"][i]))
		}
		fmt.Printf("ratio latency.e2e %s p50 disgw/kafka=%s p99 disgw/kafka=%s p99.9 disgw/kafka=%s\n",
			labels, r(e2e, 0), r(e2e, 1), r(e2e, 2))
		fmt.Printf("ratio latency.unloaded p50 disgw/kafka=%s p99 disgw/kafka=%s p99.9 disgw/kafka=%s\n",
			r(unloaded, 0), r(unloaded, 1), r(unloaded, 2))
	}
	return nil
}

// printMemory prints the disgw process's peak and final resident memory,
// and the Kafka JVM's for comparison.
func (b *bench) printMemory() {
	if b.rss == nil {
		fmt.Println("memory.disgw skipped: -mode inprocess shares the bench process; use -mode binary")
		return
	}
	st := procStatusKiB(b.disgw.pid, "VmHWM", "VmRSS")
	b.rss.sample()
	within := "yes"
	if st["VmHWM"] > rssBudgetKiB {
		within = "no"
	}
	fmt.Printf("memory.disgw peak-rss=%s sampled-max=%s end-rss=%s budget=%s within=%s\n",
		mib(st["VmHWM"]), mib(b.rss.maxKiB()), mib(st["VmRSS"]), mib(rssBudgetKiB), within)
	if b.kafka != nil {
		k := procStatusKiB(b.kafka.pid, "VmHWM", "VmRSS")
		fmt.Printf("memory.kafka peak-rss=%s end-rss=%s jvm-heap=1GiB\n", mib(k["VmHWM"]), mib(k["VmRSS"]))
	}
}

// key is the small key of record i; franz-go hashes it to pick the partition.
func key(i int) []byte { return strconv.AppendInt([]byte{'k'}, int64(i), 10) }

// firstError keeps the first of many concurrent errors.
type firstError struct {
	once sync.Once
	err  error
}

func (f *firstError) set(err error) { f.once.Do(func() { f.err = err }) }

// newClient is a franz-go client of t, bootstrapped from every address
// of its comma-separated addr, with the client's defaults (acks=all,
// idempotent, snappy, 10 ms linger, 50 000 buffered records) unless opts
// say else.
func newClient(t target, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(t.addr, ",")...)}, opts...)...)
}

// createTopic creates topic with the configured partition count and
// -topic-config on t, outside any timed section.
func (b *bench) createTopic(ctx context.Context, t target, topic string) error {
	cl, err := newClient(t)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(b.s.partitions), 1, b.s.topicConfigs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return err
	}
	if err := checkTopicConfigs(ctx, adm, topic, b.s.topicConfigs); err != nil {
		return err
	}
	return waitForLeaders(ctx, adm, topic, b.s.partitions)
}

// checkTopicConfigs fails unless topic has the configs -topic-config gave
// it, so that a server that took none of them does not pass for one that
// did.
func checkTopicConfigs(ctx context.Context, adm *kadm.Client, topic string, want map[string]*string) error {
	if len(want) == 0 {
		return nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return err
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return fmt.Errorf("describe configs: %w", err)
	}
	for k, v := range want {
		got := "(not described)"
		for _, c := range rc.Configs {
			if c.Key == k && c.Value != nil {
				got = *c.Value
			}
		}
		if got != *v {
			return fmt.Errorf("topic %s has %s=%s, want %s", topic, k, got, *v)
		}
	}
	return nil
}

// waitForLeaders waits until Metadata answers every partition of topic
// with a leader. Kafka answers CreateTopics before its metadata has the
// new partitions' leaders; a client that looks the topic up first backs
// off for seconds, which the phase would then count as the server's time.
func waitForLeaders(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			t := md.Topics[topic]
			led := 0
			for _, p := range t.Partitions {
				if p.Err == nil && p.Leader >= 0 {
					led++
				}
			}
			if t.Err == nil && led == partitions {
				return nil
			}
			err = fmt.Errorf("%d of %d partitions have a leader (topic error: %v)", led, partitions, t.Err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: %w", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// produce produces n records of size-byte values into a new topic on t
// asynchronously, as fast as franz-go accepts them, in batches of at most
// batch bytes, and returns the time until the last is acknowledged. The
// client primes every partition first, untimed (primeProducer).
func (b *bench) produce(ctx context.Context, t target, topic string, size, batch int) (throughput, error) {
	if err := b.createTopic(ctx, t, topic); err != nil {
		return throughput{}, fmt.Errorf("create topic: %w", err)
	}
	cl, err := newClient(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(int32(batch)))
	if err != nil {
		return throughput{}, err
	}
	defer cl.Close()

	if err := b.primeProducer(ctx, cl); err != nil {
		return throughput{}, fmt.Errorf("priming the producer: %w", err)
	}
	n, pl := b.s.records, b.payload(size)
	var failed firstError
	var wg sync.WaitGroup
	wg.Add(n)
	sw := startStopwatch(t.pid)
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: key(i), Value: pl.value(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.set(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	tp := throughput{records: n, bytes: int64(n) * int64(size)}
	sw.stop(&tp)
	return tp, failed.err
}

// consume reads topic on t from the start of every partition until it has
// every record produced into it, and fails if it gets another count.
func (b *bench) consume(ctx context.Context, t target, topic string, size int) (throughput, error) {
	sw := startStopwatch(t.pid)
	cl, err := newClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: b.fromStart()}))
	if err != nil {
		return throughput{}, err
	}
	defer cl.Close()

	var tp throughput
	for tp.records < b.s.records {
		fs, err := poll(ctx, cl)
		if err != nil {
			return throughput{}, fmt.Errorf("consumed %d of %d records: %w", tp.records, b.s.records, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !isPrime(r) {
				tp.records++
				tp.bytes += int64(len(r.Value))
			}
		})
	}
	sw.stop(&tp)
	return tp, b.checkCount("consumed", tp, size)
}

// fromStart is the start offset of every partition of a topic.
func (b *bench) fromStart() map[int32]kgo.Offset {
	starts := make(map[int32]kgo.Offset, b.s.partitions)
	for p := range int32(b.s.partitions) {
		starts[p] = kgo.NewOffset().AtStart()
	}
	return starts
}

// poll is one PollFetches that fails on any fetch error.
func poll(ctx context.Context, cl *kgo.Client) (kgo.Fetches, error) {
	fs := cl.PollFetches(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var fetchErr error
	fs.EachError(func(topic string, p int32, err error) {
		fetchErr = errors.Join(fetchErr, fmt.Errorf("fetch %s/%d: %w", topic, p, err))
	})
	return fs, fetchErr
}

// checkCount fails unless t moved exactly the records and bytes produced.
func (b *bench) checkCount(what string, t throughput, size int) error {
	if want := int64(b.s.records) * int64(size); t.records != b.s.records || t.bytes != want {
		return fmt.Errorf("%s %d records of %d bytes in all, want %d of %d", what, t.records, t.bytes, b.s.records, want)
	}
	return nil
}

// latencyEndToEnd produces records at the fixed -latency-rate for
// -latency-duration while a consumer reads them, and returns each record's
// time from its Produce call (stamped into its value) to its arrival at the
// consumer. Before the clock starts, the producer primes every partition
// (primeProducer) and the consumer reads the prime records, so that both
// have looked up every partition. The first tenth of the timed records is
// left out too. Linger is off: at a fixed rate it would only add its own
// delay. A disk probe runs beside the timed records and prints its line
// under labels when they are done (diskprobe.go).
func (b *bench) latencyEndToEnd(ctx context.Context, t target, topic, labels string) (_ []time.Duration, err error) {
	if err := b.createTopic(ctx, t, topic); err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	n := int(b.s.latencyDuration.Seconds() * float64(b.s.latencyRate))
	warm := n / 10
	consumer, err := newClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: b.fromStart()}))
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	producer, err := newClient(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	if err := b.primeLatency(ctx, producer, consumer); err != nil {
		return nil, fmt.Errorf("priming the clients: %w", err)
	}
	quiesce(t.pid)
	probe, err := startDiskProbe(b.s.dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if perr := probe.finish("latency.disk."+t.name, labels); err == nil {
			err = perr
		}
	}()

	lat := make([]time.Duration, 0, n-warm)
	received := make(chan error, 1)
	go func() {
		got := 0
		for got < n {
			fs, err := poll(ctx, consumer)
			if err != nil {
				received <- fmt.Errorf("received %d of %d records: %w", got, n, err)
				return
			}
			now := time.Now().UnixNano()
			fs.EachRecord(func(r *kgo.Record) {
				if isPrime(r) {
					return
				}
				got++
				if int(binary.BigEndian.Uint64(r.Value[8:])) >= warm {
					lat = append(lat, time.Duration(now-int64(binary.BigEndian.Uint64(r.Value))))
				}
			})
		}
		received <- nil
	}()

	var failed firstError
	pl, interval := b.payload(b.s.latencySize), time.Second/time.Duration(b.s.latencyRate)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		v := append([]byte(nil), pl.value(i)...)
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		binary.BigEndian.PutUint64(v[8:], uint64(i))
		producer.Produce(ctx, &kgo.Record{Key: key(i), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.set(err)
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		return nil, err
	}
	if failed.err != nil {
		return nil, failed.err
	}
	if err := <-received; err != nil {
		return nil, err
	}
	if len(lat) != n-warm {
		return nil, fmt.Errorf("received %d timed records, want %d", len(lat), n-warm)
	}
	return lat, nil
}

// primeLatency primes every partition with producer (primeProducer) and
// has consumer read the prime records, untimed.
func (b *bench) primeLatency(ctx context.Context, producer, consumer *kgo.Client) error {
	if err := b.primeProducer(ctx, producer); err != nil {
		return err
	}
	for got := 0; got < b.s.partitions; {
		fs, err := poll(ctx, consumer)
		if err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if isPrime(r) {
				got++
			}
		})
	}
	return nil
}

// primeHeader marks the records primeProducer writes, which consumers of
// the phases skip.
const primeHeader = "bench-prime"

// primeProducer writes one record to every partition with cl, untimed, each
// waiting for its acknowledgement, with keys franz-go's default partitioner
// sends there: the client then has looked up every partition and its
// producer id before a phase's clock starts. franz-go backs off for
// seconds when its first lookup of a partition of a new Kafka topic fails;
// unprimed, a phase counted that wait as Kafka's (a 5 s record in the
// unloaded phase, one partition 4 s late in the end-to-end phase).
func (b *bench) primeProducer(ctx context.Context, cl *kgo.Client) error {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("")
	primed := make([]bool, b.s.partitions)
	for i, left := 0, b.s.partitions; left > 0; i++ {
		r := &kgo.Record{Key: []byte("prime-" + strconv.Itoa(i)), Headers: []kgo.RecordHeader{{Key: primeHeader}}}
		p := part.Partition(r, b.s.partitions)
		if primed[p] {
			continue
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
		primed[p], left = true, left-1
	}
	return nil
}

// isPrime reports whether r is one of primeProducer's records.
func isPrime(r *kgo.Record) bool {
	return len(r.Headers) == 1 && r.Headers[0].Key == primeHeader
}

// produceUnloaded produces records one at a time, each waiting for the
// previous acknowledgement, so the latency is the server's round trip
// without queueing. Linger is off: with one record in flight it would only
// add its own delay.
func (b *bench) produceUnloaded(ctx context.Context, t target, topic string) ([]time.Duration, error) {
	if err := b.createTopic(ctx, t, topic); err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	cl, err := newClient(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pl := b.payload(b.s.latencySize)
	if err := b.primeProducer(ctx, cl); err != nil {
		return nil, err
	}
	quiesce(t.pid)
	lat := make([]time.Duration, b.s.unloaded)
	for i := range lat {
		sent := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: key(i), Value: pl.value(i)}).FirstErr(); err != nil {
			return nil, err
		}
		lat[i] = time.Since(sent)
	}
	return lat, nil
}
