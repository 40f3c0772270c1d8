package test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
)

// startLocalDIS starts a gateway whose own DIS client calls the embedded
// DIS in process (Options.LocalDIS), with its data in dir.
func startLocalDIS(t *testing.T, dir string, quotas dislocal.QuotaMode) *Cluster {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: dir, Logger: log, Quotas: quotas, LocalDIS: true})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	return c
}

// localSent is a record as its producer had it acknowledged.
type localSent struct {
	value     []byte
	partition int32
	offset    int64
}

// TestLocalDISProduceConsumeRestart produces with idempotent franz-go
// producers in all four codecs through a gateway on the in-process DIS
// client, reads every record back where it was acknowledged, lists offsets,
// commits and fetches a group's offsets with a group consumer, then
// restarts gateway and DIS on the same data: records, offsets and commits
// survive and new records continue the offsets.
func TestLocalDISProduceConsumeRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := startLocalDIS(t, dir, dislocal.QuotasNone)
	const topic, group = "local", "local-group"
	createTopic(t, c, topic, 2, nil)
	ctx := testContext(t, 2*time.Minute)

	codecs := []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	const perCodec = 3000
	var mu sync.Mutex
	sent := map[string]localSent{}
	for p, codec := range codecs {
		// franz-go producers are idempotent by default.
		cl := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(time.Millisecond))
		for i := range perCodec {
			rec := &kgo.Record{Key: fmt.Appendf(nil, "c%d-%05d", p, i), Value: bytes.Repeat(fmt.Appendf(nil, "codec %d record %d;", p, i), 1+i%9)}
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", r.Key, err)
					return
				}
				mu.Lock()
				sent[string(r.Key)] = localSent{r.Value, r.Partition, r.Offset}
				mu.Unlock()
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	total := perCodec * len(codecs)
	if len(sent) != total {
		t.Fatalf("%d records acknowledged, want %d", len(sent), total)
	}

	// A group member reads everything and commits what it read.
	member := newClient(t, c, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < total {
		fs := member.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(seen), total, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			s, ok := sent[string(r.Key)]
			switch {
			case !ok || seen[string(r.Key)]:
				t.Fatalf("consumed unknown or duplicate key %q", r.Key)
			case r.Partition != s.partition || r.Offset != s.offset || !bytes.Equal(r.Value, s.value):
				t.Fatalf("%s: consumed %q at %d/%d, produced %q at %d/%d", r.Key, r.Value, r.Partition, r.Offset, s.value, s.partition, s.offset)
			case r.ProducerID < 0:
				t.Fatalf("%s: consumed without the producer id of its idempotent producer", r.Key)
			}
			seen[string(r.Key)] = true
		})
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	member.Close()

	ends := checkLocalOffsets(t, ctx, c, topic, group, total)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = startLocalDIS(t, dir, dislocal.QuotasNone)
	if got := checkLocalOffsets(t, ctx, c, topic, group, total); fmt.Sprint(got) != fmt.Sprint(ends) {
		t.Fatalf("end offsets after restart %v, before %v", got, ends)
	}
	cl := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	res := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("after restart")})
	if r, err := res.First(); err != nil || r.Offset != ends[0] {
		t.Fatalf("produce after restart: offset %v, %v; want %d", r, err, ends[0])
	}
	got := fetchLocal(t, ctx, c, topic, ends[0])
	if string(got) != "after restart" {
		t.Fatalf("record after restart reads back as %q", got)
	}
}

// checkLocalOffsets checks that the topic's partitions start at 0 and end
// after total records together, and that group committed those ends; it
// returns the end offset by partition.
func checkLocalOffsets(t *testing.T, ctx context.Context, c *Cluster, topic, group string, total int) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(newClient(t, c))
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListStartOffsets: %v", err)
	}
	endList, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	ends := map[int32]int64{}
	sum := int64(0)
	endList.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %d: %v", o.Partition, o.Err)
		}
		ends[o.Partition] = o.Offset
		sum += o.Offset
		if s, _ := starts.Lookup(topic, o.Partition); s.Err != nil || s.Offset != 0 {
			t.Errorf("partition %d starts at %d (%v), want 0", o.Partition, s.Offset, s.Err)
		}
		if cm, ok := committed.Lookup(topic, o.Partition); !ok || cm.Err != nil || cm.At != o.Offset {
			t.Errorf("partition %d: committed %+v, want %d", o.Partition, cm, o.Offset)
		}
	})
	if len(ends) != 2 || sum != int64(total) {
		t.Fatalf("end offsets %v, want 2 partitions holding %d records", ends, total)
	}
	return ends
}

// fetchLocal reads the value at offset of partition 0.
func fetchLocal(t *testing.T, ctx context.Context, c *Cluster, topic string, offset int64) []byte {
	t.Helper()
	cl := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(offset)}}))
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetch offset %d: %v", offset, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		if recs := fs.Records(); len(recs) > 0 {
			if recs[0].Offset != offset {
				t.Fatalf("fetch at %d returned offset %d", offset, recs[0].Offset)
			}
			return recs[0].Value
		}
	}
}

