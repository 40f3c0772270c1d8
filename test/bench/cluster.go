package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/test"
)

// The one cell the cluster mode runs unless -sizes or -batches are given:
// 1 KiB values in 16 KiB batches, the cell where produce is the gateway's
// own cost rather than the batch's.
const (
	clusterSize  = 1024
	clusterBatch = 16384
)

// clusterPartitions is the partition count of the cluster mode's topics
// unless -partitions is given: enough that rendezvous hashing gives each of
// two or three gateways near its share of the partitions, and so of the
// records (14:10 of 24 on two, 7:8:9 on three with the bench's topic
// names), where 3 partitions may all land on one.
const clusterPartitions = 24

// maxGateways bounds -gateways: every gateway is a process on this machine.
const maxGateways = 16

// cluster is the embedded DIS running alone as a process and the gateway
// processes in front of it, set up as docs/operations.md "Several
// gateways" describes for one machine.
type cluster struct {
	dis      *disgwProcess
	gateways []*disgwProcess
}

// startCluster starts the embedded DIS alone with its data under dir, then
// n gateways that know each other as peers, and returns once every gateway
// answers Metadata listing all n brokers.
func startCluster(ctx context.Context, bin, dir string, n int, s settings) (*cluster, error) {
	ports, err := test.FreePorts(n + 1)
	if err != nil {
		return nil, err
	}
	disAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	disLog := filepath.Join(dir, "dis.log")
	disArgs := []string{"--listen", "-", "--admin-listen", "", "--embedded-dis-listen", disAddr,
		"--data-dir", filepath.Join(dir, "dis"), "--fsync", string(s.sync), "--log-level", "warn"}
	c := &cluster{}
	if c.dis, err = spawn(bin, disArgs, disLog); err != nil {
		return nil, err
	}
	client, err := disclient.New(disclient.Config{Endpoint: "http://" + disAddr, ProjectID: embeddedProjectID, Encoding: s.encoding})
	if err == nil {
		err = test.WaitUntil(ctx, func(ctx context.Context) bool {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := client.ListStreams(ctx, 1, "")
			return err == nil
		}, c.dis.done, disLog)
	}
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("embedded DIS %s: %w", strings.Join(disArgs, " "), err)
	}

	addrs, peers := make([]string, n), make([]string, n)
	for i := range n {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", ports[i+1])
		peers[i] = fmt.Sprintf("%d=%s", i, addrs[i])
	}
	for i, addr := range addrs {
		// A gateway in front of a DIS endpoint takes real DIS's defaults;
		// these restore the embedded ones (docs/operations.md).
		args := append([]string{"--node-id", strconv.Itoa(i), "--listen", addr, "--admin-listen", "",
			"--peers", strings.Join(peers, ","), "--dis-endpoint", "http://" + disAddr,
			"--dis-project-id", embeddedProjectID, "--auto-create-topics", "true",
			"--dis-encoding", string(s.encoding), "--log-level", "warn"}, strings.Fields(s.disgwArgs)...)
		g, err := spawn(bin, args, filepath.Join(dir, fmt.Sprintf("gateway-%d.log", i)))
		if err != nil {
			c.stop()
			return nil, err
		}
		g.addr = addr
		c.gateways = append(c.gateways, g)
	}
	for i, g := range c.gateways {
		if err := test.WaitUntil(ctx, func(ctx context.Context) bool { return test.BrokersListed(ctx, g.addr) == n }, g.done, g.log.Name()); err != nil {
			c.stop()
			return nil, fmt.Errorf("gateway %d of %d does not list %d brokers: %w", i, n, n, err)
		}
	}
	return c, nil
}

// stop ends the gateways, then the DIS they write to.
func (c *cluster) stop() {
	for _, g := range c.gateways {
		g.stop()
	}
	c.dis.stop()
}

// target is the cluster as the workloads see it: clients bootstrap from
// every gateway. Its pid is 0: the phases' own stopwatch then times the
// bench alone, and the cluster mode adds its processes' CPU time itself.
func (c *cluster) target() target {
	addrs := make([]string, len(c.gateways))
	for i, g := range c.gateways {
		addrs[i] = g.addr
	}
	return target{name: "cluster", addr: strings.Join(addrs, ",")}
}

// processes are the DIS process and then the gateways.
func (c *cluster) processes() []*disgwProcess { return append([]*disgwProcess{c.dis}, c.gateways...) }

// cpuSplit is the CPU time the bench, the DIS process and the gateways
// together have used: what the bench's clients, DIS and the gateways each
// cost, for sizing them apart.
type cpuSplit struct{ bench, dis, gateways time.Duration }

