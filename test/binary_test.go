package test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// disgwBinary builds cmd/disgw once per test run.
var disgwBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "disgw-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "disgw")
	// Built in the gateway's own module, with its go.mod, as users build it.
	build := exec.Command("go", "build", "-o", bin, "./cmd/disgw")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// freeAddr is a loopback address whose port was free a moment ago, for a
// disgw binary to listen on (FreePorts).
func freeAddr(t *testing.T) string {
	t.Helper()
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}

// process is a running disgw binary.
type process struct {
	cmd   *exec.Cmd
	kafka string
	admin string
	logs  *safeBuffer
	// exited is closed once the process has ended and waitErr is how.
	exited  chan struct{}
	waitErr error
}

// wait waits for the process to end and returns how it ended.
func (p *process) wait() error {
	<-p.exited
	return p.waitErr
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startBinary runs disgw with the embedded DIS in dataDir, configured through
// environment variables as an operator would, and waits for /healthz.
func startBinary(t *testing.T, dataDir string) *process {
	t.Helper()
	return startBinaryAt(t, dataDir, freeAddr(t))
}

// startBinaryAt is startBinary with the Kafka listener on kafkaAddr, so
// that clients reconnect to a restarted disgw, and with further flags. A
// start whose listener finds its port taken is tried again for a while:
// between freeAddr and the bind, another process's outbound connection
// (a peer probing this gateway before it listens) may hold the port as
// its source port for a moment.
func startBinaryAt(t *testing.T, dataDir, kafkaAddr string, args ...string) *process {
	t.Helper()
	bin, err := disgwBinary()
	if err != nil {
		t.Fatal(err)
	}
	admin := freeAddr(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		p := &process{kafka: kafkaAddr, admin: admin, logs: &safeBuffer{}}
		p.cmd = exec.Command(bin, append([]string{"--listen", p.kafka, "--log-format", "json"}, args...)...)
		// The peer secret matters only with --peers; as an environment
		// variable it is there for every gateway a test starts.
		p.cmd.Env = append(os.Environ(), "DISGW_ADMIN_LISTEN="+p.admin, "DISGW_DATA_DIR="+dataDir, "DISGW_PEER_SECRET=test-peer-secret-0123456789")
		p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.exited = make(chan struct{})
		go func() {
			p.waitErr = p.cmd.Wait()
			close(p.exited)
		}()
		t.Cleanup(func() {
			select {
			case <-p.exited:
			default:
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		})
		if healthy(p, deadline) {
			return p
		}
		if !strings.Contains(p.logs.String(), "address already in use") || time.Now().After(deadline) {
			t.Fatalf("disgw did not become healthy:\n%s", p.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// healthy waits until p answers /healthz with ok, and reports whether it
// did before it exited or the deadline passed.
func healthy(p *process, deadline time.Time) bool {
	for {
		resp, err := http.Get("http://" + p.admin + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.TrimSpace(string(body)) == "ok" {
				return true
			}
		}
		select {
		case <-p.exited:
			return false
		default:
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBinaryCrashAndRestart produces with acks=all, kills disgw with SIGKILL,
// restarts it on the same data directory and reads every acknowledged record
// back; then it stops disgw with SIGTERM and checks a clean exit.
func TestBinaryCrashAndRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startBinary(t, dataDir)
	if !strings.Contains(p.logs.String(), dataDir) {
		t.Errorf("the start-up log does not name the data directory %s:\n%s", dataDir, p.logs.String())
	}

	ctx := testContext(t, 60*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic("crash"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "rec-%d", i)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Logf("produce: %v", err)
			}
			if err == nil {
				mu.Lock()
				acked[string(r.Value)] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	cl.Close()
	if len(acked) != n {
		t.Fatalf("only %d of %d records acknowledged before the crash", len(acked), n)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.wait()

	p = startBinary(t, dataDir)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"crash": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for len(acked) > 0 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d acknowledged records missing after the crash\n%s", len(acked), p.logs.String())
		}
		fs.EachRecord(func(r *kgo.Record) { delete(acked, string(r.Value)) })
	}

	resp, err := http.Get("http://" + p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte("disgw_fetched_records_total")) {
		t.Error("/metrics lacks disgw_fetched_records_total")
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil {
		t.Fatalf("disgw exited with %v after SIGTERM\n%s", err, p.logs.String())
	}
	sc := bufio.NewScanner(strings.NewReader(p.logs.String()))
	stopped := false
	for sc.Scan() {
		stopped = stopped || strings.Contains(sc.Text(), `"stopped"`)
	}
	if !stopped {
		t.Errorf("no 'stopped' log line after SIGTERM:\n%s", p.logs.String())
	}
}

// An idempotent franz-go producer writing while disgw is killed with
// SIGKILL and restarted under it, three times, leaves every record exactly
// once, in order, at dense offsets: the restarted gateway answers the
// producer's retries of batches it had already written from the producer
// state it rebuilt from the partition's tail.
func TestBinaryIdempotentProducerAcrossKills(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	addr := freeAddr(t)
	p := startBinaryAt(t, dataDir, addr)
	ctx := testContext(t, 120*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kills"), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 40000
	var acked atomic.Int64
	done := produceNumbered(ctx, cl, n, &acked)
	for range 3 {
		time.Sleep(300 * time.Millisecond)
		if acked.Load() == n {
			t.Fatal("the producer finished before disgw was killed")
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = p.wait()
		p = startBinaryAt(t, dataDir, addr)
	}
	if err := <-done; err != nil {
		t.Fatalf("producing across kills: %v\n%s", err, p.logs.String())
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kills": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for next := 0; next < n; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", next, n)
		}
		for _, r := range fs.Records() {
			if string(r.Value) != strconv.Itoa(next) || r.Offset != int64(next) {
				t.Fatalf("offset %d holds %q, want record %d at offset %d: a duplicate or a gap", r.Offset, r.Value, next, next)
			}
			next++
		}
	}
}
