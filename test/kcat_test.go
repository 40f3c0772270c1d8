package test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kcatPath finds kcat (or its old name, kafkacat); .ci/run installs it.
func kcatPath(t *testing.T) string {
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("kcat is not installed (apt-get install kcat)")
	return ""
}

func runKcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// TestKcat lists metadata, produces keyed records and consumes them back
// with kcat (librdkafka).
func TestKcat(t *testing.T) {
	kcatPath(t)
	c := startCluster(t, nil)
	createTopic(t, c, "kcat", 2, nil)

	meta := runKcat(t, "", "-b", c.Addr, "-L")
	for _, want := range []string{"1 brokers:", "broker 0 at " + c.Addr, `topic "kcat" with 2 partitions`} {
		if !strings.Contains(meta, want) {
			t.Errorf("kcat -L output lacks %q:\n%s", want, meta)
		}
	}

	runKcat(t, "k1:v1\nk2:v2\nk3:v3\n", "-b", c.Addr, "-P", "-t", "kcat", "-p", "1", "-K:")
	got := runKcat(t, "", "-b", c.Addr, "-C", "-t", "kcat", "-p", "1", "-o", "beginning", "-e", "-f", `%k=%s@%o\n`)
	if want := "k1=v1@0\nk2=v2@1\nk3=v3@2\n"; got != want {
		t.Fatalf("kcat consumed %q, want %q", got, want)
	}
}
