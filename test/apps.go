package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// classpaths caches, by Maven module directory, the class paths
// mavenClasspath builds: tests run in parallel with the same jars, Maven
// takes seconds, and two builds of one module at once would write its
// target directory together, under a JVM reading it.
var classpaths struct {
	sync.Mutex
	byDir map[string]string
}

// mavenClasspath is MavenClasspath(ctx, dir, goals...) run once per module
// directory and test binary; it fails the test if Maven fails.
func mavenClasspath(ctx context.Context, t *testing.T, dir string, goals ...string) string {
	t.Helper()
	classpaths.Lock()
	defer classpaths.Unlock()
	if cp, ok := classpaths.byDir[dir]; ok {
		return cp
	}
	cp, err := MavenClasspath(ctx, dir, goals...)
	if err != nil {
		t.Fatal(err)
	}
	if classpaths.byDir == nil {
		classpaths.byDir = map[string]string{}
	}
	classpaths.byDir[dir] = cp
	return cp
}

// appsClasspath skips the test without Java or Maven, compiles test/apps
// (once per test binary) and returns its classes and Apache Kafka's
// application jars as a class path.
func appsClasspath(ctx context.Context, t *testing.T) string {
	t.Helper()
	skipWithoutJava(t)
	dir, err := filepath.Abs("apps")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + mavenClasspath(ctx, t, dir, "compile")
}

// skipWithoutJava skips the test where Java or Maven is not installed.
func skipWithoutJava(t *testing.T) {
	t.Helper()
	if err := KafkaTools(); err != nil {
		t.Skip(err)
	}
}

// javaProcess is a long-running JVM a test starts, kills and restarts: a
// Streams application, a Connect worker, a Kafka broker. Its output goes
// to a log file the test prints when it fails.
type javaProcess struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// startJava starts main class with args on class path cp, named name in
// the test's log. The process is killed when the test ends, if it has not
// been already.
func startJava(t *testing.T, name, cp, class string, args ...string) *javaProcess {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m", "-cp", cp, class}, args...)
	p := &javaProcess{t: t, name: name, cmd: exec.Command("java", argv...), log: logPath, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, p.tail(200))
		}
	})
	return p
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
// Killing a process that has ended does nothing.
func (p *javaProcess) kill() {
	if ended, _ := p.exited(); ended {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.done <- <-p.done
}

// exited reports whether the process has ended, and how.
func (p *javaProcess) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// tail is the last n lines of the process's log.
func (p *javaProcess) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// awaitLog waits until the process's log holds want, failing the test if
// the process ends first or ctx expires.
func (p *javaProcess) awaitLog(ctx context.Context, want string) {
	p.t.Helper()
	for {
		if b, _ := os.ReadFile(p.log); strings.Contains(string(b), want) {
			return
		}
		if ended, err := p.exited(); ended {
			p.t.Fatalf("%s ended (%v) before its log said %q", p.name, err, want)
		}
		if ctx.Err() != nil {
			p.t.Fatal(fmt.Errorf("%s: its log did not say %q: %w", p.name, want, ctx.Err()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
