// Command bench measures disgw against Apache Kafka and against talking to
// DIS directly. It builds and starts the disgw binary with its embedded DIS
// (or, with -mode inprocess, runs the gateway inside this process), starts
// an Apache Kafka 4.x broker from test/kafka/pom.xml when java and mvn are
// installed, and runs the same franz-go workloads against both: produce and
// consume at several value and batch sizes, end-to-end latency at a fixed
// rate, and unloaded produce latency. It also writes and reads the same
// records straight to the embedded DIS with disclient, one DIS record per
// record and one DIS record per Kafka batch, the latter also in the shape
// of a Kafka client's requests, and watches the resident memory
// of the disgw process. It prints one greppable line per figure;
// docs/benchmarks.md explains them and has today's figures.
//
//	go -C test run ./bench [-records N] [-sizes 100,1024] [-batches 16384,1000000] [-kafka auto|on|off] [-kafka-flush default|always] [-mode binary|inprocess] [-phases throughput,latency,transactions,share]
//
// The share phase has franz-go share consumers (KIP-932) accept
// -share-records records with each count of -share-consumers.
//
// With -gateways 1,2,3 it runs a cluster mode instead: for each count, the
// embedded DIS alone as a process and that many gateway processes in front
// of it, with produce, consume and end-to-end latency through all of them
// and the ratios against the first count (docs/scaling.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/test"
)

// The ways to run the gateway.
const (
	modeBinary    = "binary"    // the disgw binary as a child process: its memory can be measured
	modeInProcess = "inprocess" // test.Start in this process: one CPU profile covers everything
)

// rssBudgetKiB is the resident memory disgw should stay within (issue 8).
const rssBudgetKiB = 256 << 10

// settings are the command-line knobs of one run.
type settings struct {
	records         int
	warmup          int
	sizes           []int
	batches         []int
	partitions      int
	unloaded        int
	directBatch     int
	latencyRate     int
	latencyDuration time.Duration
	latencySize     int
	sync            dislocal.SyncMode
	encoding        disclient.BodyEncoding
	transport       string
	mode            string
	kafka           string
	kafkaFlush      string
	disgwArgs       string
	dir             string
	cpuProfile      string
	timeout         time.Duration
	// gateways are the cluster sizes of the cluster mode, none for the
	// single-gateway bench.
	gateways []int
	// topicConfigs are the configs of every topic the bench creates, on
	// every server (-topic-config), and topicConfig the flag as given.
	topicConfigs map[string]*string
	topicConfig  string

	// directClientInflight is how many PutRecords calls the direct client
	// phase keeps in flight: a Kafka producer's in-flight window.
	directClientInflight int
	// txns and txnRecords shape the transactions phase: how many
	// transactions, of how many records each (0 txns: none).
	txns, txnRecords int
	// shareRecords and shareConsumers shape the share group phase: how
	// many records each run accepts (0: none), and the consumer counts.
	shareRecords   int
	shareConsumers []int
	// phases are the phase groups to run (-phases), by name.
	phases map[string]bool
	// rounds is how often each cell's phases run, for medians.
	rounds int
	// maxSteal is the share of the machine's CPU time a phase may lose to
	// steal before its pair is run again, at most stealRetries times.
	maxSteal     float64
	stealRetries int
}

