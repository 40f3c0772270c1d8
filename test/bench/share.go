package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share phase's fixed shape: every run reads a topic of this many
// partitions, produced in batches of franz-go's default size, and gives
// up after shareRunTimeout.
const (
	sharePartitions = 2
	shareBatch      = 1_000_000
	shareRunTimeout = 5 * time.Minute
	// shareWarmup is how many records one consumer accepts untimed on each
	// target before the first run: the JVM compiles Kafka's share paths
	// in it (a first run on a cold broker used 1.7 s of Kafka's CPU for
	// what took 0.4 s with 4 consumers after it).
	shareWarmup = 2000
)

// The Kafka API keys a share consumer needs (KIP-932): a server whose
// ApiVersions lacks one cannot serve the phase.
var shareAPIs = map[int16]string{76: "ShareGroupHeartbeat", 78: "ShareFetch", 79: "ShareAcknowledge"}

// shareRun is the outcome of one share consume run.
type shareRun struct {
	throughput
	// duplicates are deliveries of records already delivered once,
	// redelivered is how many deliveries had a delivery count above 1,
	// ackErrors how many partition acknowledgements the server failed.
	duplicates, redelivered, ackErrors int
	// first is the time from the consumers' start to the first record:
	// joining the group and getting partitions, before any record flows.
	first time.Duration
}

// afterFirst is the records per second from the first record on.
func (r shareRun) afterFirst() float64 {
	return float64(r.records) / (r.elapsed - r.first).Seconds()
}

// runShare measures share-group consumption (KIP-932) against every
// target, for each count of -share-consumers: -share-records records of
// -latency-size bytes are produced into a fresh 2-partition topic
// (untimed, as is a small warm-up run first), then that many franz-go
// share consumers in one group, reading from the earliest offset, accept
// every record. The clock runs from the consumers' start until every
// record was accepted and the acknowledgements flushed. Against disgw (binary mode) it also reads the
// gateway's DIS call counters around the consume, for what an accepted
// record costs DIS: the share state writes (PutRecords) above all. A
// target whose ApiVersions lacks the share APIs is skipped with a line.
func (b *bench) runShare(ctx context.Context) error {
	if b.s.shareRecords <= 0 {
		return nil
	}
	sb := *b
	sb.s.records, sb.s.partitions = b.s.shareRecords, sharePartitions
	warm := sb
	warm.s.records = shareWarmup
	unsupported := map[string]string{}
	for _, t := range b.targets() {
		why, err := shareUnsupported(ctx, t)
		if err != nil {
			return fmt.Errorf("%s ApiVersions: %w", t.name, err)
		}
		if unsupported[t.name] = why; why != "" {
			continue
		}
		if _, err := warm.produce(ctx, t, "bench-share-warmup", b.s.latencySize, shareBatch); err != nil {
			return fmt.Errorf("%s share warm-up produce: %w", t.name, err)
		}
		if _, err := warm.consumeShare(ctx, t, "bench-share-warmup", "bench-share-warmup-group", 1); err != nil {
			return fmt.Errorf("%s share warm-up consume: %w", t.name, err)
		}
	}
	for _, k := range b.s.shareConsumers {
		labels := fmt.Sprintf("consumers=%d records=%d partitions=%d size=%d", k, b.s.shareRecords, sharePartitions, b.s.latencySize)
		runs := map[string]*shareRun{}
		for _, t := range b.targets() {
			if why := unsupported[t.name]; why != "" {
				fmt.Printf("share.consume.%s %s skipped: %s\n", t.name, labels, why)
				continue
			}
			topic := fmt.Sprintf("bench-share-%d", k)
			if _, err := sb.produce(ctx, t, topic, b.s.latencySize, shareBatch); err != nil {
				return fmt.Errorf("%s share produce, %s: %w", t.name, labels, err)
			}
			before, err := b.disCalls(ctx)
			if err != nil {
				return err
			}
			run, err := sb.consumeShare(ctx, t, topic, topic+"-group", k)
			if err != nil {
				return fmt.Errorf("%s share consume, %s: %w", t.name, labels, err)
			}
			runs[t.name] = &run
			fmt.Printf("share.consume.%s %s %s first-record=%s records/s-after-first=%.0f duplicates=%d redelivered=%d ack-errors=%d\n",
				t.name, labels, throughputFields(run.throughput), run.first.Round(time.Millisecond), run.afterFirst(), run.duplicates, run.redelivered, run.ackErrors)
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
					parts = append(parts, fmt.Sprintf("%s=%.2f", op, 1000*n/float64(b.s.shareRecords)))
				}
			}
			fmt.Printf("share.dis-calls-per-1000-acked-records %s %s\n", labels, strings.Join(parts, " "))
		}
		if b.kafka != nil {
			r, after := "-", "-"
			if gw, k := runs["disgw"], runs["kafka"]; gw != nil && k != nil {
				r = ratio(gw.throughput, &k.throughput)
				after = fmt.Sprintf("%.2f", gw.afterFirst()/k.afterFirst())
			}
			fmt.Printf("ratio share.consume consumers=%d disgw/kafka=%s after-first disgw/kafka=%s\n", k, r, after)
		}
	}
	return nil
}

