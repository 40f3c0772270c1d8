package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"
)

// throughput is the outcome of one throughput phase: records moved, value
// bytes moved, the wall time it took, the CPU time the bench and the
// server process spent meanwhile, and of that the server's alone (when it
// runs as a process of its own, server is set), the page faults the bench
// process took (a client allocating fresh memory pays the kernel to zero
// it), the CPU time the host took from this machine meanwhile (steal),
// and the server's resident memory at its end (0 when the server runs
// inside the bench).
type throughput struct {
	records   int
	bytes     int64
	elapsed   time.Duration
	cpu       time.Duration
	serverCPU time.Duration
	server    bool
	faults    int64
	steal     time.Duration
	rssKiB    int64
}

func (t throughput) recordsPerSecond() float64 { return float64(t.records) / t.elapsed.Seconds() }

// printThroughput prints one phase's line; labels are its key=value
// labels, such as the value and batch size.
func printThroughput(name, labels string, t throughput) {
	fmt.Printf("%s %s %s\n", name, labels, throughputFields(t))
}

// throughputFields are t's figures as key=value fields: rates, times and
// the server's memory.
func throughputFields(t throughput) string {
	server, rss := "", ""
	if t.server {
		server = fmt.Sprintf(" server-cpu=%s bench-faults=%d", t.serverCPU.Round(time.Millisecond), t.faults)
	}
	if t.rssKiB > 0 {
		rss = " rss=" + mib(t.rssKiB)
	}
	return fmt.Sprintf("records/s=%.0f MB/s=%.1f elapsed=%s cpu=%s%s steal=%s%s", t.recordsPerSecond(),
		float64(t.bytes)/1e6/t.elapsed.Seconds(), t.elapsed.Round(time.Millisecond), t.cpu.Round(time.Millisecond), server, t.steal, rss)
}

// ratio is a's records/s over b's, formatted, or "-" when b did not run.
func ratio(a throughput, b *throughput) string {
	if b == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.recordsPerSecond()/b.recordsPerSecond())
}

// stopwatch times a phase in wall time and in the CPU time of this process
// and of the server process pid (if not 0). CPU time is the steadier figure
// on a shared machine, where wall time depends on how much of the CPU other
// processes leave. It also counts the machine's steal time, the CPU time a
// virtual machine's host gave to others while this one had work: a phase
// that lost much of it ran slower for a reason outside both servers.
type stopwatch struct {
	pid  int
	wall time.Time
	at   usage
}

// usage is what a stopwatch reads at each end of a phase: the CPU time of
// this process and of the server process (0 without one), this process's
// minor page faults, and the machine's steal time.
type usage struct {
	benchCPU, serverCPU, steal time.Duration
	faults                     int64
}

// readUsage reads usage, with the server process pid (none for 0).
func readUsage(pid int) usage {
	ru := selfUsage()
	u := usage{benchCPU: rusageCPU(ru), faults: ru.Minflt, steal: machineSteal()}
	if pid != 0 {
		u.serverCPU = procCPU(pid)
	}
	return u
}

// startStopwatch starts timing a phase once what earlier phases set off
// has settled (quiesce).
func startStopwatch(pid int) stopwatch {
	quiesce(pid)
	return stopwatch{pid: pid, wall: time.Now(), at: readUsage(pid)}
}

// quiesce waits until what earlier phases set off has settled, so that
// phases do not pay for each other's work: the machine's dirty pages are
// written out (sync(2)), as what an earlier phase left in the page cache,
// Kafka's log above all, would be written back during this one and slow
// its fsyncs; and the server process pid is waited for until it is idle
// (settle), as the embedded DIS's pebble flushes and compacts the index of
// the records the phases before wrote.
func quiesce(pid int) {
	syscall.Sync()
	settle(pid)
}

// A server is idle when it uses less than settledCPU of CPU time in a
// settleWindow; settle waits at most settleMax for that.
const (
	settleWindow = 100 * time.Millisecond
	settledCPU   = 5 * time.Millisecond
	settleMax    = 10 * time.Second
)

// settle waits until process pid (none for 0) is idle, or settleMax has
// passed.
func settle(pid int) {
	if pid == 0 {
		return
	}
	for deadline := time.Now().Add(settleMax); time.Now().Before(deadline); {
		before := procCPU(pid)
		time.Sleep(settleWindow)
		if procCPU(pid)-before < settledCPU {
			return
		}
	}
}

// stop fills in t's elapsed time, CPU times, faults and steal, and the
// server's memory.
func (sw stopwatch) stop(t *throughput) {
	now := readUsage(sw.pid)
	t.elapsed = time.Since(sw.wall)
	t.serverCPU = now.serverCPU - sw.at.serverCPU
	t.cpu = now.benchCPU - sw.at.benchCPU + t.serverCPU
	t.faults, t.steal = now.faults-sw.at.faults, now.steal-sw.at.steal
	if sw.pid != 0 {
		t.server = true
		t.rssKiB = procStatusKiB(sw.pid, "VmRSS")["VmRSS"]
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration { return rusageCPU(selfUsage()) }

// rusageCPU is the user and system CPU time of ru.
func rusageCPU(ru syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfUsage is this process's resource usage, zero if it cannot be read.
func selfUsage() syscall.Rusage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru
}

// quantiles sorts lat and returns its p50, p99, p99.9 and maximum.
func quantiles(lat []time.Duration) [4]time.Duration {
	slices.Sort(lat)
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(f*float64(len(lat))))] }
	return [4]time.Duration{q(0.5), q(0.99), q(0.999), q(1)}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// printLatency prints the quantiles of lat.
func printLatency(name, labels string, q [4]time.Duration, n int) {
	fmt.Printf("%s %s p50=%s p99=%s p99.9=%s max=%s n=%d\n", name, labels, ms(q[0]), ms(q[1]), ms(q[2]), ms(q[3]), n)
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
