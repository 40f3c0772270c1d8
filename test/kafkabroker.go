package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaVersion is the Apache Kafka broker test/kafka/pom.xml resolves.
const KafkaVersion = "4.4.0"

// kafkaJVMOptions are the JVM options Kafka's own start script uses, with
// its default 1 GiB heap.
var kafkaJVMOptions = []string{
	"-Xms1G", "-Xmx1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
	"-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
}

// KafkaBroker is an Apache Kafka broker running in a child JVM: one node
// acting as both broker and KRaft controller, on loopback ports, with its
// data, configuration and output in one directory. The benchmark compares
// disgw with it; the MirrorMaker 2 test mirrors from it into disgw.
type KafkaBroker struct {
	// Addr is the broker's PLAINTEXT listener, host:port.
	Addr string
	// LogPath is the file the broker's output goes to.
	LogPath string
	cmd     *exec.Cmd
	done    chan error
}

// KafkaTools reports why Kafka's Java programs cannot run here (no java or
// no mvn), or nil.
func KafkaTools() error {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed", tool)
		}
	}
	return nil
}

// maven lets one Maven run at a time: the end-to-end tests run in
// parallel, and Maven runs at once would download into the one local
// repository together.
var maven sync.Mutex

// MavenClasspath runs Maven on the module in dir (this module's apps,
// java, kafka or kafkatools directory), with goals first (compile, or
// none), and returns the class path of its dependencies.
func MavenClasspath(ctx context.Context, dir string, goals ...string) (string, error) {
	maven.Lock()
	defer maven.Unlock()
	tmp, err := os.MkdirTemp("", "disgw-classpath")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cpFile := filepath.Join(tmp, "classpath.txt")
	args := append(append([]string{"-q", "-B", "-f", filepath.Join(dir, "pom.xml")}, goals...),
		"dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
	if out, err := exec.CommandContext(ctx, "mvn", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s with Maven: %w\n%s", dir, err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(cp)), nil
}

// StartKafka resolves the broker's class path from pomDir/pom.xml (this
// module's kafka directory) with Maven, formats a KRaft storage directory
// under dir and starts the broker with server.properties lines extra added
// to the single-node ones, returning once it answers Kafka requests.
func StartKafka(ctx context.Context, pomDir, dir, extra string) (*KafkaBroker, error) {
	classpath, err := MavenClasspath(ctx, pomDir)
	if err != nil {
		return nil, err
	}

	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	props := filepath.Join(dir, "server.properties")
	conf := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://%[1]s,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://%[1]s
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=%[3]s
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
%[4]s`, addr, ports[1], filepath.Join(dir, "data"), extra)
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		return nil, err
	}

	// A cluster id is 16 random bytes in URL-safe base64; one starting
	// with '-' would read as an option to the storage tool, so Kafka
	// never makes one, and neither does this.
	var id [16]byte
	clusterID := "-"
	for strings.HasPrefix(clusterID, "-") {
		_, _ = rand.Read(id[:])
		clusterID = base64.RawURLEncoding.EncodeToString(id[:])
	}
	format := exec.CommandContext(ctx, "java", kafkaJavaArgs(classpath, "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", props)...)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("formatting Kafka's storage: %w\n%s", err, out)
	}

	logPath := filepath.Join(dir, "kafka.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	k := &KafkaBroker{Addr: addr, LogPath: logPath, done: make(chan error, 1)}
	// Not CommandContext: the broker must outlive a cancelled ctx long
	// enough for Stop to end it and collect it.
	k.cmd = exec.Command("java", kafkaJavaArgs(classpath, "kafka.Kafka", props)...)
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	if err := k.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { k.done <- k.cmd.Wait(); logFile.Close() }()
	if err := WaitUntil(ctx, func(ctx context.Context) bool { return BrokersListed(ctx, addr) > 0 }, k.done, logPath); err != nil {
		k.Stop()
		return nil, fmt.Errorf("the Kafka broker: %w", err)
	}
	return k, nil
}

// Pid is the broker JVM's process id.
func (k *KafkaBroker) Pid() int { return k.cmd.Process.Pid }

// Stop ends the broker as StopProcess does and waits for it.
func (k *KafkaBroker) Stop() { StopProcess(k.cmd, k.done) }

// kafkaJavaArgs is the java command line running main class with args on
// classpath.
func kafkaJavaArgs(classpath string, args ...string) []string {
	return append(append(slices.Clone(kafkaJVMOptions), "-cp", classpath), args...)
}

// FreePorts returns n loopback TCP ports that were free a moment ago, for
// another process to listen on. They are below the kernel's ephemeral port
// range, from which it takes the ports of listeners on port 0 and of
// outbound connections: the end-to-end tests run in parallel, and another
// test could take a port from that range before the process binds it.
func FreePorts(n int) ([]int, error) {
	const lowest = 10000
	below := ephemeralPortsFrom()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if below > lowest && tries < 1000 {
			addr = fmt.Sprintf("127.0.0.1:%d", lowest+mathrand.IntN(below-lowest))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				return nil, err
			}
			continue // taken
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralPortsFrom is the first port of Linux's ephemeral port range,
// 32768 where it cannot be read (the Linux default; others start higher).
func ephemeralPortsFrom() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var from, to int
	if _, err := fmt.Sscan(string(b), &from, &to); err != nil {
		return 32768
	}
	return from
}

// BrokersListed is how many brokers the Metadata answer of the Kafka
// listener at addr lists, 0 if it does not answer. The client knows only
// addr, so that is the listener asked.
func BrokersListed(ctx context.Context, addr string) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
	if err != nil {
		return 0
	}
	return len(brokers)
}

// StopProcess interrupts cmd, kills it if it is still running 20 s later,
// and waits until done reports its end (passing the report on, so that
// stopping twice does not block).
func StopProcess(cmd *exec.Cmd, done chan error) {
	select {
	case err := <-done:
		done <- err
		return
	default:
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		done <- err
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		done <- <-done
	}
}

// WaitUntil polls ready every 200 ms until it holds, the process reports
// its end on done, or a minute passes; logPath is the process's output,
// quoted in errors.
func WaitUntil(ctx context.Context, ready func(context.Context) bool, done chan error, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("exited while starting: %v\n%s", err, outputTail(logPath))
		default:
		}
		if ready(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("did not answer in time: %w\n%s", ctx.Err(), outputTail(logPath))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// outputTail is the end of a child process's output, for errors.
func outputTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}
