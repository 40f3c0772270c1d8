package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/disgw/disgw/groupcoord"
)

// fakePart is a committed partition whose high watermark is either known
// or read from DIS on demand.
type fakePart struct {
	tenantID, topic string
	partition       int32
	known, next     int64
}

func (p fakePart) TenantID() string                    { return p.tenantID }
func (p fakePart) AccessKey() string                   { return "" }
func (p fakePart) Topic() string                       { return p.topic }
func (p fakePart) Partition() int32                    { return p.partition }
func (p fakePart) KnownNext() int64                    { return p.known }
func (p fakePart) Next(context.Context) (int64, error) { return p.next, nil }

// fakeState is a served partition with fixed offsets and traffic.
type fakeState struct{ next, earliest int64 }

func (s fakeState) KnownNext() int64     { return s.next }
func (s fakeState) KnownEarliest() int64 { return s.earliest }
func (s fakeState) Rates(time.Time) (float64, float64, float64) {
	return 500, 1 << 19, 0
}

// The scrape-time series come from what State gives: offsets and quota
// shares of the served partitions, and each committed partition's lag,
// its high watermark recovered when unknown and only for owned partitions
// of coordinated groups.
func TestCollectorReadsState(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(Config{Registry: reg, Labels: LabelsPartition, MaxTopics: 10, MaxGroups: 10, MaxTenants: 10}, State{
		Ctx:      context.Background(),
		Inflight: func() int64 { return 0 },
		Partitions: func(each func(ServedPartition)) {
			each(ServedPartition{Topic: "orders", Partition: 0, State: fakeState{next: 10, earliest: 2}})
		},
		Groups:        func(func(string, string, *groupcoord.Coordinator)) {},
		Coordinates:   func(group string) bool { return group != "elsewhere" },
		OwnsPartition: func(topic string, _ int32) bool { return topic != "foreign" },
	})
	m.Committed("g", fakePart{topic: "orders", partition: 0, known: 10}, 4)
	m.Committed("g", fakePart{topic: "orders", partition: 1, known: -1, next: 7}, 5)
	m.Committed("g", fakePart{topic: "foreign", partition: 0, known: -1, next: 7}, 5)
	m.Committed("elsewhere", fakePart{topic: "orders", partition: 0, known: 10}, 1)
	for _, tc := range []struct {
		name   string
		labels prometheus.Labels
		want   float64
	}{
		{"disgw_partition_high_watermark", prometheus.Labels{"tenant": "", "topic": "orders", "partition": "0"}, 10},
		{"disgw_partition_log_start_offset", prometheus.Labels{"tenant": "", "topic": "orders", "partition": "0"}, 2},
		{"disgw_dis_partition_quota_used_ratio", prometheus.Labels{"tenant": "", "topic": "orders", "partition": "0", "quota": "records_in"}, 0.5},
		{"disgw_dis_partition_quota_used_ratio", prometheus.Labels{"tenant": "", "topic": "orders", "partition": "0", "quota": "bytes_in"}, 0.5},
		{"disgw_group_lag", prometheus.Labels{"tenant": "", "group": "g", "topic": "orders", "partition": "0"}, 6},
		{"disgw_group_lag", prometheus.Labels{"tenant": "", "group": "g", "topic": "orders", "partition": "1"}, 2},
		{"disgw_group_lag", prometheus.Labels{"tenant": "", "group": "g", "topic": "foreign", "partition": "0"}, 0},
		{"disgw_group_committed_offset", prometheus.Labels{"tenant": "", "group": "g", "topic": "foreign", "partition": "0"}, 5},
	} {
		got, err := gathered(reg, tc.name, tc.labels)
		if err != nil || got != tc.want {
			t.Errorf("%s%v = %v (%v), want %v", tc.name, tc.labels, got, err, tc.want)
		}
	}
	if _, err := gathered(reg, "disgw_group_lag", prometheus.Labels{"tenant": "", "group": "elsewhere", "topic": "orders", "partition": "0"}); err == nil {
		t.Error("a group another gateway coordinates has a lag series")
	}
}

// gathered is the value of the series of name with exactly these labels.
func gathered(reg *prometheus.Registry, name string, labels prometheus.Labels) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			if len(s.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range s.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue series
				}
			}
			return s.GetGauge().GetValue(), nil
		}
	}
	return 0, errors.New("no such series")
}
