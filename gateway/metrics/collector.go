package metrics

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/disgw/disgw/groupcoord"
)

// groupMetrics is what the series of groups need beyond the coordinator:
// the offsets committed through this gateway, and each classic group's
// generation, both per tenant. Entries go when the tenant's coordinator
// forgets their group.
type groupMetrics struct {
	mu        sync.Mutex
	committed map[groupOffsetKey]int64
	gens      map[groupKey]int32
}

// groupOffsetKey is a group's committed partition; the group is the
// partition's tenant's.
type groupOffsetKey struct {
	group string
	part  Part
}

// groupKey names a group of one tenant's, by tenant id.
type groupKey struct {
	tenantID, group string
}

// Part is a partition a group committed an offset of, as the gateway names
// it: a map key of the committed offsets, so its dynamic type must be
// comparable, and distinct for a topic deleted and created again (the
// gateway's key holds the stream id) so that lag is never computed against
// a predecessor's offsets.
type Part interface {
	// TenantID and AccessKey are the tenant's: the id matches the
	// coordinator that forgets a group, the access key is the label.
	TenantID() string
	AccessKey() string
	// Topic and Partition name it within the tenant, for the labels and
	// the ownership check before a recovery.
	Topic() string
	Partition() int32
	// KnownNext is the high watermark the gateway knows, -1 when it knows
	// none: reading it costs no DIS call.
	KnownNext() int64
	// Next is the high watermark, read from DIS when not known.
	Next(ctx context.Context) (int64, error)
}

// ServedPartition is a partition the gateway holds state of, as the
// partition series read it.
type ServedPartition struct {
	// AccessKey is the tenant's, Topic and Partition name the partition
	// within it: the labels.
	AccessKey string
	Topic     string
	Partition int32
	// StreamType is the topic's DIS stream type, "" when the catalog does
	// not hold it: the quota share is computed against its limits, without
	// a DIS call.
	StreamType string
	// State is the partition's offsets and traffic.
	State PartitionState
}

// PartitionState is what the partition series read of a partition; the
// partition log's partitions have it.
type PartitionState interface {
	// KnownNext and KnownEarliest are the offsets as last learned, -1 when
	// not known yet.
	KnownNext() int64
	KnownEarliest() int64
	// Rates is the partition's DIS traffic per second over the last
	// seconds before now: records and bytes written, bytes read, which
	// DIS's per-partition limits apply to.
	Rates(now time.Time) (recordsIn, bytesIn, bytesOut float64)
}

// Committed records an offset a group committed through this gateway, the
// lag is computed against.
func (m *Metrics) Committed(group string, k Part, offset int64) {
	m.groups.mu.Lock()
	m.groups.committed[groupOffsetKey{group, k}] = offset
	m.groups.mu.Unlock()
}

// GroupsReady takes what the coordinator of the tenant with this id and
// access key reported in a Ready: rebalances are counted and timed,
// forgotten groups' entries dropped.
func (m *Metrics) GroupsReady(id, accessKey string, rd *groupcoord.Ready) {
	if len(rd.Rebalances) == 0 && len(rd.Removed) == 0 {
		return
	}
	m.groups.mu.Lock()
	defer m.groups.mu.Unlock()
	for _, rb := range rd.Rebalances {
		m.rebalances.WithLabelValues(m.groupLabels.value(accessKey, rb.Group)).Inc()
		if rb.Took > 0 {
			m.rebalanceSeconds.Observe(rb.Took.Seconds())
		}
		m.groups.gens[groupKey{id, rb.Group}] = rb.Generation
	}
	for _, rm := range rd.Removed {
		delete(m.groups.gens, groupKey{id, rm.Group})
		for k := range m.groups.committed {
			if k.group == rm.Group && k.part.TenantID() == id {
				delete(m.groups.committed, k)
			}
		}
	}
}

// Scrape-time bounds of the lag series: a committed partition whose high
// watermark this gateway does not know yet is recovered from DIS (a few
// reads of the partition's tail, cached in its state from then on) for at
// most lagRecoveriesPerScrape partitions per scrape, within
// lagRecoveryTimeout; the others get their lag at a later scrape.
const (
	lagRecoveriesPerScrape = 32
	lagRecoveryTimeout     = 2 * time.Second
)

