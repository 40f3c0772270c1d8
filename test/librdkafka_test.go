package test

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLibrdkafkaTransactions runs test/librdkafka/transactions.py:
// librdkafka's transactional producer (through Python's confluent-kafka,
// transaction version 1) commits and aborts, and its read_committed
// consumer reads exactly the committed records. It is skipped where
// python3 cannot import confluent_kafka; .ci/run installs it.
func TestLibrdkafkaTransactions(t *testing.T) {
	t.Parallel()
	if err := exec.Command("python3", "-c", "import confluent_kafka").Run(); err != nil {
		t.Skip("python3 with confluent-kafka is not installed: pip install confluent-kafka")
	}
	c := startCluster(t, nil)
	ctx := testContext(t, 2*time.Minute)
	out, err := exec.CommandContext(ctx, "python3", "librdkafka/transactions.py", c.Addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "librdkafka transactions ok") {
		t.Fatalf("librdkafka transactions against disgw: %v\n%s", err, out)
	}
}