// TestLocalDISQuotasSlowProduce: with COMMON quotas, a producer writing as
// fast as it can through the in-process DIS client is held to the
// partition's 1 MiB/s with no failed record (the gateway resends the
// records DIS.4303 refused), and every record reads back once, in order.
func TestLocalDISQuotasSlowProduce(t *testing.T) {
	t.Parallel()
	c := startLocalDIS(t, t.TempDir(), dislocal.QuotasCommon)
	const topic = "localquota"
	createTopic(t, c, topic, 1, nil)
	ctx := testContext(t, 2*time.Minute)
	// A small buffer keeps the flush after the producing short.
	cl := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(1000))
	const size = 1000
	n, elapsed := produceFor(t, ctx, cl, 3*time.Second, size, 0)
	// A full bucket (one second's worth) plus the rate, with a margin.
	limit := (1 << 20) * (1 + 1.1*elapsed.Seconds())
	t.Logf("%d records of %d B in %v", n, size, elapsed)
	if float64(n*size) > limit {
		t.Fatalf("%d B of values written in %v, over COMMON's 1 MiB/s (at most %.0f with the burst)", n*size, elapsed, limit)
	}
	readBackOnce(t, ctx, c, topic, n)
}

// TestLocalDISFetchSendsFromRecordLog reads batches large enough to be
// sent from the embedded DIS's record log (sendfile) back as they were
// produced: with franz-go from the start and from inside a batch, which
// checks every batch's CRC and record; and with a raw client whose small
// socket buffer takes a fraction of a response at a time, so that most of
// the record data is read into the gateway's outbound buffer instead, and
// must come out the same bytes as for a client that takes them at once.
func TestLocalDISFetchSendsFromRecordLog(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	// A read cache much smaller than the data: consumers read what was
	// produced back from DIS, not from the batches the writer cached.
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, LocalDIS: true, Gateway: func(cfg *gateway.Config) {
		cfg.Registry, cfg.ReadCacheBytes = reg, 1<<20
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	const topic, parts, n = "spans", 4, 4000
	createTopic(t, c, topic, parts, nil)
	ctx := testContext(t, 2*time.Minute)

	// Record i goes to partition i%parts at offset i/parts.
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([][]byte, n)
	cl := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(256<<10), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range values {
		values[i] = make([]byte, 500+rng.IntN(4000))
		for j := range values[i] {
			values[i][j] = byte(rng.Uint32())
		}
		cl.Produce(ctx, &kgo.Record{Partition: int32(i % parts), Value: values[i]}, func(r *kgo.Record, err error) {
			if err != nil || r.Offset != int64(i/parts) {
				t.Errorf("record %d: acknowledged at %d, %v", i, r.Offset, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	for _, from := range []int64{0, 321} {
		offsets := map[int32]kgo.Offset{}
		next := map[int32]int64{}
		for p := range int32(parts) {
			offsets[p], next[p] = kgo.NewOffset().At(from), from
		}
		consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
		for left := parts * (n/parts - int(from)); left > 0; {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("from %d: %d records not consumed: %v", from, left, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch from %d: %v", from, err) })
			fs.EachRecord(func(r *kgo.Record) {
				want := values[int(next[r.Partition])*parts+int(r.Partition)]
				if r.Offset != next[r.Partition] || !bytes.Equal(r.Value, want) {
					t.Fatalf("from %d: partition %d record at %d (%d bytes), want %d (%d bytes)", from, r.Partition, r.Offset, len(r.Value), next[r.Partition], len(want))
				}
				next[r.Partition]++
				left--
			})
		}
	}
	if sent := fileBytes(t, reg, "sendfile"); sent < n*500 {
		t.Fatalf("%v bytes sent from the record log, want most of what the consumers read", sent)
	}

	// A fetch of every partition from the start: 2 MB and more of each,
	// more than a socket's send buffer takes (Linux's default at most 4
	// MiB).
	fetch := func(rc *rawConn, slow bool) []byte {
		req := fetchReq(12, topic, [16]byte{}, 0, 0)
		req.MaxBytes = 64 << 20
		for p := range int32(parts) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes = p, 16<<20
			req.Topics[0].Partitions = append(req.Topics[0].Partitions[:p], fp)
		}
		corr := rc.send(req)
		if slow {
			time.Sleep(300 * time.Millisecond) // the socket fills; the gateway buffers the rest
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		rc.read(corr, resp)
		var all []byte
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) < 1<<20 {
				t.Fatalf("fetch of partition %d: error %d, %d bytes of batches", p.Partition, p.ErrorCode, len(p.RecordBatches))
			}
			all = append(all, p.RecordBatches...)
		}
		return all
	}
	read := fileBytes(t, reg, "read")
	want := fetch(dialRaw(t, c.Addr), false)
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, raw syscall.RawConn) error {
		return raw.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", c.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	slow := &rawConn{t: t, conn: conn, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow-reader"))}
	if got := fetch(slow, true); !bytes.Equal(got, want) {
		t.Fatalf("a slow reader's fetch of %d bytes differs from the %d bytes of one that reads at once", len(got), len(want))
	}
	if buffered := fileBytes(t, reg, "read") - read; buffered < float64(len(want))/4 {
		t.Fatalf("%v bytes read into memory for the slow reader, want a good part of its %d", buffered, len(want))
	}
}

// fileBytes is disgw_fetch_file_bytes_total{how}.
func fileBytes(t *testing.T, reg *prometheus.Registry, how string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "disgw_fetch_file_bytes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "how" && l.GetValue() == how {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