var (
	descHighWatermark = prometheus.NewDesc("disgw_partition_high_watermark",
		"Next offset of the partitions this gateway serves (Kafka's log end offset); summed over a topic without partition labels.",
		[]string{"tenant", "topic", "partition"}, nil)
	descLogStart = prometheus.NewDesc("disgw_partition_log_start_offset",
		"First readable offset of the partitions this gateway serves, as last learned; summed over a topic without partition labels.",
		[]string{"tenant", "topic", "partition"}, nil)
	descQuotaUsed = prometheus.NewDesc("disgw_dis_partition_quota_used_ratio",
		"Share of a DIS partition's per-second limit its traffic through this gateway used over the last 10 s (records_in, bytes_in, bytes_out against its stream type's limits); the busiest partition's without partition labels.",
		[]string{"tenant", "topic", "partition", "quota"}, nil)
	descGroupState = prometheus.NewDesc("disgw_group_state",
		"Groups this gateway coordinates, by state (1 for the group's current state).",
		[]string{"tenant", "group", "state"}, nil)
	descGroupMembers = prometheus.NewDesc("disgw_group_members",
		"Members of the groups this gateway coordinates.", []string{"tenant", "group"}, nil)
	descGroupGeneration = prometheus.NewDesc("disgw_group_generation",
		"Generation (classic) or group epoch (consumer protocol, share groups) of the groups this gateway coordinates.", []string{"tenant", "group"}, nil)
	descGroupOffset = prometheus.NewDesc("disgw_group_committed_offset",
		"Offset last committed through this gateway by the groups it coordinates; summed over a topic without partition labels.",
		[]string{"tenant", "group", "topic", "partition"}, nil)
	descGroupLag = prometheus.NewDesc("disgw_group_lag",
		"Records between a group's committed offset and the partition's high watermark; summed over a topic without partition labels.",
		[]string{"tenant", "group", "topic", "partition"}, nil)
)

// stateCollector reads, at scrape time, what the gateway holds: partition
// offsets and DIS quota use, and the groups it coordinates with their lag.
type stateCollector struct{ m *Metrics }

// Describe sends the descriptors of every series Collect makes.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHighWatermark, descLogStart, descQuotaUsed,
		descGroupState, descGroupMembers, descGroupGeneration, descGroupOffset, descGroupLag} {
		ch <- d
	}
}

// Collect makes the series.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.collectPartitions(ch)
	c.collectGroups(ch)
	c.collectLag(ch)
}

// partAgg sums (offsets) or takes the maximum (quota shares) of the
// partitions that share labels.
type partAgg struct {
	hwm, logStart float64
	offsets       bool
	quota         [3]float64
}

var quotaNames = [3]string{"records_in", "bytes_in", "bytes_out"}

func (c *stateCollector) collectPartitions(ch chan<- prometheus.Metric) {
	m := c.m
	now := time.Now()
	aggs := make(map[[3]string]*partAgg)
	m.state.Partitions(func(sp ServedPartition) {
		ps := sp.State
		tenant, topic, part := m.Labels.of(sp.AccessKey, sp.Topic, sp.Partition)
		l := [3]string{tenant, topic, part}
		a := aggs[l]
		if a == nil {
			a = &partAgg{}
			aggs[l] = a
		}
		if next := ps.KnownNext(); next >= 0 {
			a.hwm += float64(next)
			a.logStart += float64(max(ps.KnownEarliest(), 0))
			a.offsets = true
		}
		limRecs, limIn, limOut := quotaLimits(sp.StreamType)
		recs, in, out := ps.Rates(now)
		for i, share := range [3]float64{recs / limRecs, in / limIn, out / limOut} {
			a.quota[i] = max(a.quota[i], share)
		}
	})
	for l, a := range aggs {
		if a.offsets {
			ch <- prometheus.MustNewConstMetric(descHighWatermark, prometheus.GaugeValue, a.hwm, l[0], l[1], l[2])
			ch <- prometheus.MustNewConstMetric(descLogStart, prometheus.GaugeValue, a.logStart, l[0], l[1], l[2])
		}
		for i, q := range a.quota {
			ch <- prometheus.MustNewConstMetric(descQuotaUsed, prometheus.GaugeValue, q, l[0], l[1], l[2], quotaNames[i])
		}
	}
}

