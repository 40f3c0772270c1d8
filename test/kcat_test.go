package test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// findKcat finds kcat (or its old name, kafkacat); .ci/run installs it.
func findKcat() string {
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func hasKcat() bool { return findKcat() != "" }

// kcatPath skips the test when kcat is missing.
func kcatPath(t *testing.T) string {
	p := findKcat()
	if p == "" {
		t.Skip("kcat is not installed (apt-get install kcat)")
	}
	return p
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
	t.Parallel()
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

// TestKcatGroup consumes with a kcat balanced consumer (-G), then checks the
// group committed its position: a second run finds nothing new.
func TestKcatGroup(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	c := startCluster(t, nil)
	createTopic(t, c, "kcat-group", 2, nil)
	produceValues(t, c, "kcat-group", 0, 20)
	args := []string{"-b", c.Addr, "-G", "kcat-grp", "-o", "beginning", "-e", "-f", `%s\n`,
		"-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100", "kcat-group"}
	out := runKcat(t, "", args...)
	if n := strings.Count(out, "\n"); n != 20 {
		t.Fatalf("kcat -G consumed %d records, want 20:\n%s", n, out)
	}
	adm := kadm.NewClient(newClient(t, c))
	offsets, err := adm.FetchOffsets(testContext(t, 10*time.Second), "kcat-grp")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 20 {
		t.Fatalf("kcat's group committed offsets adding up to %d, want 20", total)
	}
}
