package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/test"
)

// embeddedProjectID is the project id disgw serves with its embedded DIS
// and no --dis-project-id.
const embeddedProjectID = "disgw"

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
	addr string
	// admin is the admin listener (metrics), "" for the cluster mode's
	// processes, which run without one.
	admin  string
	client *disclient.Client
	cmd    *exec.Cmd
	log    *os.File
	done   chan error
}

// startDisgw starts bin on free loopback ports with its embedded DIS in
// dataDir and returns once it answers Kafka requests.
func startDisgw(ctx context.Context, bin, dataDir, logPath string, s settings) (*disgwProcess, error) {
	ports, err := test.FreePorts(3)
	if err != nil {
		return nil, err
	}
	addr, disAddr, admin := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2])
	args := append([]string{"--listen", addr, "--admin-listen", admin, "--data-dir", dataDir,
		"--fsync", string(s.sync), "--embedded-dis-listen", disAddr, "--dis-encoding", string(s.encoding),
		"--embedded-dis-transport", s.transport, "--log-level", "warn"}, strings.Fields(s.disgwArgs)...)
	p, err := spawn(bin, args, logPath)
	if err != nil {
		return nil, err
	}
	p.addr, p.admin = addr, admin
	p.client, err = disclient.New(disclient.Config{Endpoint: "http://" + disAddr, ProjectID: embeddedProjectID, Encoding: s.encoding})
	if err == nil {
		err = test.WaitUntil(ctx, func(ctx context.Context) bool { return test.BrokersListed(ctx, addr) > 0 }, p.done, logPath)
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

// stop ends disgw (an interrupt, then SIGKILL after 20 s) and waits for it.
func (p *disgwProcess) stop() {
	defer p.log.Close()
	test.StopProcess(p.cmd, p.done)
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