func main() {
	var s settings
	var syncMode, encoding, sizes, batches, gateways, shareConsumers, phases string
	flag.IntVar(&s.records, "records", 200_000, "records to produce and consume in each throughput phase; values under 1 KiB get as many as carry the bytes of this many of 1 KiB")
	flag.IntVar(&s.warmup, "warmup", 300_000, "records of 1 KiB produced and consumed on every server in each batch size of -batches, untimed, before the first phase (0 for none)")
	flag.StringVar(&sizes, "sizes", "100,1024", "value sizes in bytes of the throughput phases, comma-separated")
	flag.StringVar(&batches, "batches", "16384,1000000", "producer batch sizes in bytes (franz-go ProducerBatchMaxBytes) of the throughput phases, comma-separated")
	flag.IntVar(&s.partitions, "partitions", 3, "partitions of each topic and stream")
	flag.IntVar(&s.unloaded, "unloaded", 2000, "records produced one at a time for the unloaded latency")
	flag.IntVar(&s.directBatch, "direct-batch", 500, "records per PutRecords call in the direct per-record phase")
	flag.IntVar(&s.rounds, "rounds", 3, "rounds of each cell's throughput phases; the ratios are of each phase's median round")
	flag.Float64Var(&s.maxSteal, "max-steal", 0.05, "a produce or consume phase that lost more than this share of the machine's CPU time to steal (the VM's host running others) is run again with its pair, at most -steal-retries times")
	flag.IntVar(&s.stealRetries, "steal-retries", 2, "how often a pair of phases is run again for steal (0: never)")
	flag.IntVar(&s.directClientInflight, "direct-client-inflight", 5, "PutRecords calls in flight in the direct client phase (franz-go's idempotent producer keeps at most 5 Produce requests in flight per broker)")
	flag.IntVar(&s.latencyRate, "latency-rate", 2000, "records per second of the end-to-end latency phase")
	flag.DurationVar(&s.latencyDuration, "latency-duration", 10*time.Second, "length of the end-to-end latency phase")
	flag.IntVar(&s.latencySize, "latency-size", 1024, "value size in bytes of the latency phases")
	flag.IntVar(&s.txns, "txns", 200, "transactions of the transactional produce phase (0: skip it)")
	flag.IntVar(&s.txnRecords, "txn-records", 100, "records per transaction of the transactional produce phase")
	flag.IntVar(&s.shareRecords, "share-records", 20_000, "records of -latency-size bytes each run of the share group phase accepts (0: skip it)")
	flag.StringVar(&shareConsumers, "share-consumers", "1,4,16", "share consumers in one share group, one run for each count, comma-separated")
	flag.StringVar(&phases, "phases", strings.Join(allPhases, ","), "the phases to run, comma-separated: "+strings.Join(allPhases, ", ")+" (the warm-up runs with -warmup, the memory line always)")
	flag.StringVar(&syncMode, "fsync", string(dislocal.SyncAlways), "embedded DIS durability (disgw --fsync): always or none")
	flag.StringVar(&encoding, "dis-encoding", string(disclient.EncodingProtobuf), "PutRecords/GetRecords bodies between disclient and the embedded DIS: json or protobuf")
	flag.StringVar(&s.transport, "dis-transport", "local", "how the gateway calls the embedded DIS for records (disgw --embedded-dis-transport): local (in process, disgw's default) or http")
	flag.StringVar(&s.mode, "mode", modeBinary, "binary: build and run the disgw binary (its memory is measured); inprocess: run the gateway in this process (needed for -cpuprofile)")
	flag.StringVar(&s.kafka, "kafka", "auto", "compare with Apache Kafka: auto (when java and mvn are installed), on (fail without them) or off")
	flag.StringVar(&s.kafkaFlush, "kafka-flush", "default", "Kafka durability: default (Kafka's own: no fsync per write) or always (log.flush.interval.messages=1)")
	flag.StringVar(&s.disgwArgs, "disgw-args", "", "further flags for the disgw binary, space-separated")
	flag.StringVar(&s.dir, "dir", "", "working directory for DIS data, Kafka's logs and the disgw binary (default a temporary directory, removed after)")
	flag.StringVar(&s.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (gateway, DIS and clients; -mode inprocess) to this file")
	flag.DurationVar(&s.timeout, "timeout", 15*time.Minute, "give up after this long")
	flag.StringVar(&s.topicConfig, "topic-config", "", "configs of every topic the bench creates, on disgw and Kafka alike: key=value, comma-separated (a part without = continues the value before it: cleanup.policy=compact,delete,retention.ms=-1)")
	flag.StringVar(&gateways, "gateways", "", "cluster mode instead of the single-gateway bench: for each count, comma-separated, the embedded DIS alone and that many gateway processes in front of it (default -sizes 1024 -batches 16384 -partitions 24)")
	flag.Parse()
	s.sync, s.encoding = dislocal.SyncMode(syncMode), disclient.BodyEncoding(encoding)
	var err error
	if gateways != "" {
		s.gateways, err = parseInts(gateways)
		given := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if !given["sizes"] {
			sizes = strconv.Itoa(clusterSize)
		}
		if !given["batches"] {
			batches = strconv.Itoa(clusterBatch)
		}
		if !given["partitions"] {
			s.partitions = clusterPartitions
		}
	}
	if err == nil {
		s.sizes, err = parseInts(sizes)
	}
	if err == nil {
		s.topicConfigs, err = parseConfigs(s.topicConfig)
	}
	if err == nil {
		s.shareConsumers, err = parseInts(shareConsumers)
	}
	if err == nil {
		s.phases, err = parsePhases(phases)
	}
	if err == nil {
		s.batches, err = parseInts(batches)
	}
	if err == nil {
		err = s.validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		flag.Usage()
		os.Exit(2)
	}
	if err := run(s); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a list of positive integers", list)
		}
		out = append(out, n)
	}
	return out, nil
}

