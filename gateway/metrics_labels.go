package gateway

import (
	"strconv"
	"sync"
)

// Label granularity of the per-topic series (Config.MetricsLabels,
// --metrics-topic-labels).
const (
	// MetricsLabelsTopic labels per-topic series by topic, as Kafka
	// exporters do; the default.
	MetricsLabelsTopic = "topic"
	// MetricsLabelsPartition labels them by topic and partition.
	MetricsLabelsPartition = "partition"
	// MetricsLabelsNone folds every topic into one series.
	MetricsLabelsNone = "none"
)

// otherLabel is the label value of the topics and groups past the cap.
const otherLabel = "_other"

// labelCap hands out label values for an unbounded set of names (topics,
// groups): each name keeps the value it first got; once max names have one,
// the rest share otherLabel, so a scrape stays bounded whatever clients do.
// It is the one place the --metrics-max-topics and --metrics-max-groups caps
// are enforced.
type labelCap struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

func newLabelCap(limit int) *labelCap {
	return &labelCap{max: limit, seen: make(map[string]struct{})}
}

// value is name's label value: name itself while under the cap, otherLabel
// past it.
func (c *labelCap) value(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[name]; ok {
		return name
	}
	if len(c.seen) >= c.max {
		return otherLabel
	}
	c.seen[name] = struct{}{}
	return name
}

// topicLabels turns a topic and partition into the label values of the
// per-topic series, as Config.MetricsLabels says.
type topicLabels struct {
	mode   string
	topics *labelCap
}

// of returns the topic and partition label values of a partition; the
// partition value is empty (no label in the exposition) unless partition
// labels are on, and both are empty with labels off.
func (l *topicLabels) of(topic string, partition int32) (string, string) {
	switch l.mode {
	case MetricsLabelsNone:
		return "", ""
	case MetricsLabelsPartition:
		v := l.topics.value(topic)
		if v == otherLabel {
			return v, ""
		}
		return v, strconv.Itoa(int(partition))
	default:
		return l.topics.value(topic), ""
	}
}

// topic returns the topic label value of series that have no partition.
func (l *topicLabels) topic(topic string) string {
	if l.mode == MetricsLabelsNone {
		return ""
	}
	return l.topics.value(topic)
}
