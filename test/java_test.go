package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disgw/disgw/gateway"
)

// TestJavaClient runs test/java (AdminClient, the default idempotent
// producer with zstd, and a consumer group member) against the gateway with
// the unmodified Apache Kafka Java client. It needs Java 17 and Maven, which
// fetches kafka-clients; it is skipped where either is missing.
func TestJavaClient(t *testing.T) {
	t.Parallel()
	runJava(t, nil, "disgw.Compat", "java compat ok")
}

// TestJavaConsumerProtocol runs test/java's ConsumerProtocol: Java members
// with group.protocol=consumer (KIP-848) take over a group from a classic
// consumer at its commits, two share a topic, a third joins and one
// leaves, and every record is consumed once.
func TestJavaConsumerProtocol(t *testing.T) {
	t.Parallel()
	runJava(t, fastConsumerGroups, "disgw.ConsumerProtocol", "java consumer protocol ok")
}

// TestJavaShareConsumers runs test/java's ShareConsumers: three
// KafkaShareConsumers of one share group (KIP-932) acknowledge explicitly,
// accepting most records, releasing some, which come back with delivery
// count 2, and rejecting some, which never come back; every record not
// rejected is accepted exactly once.
func TestJavaShareConsumers(t *testing.T) {
	t.Parallel()
	runJava(t, nil, "disgw.ShareConsumers", "java share consumers ok")
}

// runJava builds test/java and runs class against a fresh gateway
// (configured by tweak), expecting ok in its output; it skips without Java
// or Maven.
func runJava(t *testing.T, tweak func(*gateway.Config), class, ok string) {
	t.Helper()
	skipWithoutJava(t)
	ctx := testContext(t, 5*time.Minute)
	dir, err := filepath.Abs("java")
	if err != nil {
		t.Fatal(err)
	}
	cp := mavenClasspath(ctx, t, dir, "compile")
	c := startCluster(t, tweak)
	run := exec.CommandContext(ctx, "java", "-cp", filepath.Join(dir, "target", "classes")+string(os.PathListSeparator)+cp,
		class, c.Addr)
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), ok) {
		t.Fatalf("Java client (%s) against disgw: %v\n%s", class, err, out)
	}
}

// TestJavaTransactions runs test/java's Transactions: the Java client's
// transactional producer commits, aborts and commits with a group's
// offsets; read_committed reads only what was committed; a second
// producer of the id fences the first.
func TestJavaTransactions(t *testing.T) {
	t.Parallel()
	runJava(t, nil, "disgw.Transactions", "java transactions ok")
}