// The phase groups -phases picks from, in the order they run.
const (
	phaseThroughput   = "throughput"   // produce and consume, direct to DIS and through the servers
	phaseLatency      = "latency"      // end-to-end and unloaded latency
	phaseTransactions = "transactions" // transactional produce
	phaseShare        = "share"        // share group consumption
)

var allPhases = []string{phaseThroughput, phaseLatency, phaseTransactions, phaseShare}

// parsePhases parses -phases, a comma-separated list of allPhases.
func parsePhases(list string) (map[string]bool, error) {
	phases := map[string]bool{}
	for f := range strings.SplitSeq(list, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(allPhases, f) {
			return nil, fmt.Errorf("-phases: %q is none of %s", f, strings.Join(allPhases, ", "))
		}
		phases[f] = true
	}
	return phases, nil
}

// parseConfigs parses a comma-separated list of topic configs, key=value;
// a part without = belongs to the value before it, as the second word of
// cleanup.policy=compact,delete does.
func parseConfigs(list string) (map[string]*string, error) {
	if list == "" {
		return nil, nil
	}
	configs, last := map[string]*string{}, ""
	for f := range strings.SplitSeq(list, ",") {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case ok && k != "":
			configs[k], last = &v, k
		case !ok && last != "":
			*configs[last] += "," + f
		default:
			return nil, fmt.Errorf("-topic-config %q is not a list of key=value", list)
		}
	}
	return configs, nil
}

func (s settings) validate() error {
	switch {
	case s.warmup < 0:
		return fmt.Errorf("-warmup must not be negative")
	case s.records < 1 || s.partitions < 1 || s.unloaded < 1 || s.directBatch < 1 || s.directClientInflight < 1 || s.rounds < 1 || s.latencyRate < 1 || s.latencySize < 16:
		return fmt.Errorf("-records, -partitions, -unloaded, -direct-batch, -direct-client-inflight and -latency-rate must be positive, -latency-size at least 16")
	case s.shareRecords < 0:
		return fmt.Errorf("-share-records must not be negative")
	case s.maxSteal < 0 || s.stealRetries < 0:
		return fmt.Errorf("-max-steal and -steal-retries must not be negative")
	case int(s.latencyDuration.Seconds()*float64(s.latencyRate)) < 10:
		return fmt.Errorf("-latency-duration times -latency-rate must be at least 10 records")
	case s.sync != dislocal.SyncAlways && s.sync != dislocal.SyncNone:
		return fmt.Errorf("-fsync must be %q or %q", dislocal.SyncAlways, dislocal.SyncNone)
	case s.encoding != disclient.EncodingJSON && s.encoding != disclient.EncodingProtobuf:
		return fmt.Errorf("-dis-encoding must be %q or %q", disclient.EncodingJSON, disclient.EncodingProtobuf)
	case s.transport != "local" && s.transport != "http":
		return fmt.Errorf("-dis-transport must be local or http")
	case strings.Contains(s.disgwArgs, "embedded-dis-transport"):
		return fmt.Errorf("set --embedded-dis-transport with -dis-transport, which both modes and the settings line follow")
	case s.mode != modeBinary && s.mode != modeInProcess:
		return fmt.Errorf("-mode must be %q or %q", modeBinary, modeInProcess)
	case s.cpuProfile != "" && s.mode != modeInProcess:
		return fmt.Errorf("-cpuprofile profiles this process: use it with -mode %s", modeInProcess)
	case s.disgwArgs != "" && s.mode != modeBinary:
		return fmt.Errorf("-disgw-args needs -mode %s", modeBinary)
	case s.kafka != "auto" && s.kafka != "on" && s.kafka != "off":
		return fmt.Errorf("-kafka must be auto, on or off")
	case s.kafkaFlush != "default" && s.kafkaFlush != "always":
		return fmt.Errorf("-kafka-flush must be default or always")
	case len(s.gateways) > 0 && (s.mode != modeBinary || s.kafka == "on"):
		return fmt.Errorf("-gateways runs gateway processes without Kafka: use it with -mode %s and without -kafka on", modeBinary)
	case slices.Max(append([]int{0}, s.gateways...)) > maxGateways:
		return fmt.Errorf("-gateways counts must be at most %d", maxGateways)
	}
	return nil
}

