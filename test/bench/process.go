package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/disgw/disgw/disclient"
)

// embeddedProjectID is the project id disgw serves with its embedded DIS
// and no --dis-project-id.
const embeddedProjectID = "disgw"

// freePorts returns n loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// goModuleDir is the source directory of module path, as the test module
// sees it (the root module through its replace directive).
func goModuleDir(ctx context.Context, path string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", path).Output()
	if err != nil {
		return "", fmt.Errorf("finding module %s: %w", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// buildDisgw builds cmd/disgw of the root module into dir.
func buildDisgw(ctx context.Context, dir string) (string, error) {
	root, err := goModuleDir(ctx, "github.com/disgw/disgw")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "disgw")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/disgw")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/disgw: %w\n%s", err, out)
	}
	return bin, nil
}

// disgwProcess is the disgw binary running as a child process with its
// embedded DIS, and a DIS client of that embedded server for the direct
// phases.
type disgwProcess struct {
	addr   string
	client *disclient.Client
	cmd    *exec.Cmd
	log    *os.File
	done   chan error
}

// startDisgw starts bin on free loopback ports with its embedded DIS in
// dataDir and returns once it answers Kafka requests.
func startDisgw(ctx context.Context, bin, dataDir, logPath string, s settings) (*disgwProcess, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	addr, disAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	args := append([]string{"--listen", addr, "--admin-listen", "", "--data-dir", dataDir,
		"--fsync", string(s.sync), "--embedded-dis-listen", disAddr, "--dis-encoding", string(s.encoding),
		"--embedded-dis-transport", s.transport, "--log-level", "warn"}, strings.Fields(s.disgwArgs)...)
	p, err := spawn(bin, args, logPath)
	if err != nil {
		return nil, err
	}
	p.addr = addr
	p.client, err = disclient.New(disclient.Config{Endpoint: "http://" + disAddr, ProjectID: embeddedProjectID, Encoding: s.encoding})
	if err == nil {
		err = waitAnswers(ctx, addr, p.done, logPath)
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("disgw %s: %w", strings.Join(args, " "), err)
	}
	return p, nil
}

// spawn starts bin with args, its output going to logPath, and collects
// its end on the process's done channel.
func spawn(bin string, args []string, logPath string) (*disgwProcess, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &disgwProcess{log: logFile, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	// The gateways of the cluster mode prove themselves to each other
	// with it (--peer-secret); a lone gateway ignores it.
	p.cmd.Env = append(os.Environ(), "DISGW_PEER_SECRET=bench-peer-secret-0123456789")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p, nil
}

// stop ends disgw (SIGTERM, then SIGKILL after 20 s) and waits for it.
func (p *disgwProcess) stop() {
	defer p.log.Close()
	stopProcess(p.cmd, p.done)
}

// stopProcess interrupts cmd, kills it if it is still running 20 s later,
// and waits until done reports its end.
func stopProcess(cmd *exec.Cmd, done chan error) {
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitAnswers polls the Kafka listener at addr until it lists a broker, the
// process reports its end on done, or a minute passes; logPath is the
// process's output, quoted in errors.
func waitAnswers(ctx context.Context, addr string, done chan error, logPath string) error {
	return waitUntil(ctx, func(ctx context.Context) bool { return answers(ctx, addr) }, done, logPath)
}

// waitUntil polls ready every 200 ms until it holds, the process reports
// its end on done, or a minute passes; logPath is the process's output,
// quoted in errors.
func waitUntil(ctx context.Context, ready func(context.Context) bool, done chan error, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("exited while starting: %v\n%s", err, logTail(logPath))
		default:
		}
		if ready(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("did not answer in time: %w\n%s", ctx.Err(), logTail(logPath))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// logTail is the end of a child process's output, for errors.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// procCPU is the user and system CPU time process pid has used, from
// /proc/PID/stat (in clock ticks of 1/100 s, as Linux reports them); 0 if
// it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// machineSteal is the steal time of all of the machine's CPUs since boot
// (the eighth figure of /proc/stat's "cpu" line, in ticks of 10 ms, as
// procCPU's), 0 where there is none to read.
func machineSteal() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	steal, _ := strconv.ParseInt(f[8], 10, 64)
	return time.Duration(steal) * 10 * time.Millisecond
}

// procStatusKiB reads the kB figures of fields (e.g. VmRSS, VmHWM) from
// /proc/PID/status.
func procStatusKiB(pid int, fields ...string) map[string]int64 {
	got := make(map[string]int64, len(fields))
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return got
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, want := range fields {
			if name == want {
				v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				got[name] = v
			}
		}
	}
	return got
}

// rssSampler polls a process's resident set size every 100 ms, so the
// peak between samples of VmHWM can be told apart from the end state.
type rssSampler struct {
	pid  int
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	max  int64 // KiB
}

func startRSSSampler(pid int) *rssSampler {
	r := &rssSampler{pid: pid, stop: make(chan struct{})}
	r.wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			r.sample()
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	})
	return r
}

func (r *rssSampler) sample() {
	rss := procStatusKiB(r.pid, "VmRSS")["VmRSS"]
	r.mu.Lock()
	r.max = max(r.max, rss)
	r.mu.Unlock()
}

// maxKiB is the largest resident set size sampled so far.
func (r *rssSampler) maxKiB() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max
}

func (r *rssSampler) close() {
	close(r.stop)
	r.wg.Wait()
}

func mib(kib int64) string { return fmt.Sprintf("%.1fMiB", float64(kib)/1024) }
