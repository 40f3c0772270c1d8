package gateway

import (
	"fmt"
	"testing"
)

// TestLabelCapFoldsPastTheCap checks that names past the cap share
// "_other", that a name keeps its own label once it has one, and what each
// labelling mode gives.
func TestLabelCapFoldsPastTheCap(t *testing.T) {
	c := newLabelCap(3)
	for i := range 3 {
		if got := c.value(fmt.Sprint("t", i)); got != fmt.Sprint("t", i) {
			t.Fatalf("name %d under the cap labelled %q", i, got)
		}
	}
	for i := 3; i < 10000; i++ {
		if got := c.value(fmt.Sprint("t", i)); got != otherLabel {
			t.Fatalf("name %d past the cap labelled %q, want %q", i, got, otherLabel)
		}
	}
	if got := c.value("t1"); got != "t1" {
		t.Fatalf("a name with its own label got %q later", got)
	}
	if len(c.seen) != 3 {
		t.Fatalf("the cap holds %d names, want 3", len(c.seen))
	}

	for _, tc := range []struct {
		mode, topic, part string
	}{
		{MetricsLabelsTopic, "a", ""},
		{MetricsLabelsPartition, "a", "7"},
		{MetricsLabelsNone, "", ""},
	} {
		l := topicLabels{mode: tc.mode, topics: newLabelCap(1)}
		if topic, part := l.of("a", 7); topic != tc.topic || part != tc.part {
			t.Errorf("%s: labels (%q, %q), want (%q, %q)", tc.mode, topic, part, tc.topic, tc.part)
		}
		if topic, part := l.of("b", 7); tc.mode != MetricsLabelsNone && (topic != otherLabel || part != "") {
			t.Errorf("%s: a topic past the cap labelled (%q, %q), want (%q, \"\")", tc.mode, topic, part, otherLabel)
		}
	}
}