// shareUnsupported says which share APIs t's ApiVersions lacks, "" when
// it has them all.
func shareUnsupported(ctx context.Context, t target) (string, error) {
	cl, err := newClient(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return "", err
	}
	missing := maps.Clone(shareAPIs)
	for _, k := range resp.ApiKeys {
		delete(missing, k.ApiKey)
	}
	if len(missing) == 0 {
		return "", nil
	}
	names := slices.Sorted(maps.Values(missing))
	return "ApiVersions lacks " + strings.Join(names, ","), nil
}

// consumeShare has k share consumers of group read topic from the
// earliest offset and accept every record until the bench's records were
// all accepted, then flush their acknowledgements, and returns the time
// from their start until the last flush ended. The prime records the
// producer wrote are accepted and not counted.
func (b *bench) consumeShare(ctx context.Context, t target, topic, group string, k int) (shareRun, error) {
	ctx, cancel := context.WithTimeout(ctx, shareRunTimeout)
	defer cancel()
	if err := setGroupConfig(ctx, t, group, "share.auto.offset.reset", "earliest"); err != nil {
		return shareRun{}, fmt.Errorf("group config: %w", err)
	}

	var (
		mu          sync.Mutex
		seen        = make(map[int64]struct{}, b.s.records+sharePartitions)
		run         shareRun
		ackErrors   atomic.Int64
		failed      firstError
		wg          sync.WaitGroup
		clients     = make([]*kgo.Client, k)
		done, allIn = context.WithCancel(ctx)
	)
	defer allIn()
	onAcks := func(_ *kgo.Client, rs kgo.ShareAckResults) {
		for _, r := range rs {
			if r.Err != nil {
				ackErrors.Add(1)
			}
		}
	}
	var sw stopwatch
	// take counts one poll's records, under mu, and ends the polling once
	// every record was delivered.
	take := func(fs kgo.Fetches) {
		mu.Lock()
		defer mu.Unlock()
		fs.EachRecord(func(r *kgo.Record) {
			if r.DeliveryCount() > 1 {
				run.redelivered++
			}
			id := int64(r.Partition)<<48 | r.Offset
			if _, dup := seen[id]; dup {
				run.duplicates++
				return
			}
			seen[id] = struct{}{}
			if !isPrime(r) {
				if run.records == 0 {
					run.first = time.Since(sw.wall)
				}
				run.records++
				run.bytes += int64(len(r.Value))
			}
		})
		if run.records >= b.s.records {
			allIn()
		}
	}

	sw = startStopwatch(t.pid)
	for i := range clients {
		cl, err := newClient(t, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareAckCallback(onAcks))
		if err != nil {
			allIn()
			wg.Wait()
			closeAll(clients)
			return shareRun{}, err
		}
		clients[i] = cl
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Err() == nil {
				fs := cl.PollFetches(done)
				fs.EachError(func(topic string, p int32, err error) {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
						failed.set(fmt.Errorf("fetch %s/%d: %w", topic, p, err))
						allIn()
					}
				})
				take(fs)
				cl.MarkAcks(kgo.AckAccept)
			}
			if err := cl.FlushAcks(ctx); err != nil {
				failed.set(fmt.Errorf("flushing acknowledgements: %w", err))
			}
		}()
	}
	wg.Wait()
	sw.stop(&run.throughput)
	closeAll(clients)
	run.ackErrors = int(ackErrors.Load())
	switch {
	case failed.err != nil:
		return run, failed.err
	case ctx.Err() != nil:
		return run, fmt.Errorf("accepted %d of %d records: %w", run.records, b.s.records, ctx.Err())
	}
	return run, b.checkCount("accepted", run.throughput, b.s.latencySize)
}

// closeAll closes the share consumers at once: each leaves its group and
// releases what it still holds.
func closeAll(clients []*kgo.Client) {
	var wg sync.WaitGroup
	for _, cl := range clients {
		if cl != nil {
			wg.Go(cl.Close)
		}
	}
	wg.Wait()
}

// setGroupConfig sets config key of group to value on t with
// IncrementalAlterConfigs on the GROUP resource, and waits until
// DescribeConfigs answers it: Kafka applies group configs through its
// metadata log.
func setGroupConfig(ctx context.Context, t target, group, key, value string) error {
	cl, err := newClient(t)
	if err != nil {
		return err
	}
	defer cl.Close()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	alter.Resources = append(alter.Resources, res)
	resp, err := alter.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("IncrementalAlterConfigs %s: %w", group, err)
		}
	}
	for {
		describe := kmsg.NewPtrDescribeConfigsRequest()
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{key}
		describe.Resources = append(describe.Resources, dr)
		dresp, err := describe.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, r := range dresp.Resources {
			for _, c := range r.Configs {
				if c.Name == key && c.Value != nil && *c.Value == value {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s=%s not applied to group %s: %w", key, value, group, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
