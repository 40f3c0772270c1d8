// Command bench measures what the Kafka gateway costs over talking to DIS
// directly. It starts the embedded DIS server and a gateway in front of it
// (test.Start), then moves the same records four ways: produced and consumed
// through the gateway with franz-go, and written and read straight through
// disclient with a comparable concurrency. It prints one greppable line per
// figure; docs/benchmarks.md explains them and records measured numbers.
//
//	go -C test run ./bench [-records N] [-size BYTES] [-partitions P] [-sync always|none] [-dis-encoding json|protobuf|both]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/test"
)

// settings are the command-line knobs of one run.
type settings struct {
	records     int
	size        int
	partitions  int
	unloaded    int
	directBatch int
	sync        dislocal.SyncMode
	encoding    disclient.BodyEncoding
	dir         string
	cpuProfile  string
	timeout     time.Duration
}

func main() {
	var s settings
	var syncMode, encoding string
	flag.IntVar(&s.records, "records", 500_000, "records to produce and consume in each throughput phase")
	flag.IntVar(&s.size, "size", 1024, "value size in bytes")
	flag.IntVar(&s.partitions, "partitions", 3, "partitions of each topic and stream")
	flag.IntVar(&s.unloaded, "unloaded", 2000, "records produced one at a time for the unloaded latency")
	flag.IntVar(&s.directBatch, "direct-batch", 500, "records per PutRecords call in the direct produce phase")
	flag.StringVar(&syncMode, "sync", string(dislocal.SyncAlways), "embedded DIS durability: always or none")
	flag.StringVar(&encoding, "dis-encoding", "both", "PutRecords/GetRecords bodies between disclient and the embedded DIS: json, protobuf, or both (one full run each)")
	flag.StringVar(&s.dir, "dir", "", "embedded DIS data directory (default a temporary directory, removed after)")
	flag.StringVar(&s.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (gateway, DIS and clients) to this file")
	flag.DurationVar(&s.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	s.sync = dislocal.SyncMode(syncMode)
	encodings := []disclient.BodyEncoding{disclient.BodyEncoding(encoding)}
	if encoding == "both" {
		encodings = []disclient.BodyEncoding{disclient.EncodingJSON, disclient.EncodingProtobuf}
	}
	for _, e := range encodings {
		s.encoding = e
		if err := s.validate(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			flag.Usage()
			os.Exit(2)
		}
		if len(encodings) > 1 && s.cpuProfile != "" {
			fmt.Fprintln(os.Stderr, "bench: -cpuprofile needs one -dis-encoding")
			os.Exit(2)
		}
		if err := run(s); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

func (s settings) validate() error {
	switch {
	case s.records < 1 || s.size < 1 || s.partitions < 1 || s.unloaded < 1 || s.directBatch < 1:
		return fmt.Errorf("-records, -size, -partitions, -unloaded and -direct-batch must be positive")
	case s.sync != dislocal.SyncAlways && s.sync != dislocal.SyncNone:
		return fmt.Errorf("-sync must be %q or %q", dislocal.SyncAlways, dislocal.SyncNone)
	case s.encoding != disclient.EncodingJSON && s.encoding != disclient.EncodingProtobuf:
		return fmt.Errorf("-dis-encoding must be %q or %q", disclient.EncodingJSON, disclient.EncodingProtobuf)
	}
	return nil
}

// run starts the cluster, runs every phase in order and prints the figures.
func run(s settings) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "disgw-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(s.dir)
	}
	if s.cpuProfile != "" {
		f, err := os.Create(s.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	c, err := test.Start(test.Options{Dir: s.dir, Sync: s.sync, Encoding: s.encoding, Logger: log})
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close cluster: %w", cerr)
		}
	}()

	fmt.Printf("settings records=%d size=%d partitions=%d sync=%s dis-encoding=%s unloaded=%d direct-batch=%d GOMAXPROCS=%d\n",
		s.records, s.size, s.partitions, s.sync, s.encoding, s.unloaded, s.directBatch, runtime.GOMAXPROCS(0))
	b := &bench{s: s, c: c, payload: newPayload(s.size)}

	gwProduce, loaded, err := b.produceGateway(ctx, "bench")
	if err != nil {
		return fmt.Errorf("gateway produce: %w", err)
	}
	printThroughput("produce.gateway", gwProduce)
	printLatency("produce.gateway.latency.loaded", loaded)

	gwConsume, err := b.consumeGateway(ctx, "bench")
	if err != nil {
		return fmt.Errorf("gateway consume: %w", err)
	}
	printThroughput("consume.gateway", gwConsume)

	unloaded, err := b.produceGatewayUnloaded(ctx, "bench-unloaded")
	if err != nil {
		return fmt.Errorf("gateway unloaded produce: %w", err)
	}
	printLatency("produce.gateway.latency.unloaded", unloaded)

	directProduce, err := b.produceDirect(ctx, "bench-direct")
	if err != nil {
		return fmt.Errorf("direct produce: %w", err)
	}
	printThroughput("produce.direct", directProduce)

	directConsume, err := b.consumeDirect(ctx, "bench-direct")
	if err != nil {
		return fmt.Errorf("direct consume: %w", err)
	}
	printThroughput("consume.direct", directConsume)

	printRatio("produce", gwProduce, directProduce)
	printRatio("consume", gwConsume, directConsume)
	return nil
}

// bench holds what every phase shares.
type bench struct {
	s       settings
	c       *test.Cluster
	payload payload
}

// throughput is the outcome of one throughput phase: records moved, value
// bytes moved, the wall time it took and the CPU time the whole process
// (clients, gateway and DIS alike) spent meanwhile.
type throughput struct {
	records int
	bytes   int64
	elapsed time.Duration
	cpu     time.Duration
}

func (t throughput) recordsPerSecond() float64 { return float64(t.records) / t.elapsed.Seconds() }

func printThroughput(name string, t throughput) {
	fmt.Printf("%s records/s=%.0f MB/s=%.1f elapsed=%s cpu=%s\n", name, t.recordsPerSecond(),
		float64(t.bytes)/1e6/t.elapsed.Seconds(), t.elapsed.Round(time.Millisecond), t.cpu.Round(time.Millisecond))
}

// printRatio compares the gateway's throughput with the direct one, and
// the CPU time each spent per record.
func printRatio(name string, gateway, direct throughput) {
	perRecord := func(t throughput) float64 { return t.cpu.Seconds() / float64(t.records) }
	fmt.Printf("ratio %s gateway/direct=%.2f cpu-per-record gateway/direct=%.2f\n",
		name, gateway.recordsPerSecond()/direct.recordsPerSecond(), perRecord(gateway)/perRecord(direct))
}

// stopwatch times a phase in wall and process CPU time. CPU time is the
// steadier figure on a shared machine, where wall time depends on how much
// of the CPU other processes leave.
type stopwatch struct {
	wall time.Time
	cpu  time.Duration
}

func startStopwatch() stopwatch { return stopwatch{wall: time.Now(), cpu: processCPU()} }

// stop fills in t's elapsed and CPU time.
func (sw stopwatch) stop(t *throughput) {
	t.elapsed, t.cpu = time.Since(sw.wall), processCPU()-sw.cpu
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// printLatency prints the p50, p99, p99.9 and maximum of lat, which it sorts.
func printLatency(name string, lat []time.Duration) {
	slices.Sort(lat)
	q := func(f float64) string {
		i := min(len(lat)-1, int(f*float64(len(lat))))
		return fmt.Sprintf("%.2fms", float64(lat[i])/float64(time.Millisecond))
	}
	fmt.Printf("%s p50=%s p99=%s p99.9=%s max=%s n=%d\n", name, q(0.5), q(0.99), q(0.999), q(1), len(lat))
}

// payload hands out values: slices of one pool of seeded random bytes, so
// values are the same on every run, incompressible, and consecutive records
// do not repeat one another inside a compression window.
type payload struct {
	pool  []byte
	size  int
	slots int
}

func newPayload(size int) payload {
	slots := max(16, min(1024, (64<<20)/size))
	pool := make([]byte, size*slots)
	rng := rand.NewChaCha8([32]byte{'d', 'i', 's', 'g', 'w'})
	_, _ = rng.Read(pool)
	return payload{pool: pool, size: size, slots: slots}
}

// value is the value of record i.
func (p payload) value(i int) []byte {
	off := (i % p.slots) * p.size
	return p.pool[off : off+p.size : off+p.size]
}