// groupAgg folds the groups that share a label (past the cap).
type groupAgg struct {
	states     map[string]float64
	members    float64
	generation int32
}

func (c *stateCollector) collectGroups(ch chan<- prometheus.Metric) {
	m := c.m
	aggs := make(map[[2]string]*groupAgg)
	m.groups.mu.Lock()
	gens := maps.Clone(m.groups.gens)
	m.groups.mu.Unlock()
	m.state.Groups(func(id, accessKey string, coord *groupcoord.Coordinator) {
		for _, lg := range coord.List() {
			if !m.state.Coordinates(lg.Group) {
				continue
			}
			tenant, group := m.groupLabels.value(accessKey, lg.Group)
			l := [2]string{tenant, group}
			a := aggs[l]
			if a == nil {
				a = &groupAgg{states: make(map[string]float64)}
				aggs[l] = a
			}
			a.states[lg.GroupState]++
			gen := gens[groupKey{id, lg.Group}]
			switch lg.GroupType {
			case "consumer":
				d := coord.DescribeConsumer(lg.Group)
				a.members += float64(len(d.Members))
				gen = d.Epoch
			case "share":
				d := coord.DescribeShare(lg.Group)
				a.members += float64(len(d.Members))
				gen = d.GroupEpoch
			default:
				if d, ok := coord.Describe(lg.Group); ok {
					a.members += float64(len(d.Members))
				}
			}
			a.generation = max(a.generation, gen)
		}
	})
	for l, a := range aggs {
		for state, n := range a.states {
			ch <- prometheus.MustNewConstMetric(descGroupState, prometheus.GaugeValue, n, l[0], l[1], state)
		}
		ch <- prometheus.MustNewConstMetric(descGroupMembers, prometheus.GaugeValue, a.members, l[0], l[1])
		ch <- prometheus.MustNewConstMetric(descGroupGeneration, prometheus.GaugeValue, float64(a.generation), l[0], l[1])
	}
}

// collectLag computes each committed partition's lag as Burrow and
// kafka-lag-exporter do: high watermark minus committed offset, never
// below zero. Only groups this gateway coordinates are reported (docs/design.md
// §6): each group's lag comes from one gateway.
func (c *stateCollector) collectLag(ch chan<- prometheus.Metric) {
	m := c.m
	m.groups.mu.Lock()
	offsets := make(map[groupOffsetKey]int64, len(m.groups.committed))
	for k, off := range m.groups.committed {
		offsets[k] = off
	}
	m.groups.mu.Unlock()
	ctx, cancel := context.WithTimeout(m.state.Ctx, lagRecoveryTimeout)
	defer cancel()
	recoveries := 0
	type lagAgg struct{ offset, lag float64 }
	aggs := make(map[[4]string]*lagAgg)
	for k, off := range offsets {
		if !m.state.Coordinates(k.group) {
			continue
		}
		ak := k.part.AccessKey()
		tenant, group := m.groupLabels.value(ak, k.group)
		_, topic, part := m.Labels.of(ak, k.part.Topic(), k.part.Partition())
		l := [4]string{tenant, group, topic, part}
		a := aggs[l]
		if a == nil {
			a = &lagAgg{}
			aggs[l] = a
		}
		a.offset += float64(off)
		hwm := k.part.KnownNext()
		if hwm < 0 && recoveries < lagRecoveriesPerScrape && ctx.Err() == nil && m.state.OwnsPartition(k.part.Topic(), k.part.Partition()) {
			recoveries++
			if next, err := k.part.Next(ctx); err == nil {
				hwm = next
			}
		}
		if hwm >= 0 {
			a.lag += float64(max(hwm-off, 0))
		}
	}
	for l, a := range aggs {
		ch <- prometheus.MustNewConstMetric(descGroupOffset, prometheus.GaugeValue, a.offset, l[0], l[1], l[2], l[3])
		ch <- prometheus.MustNewConstMetric(descGroupLag, prometheus.GaugeValue, a.lag, l[0], l[1], l[2], l[3])
	}
}