// target is a Kafka-protocol server the workloads run against.
type target struct {
	name string
	// addr is the server's host:port, or several, comma-separated, for a
	// cluster of gateways: clients bootstrap from all of them.
	addr string
	// pid is the server's process, whose CPU time and memory are measured
	// with the bench's own; 0 when it runs inside the bench.
	pid int
}

// run starts disgw and Kafka, runs every workload and prints the figures.
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
	if len(s.gateways) > 0 {
		return runClusters(ctx, s)
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

	b := &bench{s: s, payloads: map[int]payload{}}
	if s.mode == modeInProcess {
		log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
		c, err := test.Start(test.Options{Dir: filepath.Join(s.dir, "dis"), Sync: s.sync, Encoding: s.encoding, Logger: log,
			LocalDIS: s.transport == "local"})
		if err != nil {
			return fmt.Errorf("start cluster: %w", err)
		}
		defer func() {
			if cerr := c.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close cluster: %w", cerr)
			}
		}()
		b.disgw, b.dis = target{name: "disgw", addr: c.Addr}, c.Client
	} else {
		bin, err := buildDisgw(ctx, s.dir)
		if err != nil {
			return err
		}
		p, err := startDisgw(ctx, bin, filepath.Join(s.dir, "dis"), filepath.Join(s.dir, "disgw.log"), s)
		if err != nil {
			return err
		}
		defer p.stop()
		b.disgw, b.dis = target{name: "disgw", addr: p.addr, pid: p.cmd.Process.Pid}, p.client
		b.disgwAdmin = p.admin
		b.rss = startRSSSampler(b.disgw.pid)
		defer b.rss.close()
	}

	kafkaLine := "kafka=off"
	if s.kafka != "off" {
		if terr := test.KafkaTools(); terr != nil {
			if s.kafka == "on" {
				return fmt.Errorf("-kafka on: %w", terr)
			}
			kafkaLine = "kafka=skipped"
			fmt.Printf("kafka skipped: %v; the disgw/kafka ratios are left out\n", terr)
		} else {
			kdir := filepath.Join(s.dir, "kafka")
			if err := os.MkdirAll(kdir, 0o755); err != nil {
				return err
			}
			pomDir, err := moduleDir(ctx)
			if err != nil {
				return err
			}
			k, err := test.StartKafka(ctx, filepath.Join(pomDir, "kafka"), kdir, kafkaFlushProperties(s.kafkaFlush))
			if err != nil {
				return err
			}
			defer k.Stop()
			b.kafka = &target{name: "kafka", addr: k.Addr, pid: k.Pid()}
			kafkaLine = kafkaDescription(s.kafkaFlush)
		}
	}

	fmt.Printf("settings mode=%s records=%d warmup=%d sizes=%s batches=%s partitions=%d fsync=%s dis-encoding=%s dis-transport=%s %s latency-rate=%d latency-duration=%s latency-size=%d unloaded=%d direct-batch=%d direct-client-inflight=%d rounds=%d max-steal=%g steal-retries=%d topic-config=%s phases=%s share-records=%d share-consumers=%s page-reporting=%s GOMAXPROCS=%d NumCPU=%d\n",
		s.mode, s.records, s.warmup, joinInts(s.sizes), joinInts(s.batches), s.partitions, s.sync, s.encoding, s.transport, kafkaLine,
		s.latencyRate, s.latencyDuration, s.latencySize, s.unloaded, s.directBatch, s.directClientInflight, s.rounds, s.maxSteal, s.stealRetries, s.topicConfigLine(),
		s.phaseLine(), s.shareRecords, joinInts(s.shareConsumers), pageReporting(), runtime.GOMAXPROCS(0), runtime.NumCPU())
	return b.runAll(ctx)
}

// topicConfigLine is -topic-config for the settings line: none when the
// topics get the servers' defaults.
func (s settings) topicConfigLine() string {
	if s.topicConfig == "" {
		return "none"
	}
	return s.topicConfig
}

// phaseLine is the phases that run, for the settings line.
func (s settings) phaseLine() string {
	var on []string
	for _, p := range allPhases {
		if s.phases[p] {
			on = append(on, p)
		}
	}
	return strings.Join(on, ",")
}

// moduleDir is the directory of the test module, which holds kafka/pom.xml.
func moduleDir(ctx context.Context) (string, error) {
	return goModuleDir(ctx, "github.com/disgw/disgw/test")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