func (c *cluster) cpu() cpuSplit {
	cpu := cpuSplit{bench: processCPU(), dis: procCPU(c.dis.cmd.Process.Pid)}
	for _, g := range c.gateways {
		cpu.gateways += procCPU(g.cmd.Process.Pid)
	}
	return cpu
}

func (a cpuSplit) sub(b cpuSplit) cpuSplit {
	return cpuSplit{bench: a.bench - b.bench, dis: a.dis - b.dis, gateways: a.gateways - b.gateways}
}

func (a cpuSplit) total() time.Duration { return a.bench + a.dis + a.gateways }

// line is the split and the records the gateways moved per second of
// their CPU time, the figure that sizes gateways.
func (a cpuSplit) line(records int) string {
	return fmt.Sprintf("bench=%s dis=%s gateways=%s gateway-records/cpu-s=%.0f", a.bench.Round(time.Millisecond),
		a.dis.Round(time.Millisecond), a.gateways.Round(time.Millisecond), float64(records)/a.gateways.Seconds())
}

// rssKiB is the summed resident memory of the cluster's processes now.
func (c *cluster) rssKiB() int64 {
	var sum int64
	for _, p := range c.processes() {
		sum += procStatusKiB(p.cmd.Process.Pid, "VmRSS")["VmRSS"]
	}
	return sum
}

// clusterCell is what one value and batch size measured on one cluster.
type clusterCell struct {
	size, batch            int
	produce, consume       throughput
	produceCPU, consumeCPU cpuSplit
}

// clusterRun is what one cluster of gateways measured.
type clusterRun struct {
	gateways int
	cells    []clusterCell
	e2eP99   time.Duration
	rssSum   int64 // KiB, the sum of every process's peak resident set
}

// runClusters builds disgw and, for every count of -gateways, starts that
// cluster on fresh DIS data, runs the workloads through it and prints its
// lines, then the ratios of every cluster against the first (N=1 unless
// -gateways leaves it out).
func runClusters(ctx context.Context, s settings) error {
	bin, err := buildDisgw(ctx, s.dir)
	if err != nil {
		return err
	}
	fmt.Printf("settings mode=cluster gateways=%s records=%d warmup=%d sizes=%s batches=%s partitions=%d fsync=%s dis-encoding=%s latency-rate=%d latency-duration=%s latency-size=%d topic-config=%s page-reporting=%s GOMAXPROCS=%d NumCPU=%d\n",
		joinInts(s.gateways), s.records, s.warmup, joinInts(s.sizes), joinInts(s.batches), s.partitions, s.sync, s.encoding,
		s.latencyRate, s.latencyDuration, s.latencySize, s.topicConfigLine(), pageReporting(), runtime.GOMAXPROCS(0), runtime.NumCPU())
	var runs []clusterRun
	for _, n := range s.gateways {
		r, err := runCluster(ctx, bin, s, n)
		if err != nil {
			return fmt.Errorf("%d gateways: %w", n, err)
		}
		runs = append(runs, r)
	}
	base := runs[0]
	for _, r := range runs[1:] {
		for i, cell := range r.cells {
			bc := base.cells[i]
			fmt.Printf("cluster.ratio gateways=%d/%d size=%d batch=%d produce=%.2f consume=%.2f e2e-p99=%.2f rss-sum=%.2f produce-cpu/record=%.2f consume-cpu/record=%.2f produce-gateway-cpu/record=%.2f consume-gateway-cpu/record=%.2f\n",
				r.gateways, base.gateways, cell.size, cell.batch,
				cell.produce.recordsPerSecond()/bc.produce.recordsPerSecond(),
				cell.consume.recordsPerSecond()/bc.consume.recordsPerSecond(),
				float64(r.e2eP99)/float64(base.e2eP99), float64(r.rssSum)/float64(base.rssSum),
				float64(cell.produce.cpu)/float64(bc.produce.cpu), float64(cell.consume.cpu)/float64(bc.consume.cpu),
				float64(cell.produceCPU.gateways)/float64(bc.produceCPU.gateways), float64(cell.consumeCPU.gateways)/float64(bc.consumeCPU.gateways))
		}
	}
	return nil
}

