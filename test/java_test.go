package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJavaClient runs test/java (AdminClient, the default idempotent
// producer with zstd, and a consumer group member) against the gateway with
// the unmodified Apache Kafka Java client. It needs Java 17 and Maven, which
// fetches kafka-clients; it is skipped where either is missing.
func TestJavaClient(t *testing.T) {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	ctx := testContext(t, 5*time.Minute)
	dir, err := filepath.Abs("java")
	if err != nil {
		t.Fatal(err)
	}
	cpFile := filepath.Join(t.TempDir(), "classpath.txt")
	build := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", filepath.Join(dir, "pom.xml"),
		"compile", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building test/java: %v\n%s", err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, nil)
	run := exec.CommandContext(ctx, "java", "-cp", filepath.Join(dir, "target", "classes")+string(os.PathListSeparator)+strings.TrimSpace(string(cp)),
		"disgw.Compat", c.Addr)
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "java compat ok") {
		t.Fatalf("Java client against disgw: %v\n%s", err, out)
	}
}
