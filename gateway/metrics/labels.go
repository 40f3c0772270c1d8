package metrics

import (
	"strconv"
	"sync"
)

// Label granularity of the per-topic series (Config.Labels,
// --metrics-topic-labels); the gateway's MetricsLabels constants are these.
const (
	// LabelsTopic labels per-topic series by topic, as Kafka exporters
	// do; the default.
	LabelsTopic = "topic"
	// LabelsPartition labels them by topic and partition.
	LabelsPartition = "partition"
	// LabelsNone folds every topic into one series.
	LabelsNone = "none"
)

// otherLabel is the label value of the topics, groups and tenants past the
// cap.
const otherLabel = "_other"

// labelCap hands out label values for an unbounded set of names (topics,
// groups) of tenants: each (tenant, name) pair keeps the values it first
// got; once max pairs have them, the rest share otherLabel, so a scrape
// stays bounded whatever clients and tenants do. It is the one place the
// --metrics-max-topics, --metrics-max-groups and --metrics-max-tenants caps
// are enforced.
type labelCap struct {
	max  int
	mu   sync.Mutex
	seen map[labelPair]struct{}
}

// labelPair is a name of one tenant's, the tenant by its access key ("" for
// the gateway's own credentials).
type labelPair struct{ tenant, name string }

func newLabelCap(limit int) *labelCap {
	return &labelCap{max: limit, seen: make(map[labelPair]struct{})}
}

// value returns the tenant and name label values of a tenant's name: the
// access key and the name while under the cap. Past it the name is
// otherLabel, and so is a passthrough tenant's access key, while the
// gateway's own tenant stays "": what is past the cap costs at most two
// series, and a gateway without passthrough tenants never gets a tenant
// label.
func (c *labelCap) value(tenant, name string) (string, string) {
	p := labelPair{tenant, name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[p]; ok {
		return tenant, name
	}
	if len(c.seen) >= c.max {
		if tenant != "" {
			tenant = otherLabel
		}
		return tenant, otherLabel
	}
	c.seen[p] = struct{}{}
	return tenant, name
}

// TopicLabels turns a tenant's topic and partition into the label values
// of the per-topic series, as Config.Labels says: every per-topic series
// goes through it, so the cap and the granularity hold for all of them.
type TopicLabels struct {
	mode   string
	topics *labelCap
}

// of returns the tenant, topic and partition label values of a partition
// of the tenant with this access key; the partition value is empty
// (which PromQL takes for no label) unless partition labels are on, and
// all are empty with labels off.
func (l *TopicLabels) of(tenant, topic string, partition int32) (string, string, string) {
	switch l.mode {
	case LabelsNone:
		return "", "", ""
	case LabelsPartition:
		tv, v := l.topics.value(tenant, topic)
		if v == otherLabel {
			return tv, v, ""
		}
		return tv, v, strconv.Itoa(int(partition))
	default:
		tv, v := l.topics.value(tenant, topic)
		return tv, v, ""
	}
}

// Topic returns the tenant and topic label values of series that have no
// partition, for the tenant with this access key.
func (l *TopicLabels) Topic(tenant, topic string) (string, string) {
	if l.mode == LabelsNone {
		return "", ""
	}
	return l.topics.value(tenant, topic)
}