// runCluster starts a cluster of n gateways, warms it up, runs produce and
// consume for every cell and the end-to-end latency through it, and prints
// its lines.
func runCluster(ctx context.Context, bin string, s settings, n int) (run clusterRun, err error) {
	dir := filepath.Join(s.dir, fmt.Sprintf("cluster-%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return run, err
	}
	c, err := startCluster(ctx, bin, dir, n, s)
	if err != nil {
		return run, err
	}
	defer c.stop()
	samplers := make([]*rssSampler, 0, n+1)
	for _, p := range c.processes() {
		r := startRSSSampler(p.cmd.Process.Pid)
		defer r.close()
		samplers = append(samplers, r)
	}

	t := c.target()
	b := &bench{s: s, disgw: t, payloads: map[int]payload{}}
	if err := b.warmUp(ctx); err != nil {
		return run, err
	}
	run.gateways = n
	for _, size := range s.sizes {
		for _, batch := range s.batches {
			cell := clusterCell{size: size, batch: batch}
			labels := fmt.Sprintf("gateways=%d size=%d batch=%d", n, size, batch)
			topic := fmt.Sprintf("bench-%d-%d", size, batch)
			cpu := c.cpu()
			if cell.produce, err = b.produce(ctx, t, topic, size, batch); err != nil {
				return run, fmt.Errorf("produce, %s: %w", labels, err)
			}
			cell.produceCPU = c.cpu().sub(cpu)
			cell.produce.cpu, cell.produce.rssKiB = cell.produceCPU.total(), c.rssKiB()
			leaders, err := leaderCounts(ctx, t, topic)
			if err != nil {
				return run, err
			}
			printThroughput("cluster.produce", labels+" leaders="+leaders, cell.produce)
			cpu = c.cpu()
			if cell.consume, err = b.consume(ctx, t, topic, size); err != nil {
				return run, fmt.Errorf("consume, %s: %w", labels, err)
			}
			cell.consumeCPU = c.cpu().sub(cpu)
			cell.consume.cpu, cell.consume.rssKiB = cell.consumeCPU.total(), c.rssKiB()
			printThroughput("cluster.consume", labels, cell.consume)
			fmt.Printf("cluster.cpu %s produce %s consume %s\n", labels,
				cell.produceCPU.line(cell.produce.records), cell.consumeCPU.line(cell.consume.records))
			run.cells = append(run.cells, cell)
		}
	}
	latLabels := fmt.Sprintf("gateways=%d rate=%d size=%d", n, s.latencyRate, s.latencySize)
	lat, err := b.latencyEndToEnd(ctx, t, "bench-latency", latLabels)
	if err != nil {
		return run, fmt.Errorf("end-to-end latency: %w", err)
	}
	q := quantiles(lat)
	run.e2eP99 = q[1]
	printLatency("cluster.latency.e2e", latLabels, q, len(lat))

	mem := make([]string, 0, n+1)
	for i, p := range c.processes() {
		st := procStatusKiB(p.cmd.Process.Pid, "VmHWM", "VmRSS")
		samplers[i].sample()
		name := "dis"
		if i > 0 {
			name = fmt.Sprintf("gateway%d", i-1)
		}
		mem = append(mem, fmt.Sprintf("%s=%s/%s/%s", name, mib(st["VmHWM"]), mib(samplers[i].maxKiB()), mib(st["VmRSS"])))
		run.rssSum += st["VmHWM"]
	}
	fmt.Printf("cluster.memory gateways=%d peak/sampled-max/end %s rss-sum=%s\n", n, strings.Join(mem, " "), mib(run.rssSum))
	for _, cell := range run.cells {
		fmt.Printf("cluster gateways=%d size=%d batch=%d produce records/s=%.0f consume records/s=%.0f e2e-p99=%s rss-sum=%s\n",
			n, cell.size, cell.batch, cell.produce.recordsPerSecond(), cell.consume.recordsPerSecond(), ms(run.e2eP99), mib(run.rssSum))
	}
	return run, nil
}

// leaderCounts says how many of topic's partitions each gateway leads, as
// "node:count,…": with few partitions rendezvous hashing may give one
// gateway more than its share, which the throughput figures then show.
func leaderCounts(ctx context.Context, t target, topic string) (string, error) {
	cl, err := newClient(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("metadata of %s: %w", topic, err)
	}
	counts := map[int32]int{}
	for _, b := range md.Brokers {
		counts[b.NodeID] = 0
	}
	for _, p := range md.Topics[topic].Partitions {
		counts[p.Leader]++
	}
	nodes := make([]int32, 0, len(counts))
	for id := range counts {
		nodes = append(nodes, id)
	}
	slices.Sort(nodes)
	out := make([]string, len(nodes))
	for i, id := range nodes {
		out[i] = fmt.Sprintf("%d:%d", id, counts[id])
	}
	return strings.Join(out, ","), nil
}
