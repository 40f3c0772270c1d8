package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaVersion is the Apache Kafka broker test/kafka/pom.xml resolves.
const kafkaVersion = "4.4.0"

// kafkaJVMOptions are the JVM options Kafka's own start script uses, with
// its default 1 GiB heap.
var kafkaJVMOptions = []string{
	"-Xms1G", "-Xmx1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
	"-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
}

// kafkaBroker is an Apache Kafka broker running in a child JVM: one node
// acting as both broker and KRaft controller, on loopback ports, with its
// logs in a temporary directory.
type kafkaBroker struct {
	addr string
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

// kafkaFlushProperties is the server.properties line that makes Kafka's
// durability comparable to disgw's fsync=always, or none for Kafka's
// default (the OS flushes the page cache when it likes; replication, not
// fsync, is what makes Kafka durable).
func kafkaFlushProperties(flush string) string {
	if flush == "always" {
		return "log.flush.interval.messages=1\n"
	}
	return ""
}

// kafkaDescription says how the broker was configured, for the settings
// line, so a reader sees what durability the ratios compare.
func kafkaDescription(flush string) string {
	if flush == "always" {
		return "kafka=" + kafkaVersion + " kafka-flush=always(log.flush.interval.messages=1:fsync-per-append)"
	}
	return "kafka=" + kafkaVersion + " kafka-flush=default(no-fsync-per-write:page-cache)"
}

// kafkaTools reports why Kafka cannot be started here, or nil.
func kafkaTools() error {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed", tool)
		}
	}
	return nil
}

// startKafka resolves the broker's classpath with Maven, formats a KRaft
// storage directory under dir and starts the broker, returning once it
// answers Kafka requests.
func startKafka(ctx context.Context, pomDir, dir, flush string) (*kafkaBroker, error) {
	cpFile := filepath.Join(dir, "classpath.txt")
	build := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", filepath.Join(pomDir, "pom.xml"),
		"dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("resolving the Kafka broker with Maven: %w\n%s", err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, err
	}
	classpath := strings.TrimSpace(string(cp))

	ports, err := freePorts(2)
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
%[4]s`, addr, ports[1], filepath.Join(dir, "data"), kafkaFlushProperties(flush))
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		return nil, err
	}

	var id [16]byte
	_, _ = rand.Read(id[:])
	clusterID := base64.RawURLEncoding.EncodeToString(id[:])
	format := exec.CommandContext(ctx, "java", javaArgs(classpath, "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", props)...)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("formatting Kafka's storage: %w\n%s", err, out)
	}

	logFile, err := os.Create(filepath.Join(dir, "kafka.log"))
	if err != nil {
		return nil, err
	}
	k := &kafkaBroker{addr: addr, log: logFile, done: make(chan error, 1)}
	// Not CommandContext: the broker must outlive a cancelled ctx long
	// enough for stop to end it and collect it.
	k.cmd = exec.Command("java", javaArgs(classpath, "kafka.Kafka", props)...)
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	if err := k.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { k.done <- k.cmd.Wait() }()
	if err := waitAnswers(ctx, addr, k.done, logFile.Name()); err != nil {
		k.stop()
		return nil, fmt.Errorf("the Kafka broker: %w", err)
	}
	return k, nil
}

// answers reports whether the Kafka listener at addr lists a broker.
func answers(ctx context.Context, addr string) bool { return brokersListed(ctx, addr) > 0 }

// brokersListed is how many brokers the Metadata answer of the Kafka
// listener at addr lists, 0 if it does not answer. The client knows only
// addr, so that is the listener asked.
func brokersListed(ctx context.Context, addr string) int {
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

// pid is the broker JVM's process id.
func (k *kafkaBroker) pid() int { return k.cmd.Process.Pid }

// stop ends the broker and waits for it.
func (k *kafkaBroker) stop() {
	defer k.log.Close()
	stopProcess(k.cmd, k.done)
}

// javaArgs is the java command line running main class with args on
// classpath.
func javaArgs(classpath string, args ...string) []string {
	return append(append(slices.Clone(kafkaJVMOptions), "-cp", classpath), args...)
}
