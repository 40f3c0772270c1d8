package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runTransactions measures transactional produce against every target: a
// transactional producer writes -txns transactions of -txn-records
// records of -latency-size bytes over every partition, each committed at
// once, and the bench times each commit (EndTxn and the markers behind
// it) and the whole. Against disgw it also reads the gateway's DIS call
// counters before and after (binary mode), for what a transaction costs
// DIS.
func (b *bench) runTransactions(ctx context.Context) error {
	if b.s.txns <= 0 {
		return nil
	}
	labels := fmt.Sprintf("txns=%d records=%d size=%d partitions=%d", b.s.txns, b.s.txnRecords, b.s.latencySize, b.s.partitions)
	rates, commits := map[string]float64{}, map[string][4]time.Duration{}
	for _, t := range b.targets() {
		before, err := b.disCalls(ctx)
		if err != nil {
			return err
		}
		rate, lat, err := b.produceTransactions(ctx, t, "bench-txn")
		if err != nil {
			return fmt.Errorf("%s transactions: %w", t.name, err)
		}
		rates[t.name], commits[t.name] = rate, quantiles(lat)
		fmt.Printf("txn.produce.%s %s records/s=%.0f txns/s=%.1f\n", t.name, labels, rate, rate/float64(b.s.txnRecords))
		printLatency("latency.txn-commit."+t.name, labels, commits[t.name], len(lat))
		if t.name != "disgw" || before == nil {
			continue
		}
		after, err := b.disCalls(ctx)
		if err != nil {
			return err
		}
		var parts []string
		for _, op := range slices.Sorted(maps.Keys(after)) {
			if n := after[op] - before[op]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s=%.2f", op, n/float64(b.s.txns+txnWarmup)))
			}
		}
		fmt.Printf("txn.dis-calls-per-transaction %s %s\n", labels, strings.Join(parts, " "))
	}
	if b.kafka != nil {
		fmt.Printf("ratio txn.produce %s disgw/kafka=%.2f\n", labels, rates["disgw"]/rates["kafka"])
		fmt.Printf("ratio latency.txn-commit p50 disgw/kafka=%.2f p99 disgw/kafka=%.2f\n",
			float64(commits["disgw"][0])/float64(commits["kafka"][0]), float64(commits["disgw"][1])/float64(commits["kafka"][1]))
	}
	return nil
}

// txnWarmup is how many transactions run untimed first, so the
// coordinator's state is loaded and the JIT warm on both sides.
const txnWarmup = 10

// produceTransactions runs the transactions against t and returns the
// records per second over all of them and each commit's latency.
func (b *bench) produceTransactions(ctx context.Context, t target, topic string) (float64, []time.Duration, error) {
	if err := b.createTopic(ctx, t, topic); err != nil {
		return 0, nil, fmt.Errorf("create topic: %w", err)
	}
	cl, err := newClient(t, kgo.DefaultProduceTopic(topic), kgo.TransactionalID("bench-txn-"+t.name))
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	pl := b.payload(b.s.latencySize)
	one := func(n int) (time.Duration, error) {
		if err := cl.BeginTransaction(); err != nil {
			return 0, err
		}
		var first firstError
		for i := range b.s.txnRecords {
			cl.Produce(ctx, &kgo.Record{Key: key(n*b.s.txnRecords + i), Value: pl.value(i)}, func(_ *kgo.Record, err error) {
				if err != nil {
					first.set(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return 0, err
		}
		if first.err != nil {
			return 0, first.err
		}
		start := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	for n := range txnWarmup {
		if _, err := one(n); err != nil {
			return 0, nil, err
		}
	}
	quiesce(t.pid)
	lat := make([]time.Duration, b.s.txns)
	start := time.Now()
	for n := range lat {
		if lat[n], err = one(txnWarmup + n); err != nil {
			return 0, nil, err
		}
	}
	return float64(b.s.txns*b.s.txnRecords) / time.Since(start).Seconds(), lat, nil
}

// disCalls reads disgw's DIS call counters by operation from its admin
// listener; nil when there is none (-mode inprocess).
func (b *bench) disCalls(ctx context.Context) (map[string]float64, error) {
	if b.disgwAdmin == "" {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.disgwAdmin+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	calls := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "disgw_dis_calls_total{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `operation="`)
		op, _, _ := strings.Cut(rest, `"`)
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		calls[op] += v
	}
	return calls, sc.Err()
}
