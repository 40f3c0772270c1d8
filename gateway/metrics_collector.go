package gateway

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
	part  partitionKey
}

// committed records an offset a group committed through this gateway, the
// lag is computed against.
func (m *metrics) committed(group string, k partitionKey, offset int64) {
	m.groups.mu.Lock()
	m.groups.committed[groupOffsetKey{group, k}] = offset
	m.groups.mu.Unlock()
}

// groupsReady takes what the coordinator of the tenant with this id and
// access key reported in a Ready: rebalances are counted and timed,
// forgotten groups' entries dropped.
func (m *metrics) groupsReady(id, accessKey string, rd *groupcoord.Ready) {
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
			if k.group == rm.Group && k.part.tenant.id == id {
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
		"Generation (classic) or epoch (consumer protocol) of the groups this gateway coordinates.", []string{"tenant", "group"}, nil)
	descGroupOffset = prometheus.NewDesc("disgw_group_committed_offset",
		"Offset last committed through this gateway by the groups it coordinates; summed over a topic without partition labels.",
		[]string{"tenant", "group", "topic", "partition"}, nil)
	descGroupLag = prometheus.NewDesc("disgw_group_lag",
		"Records between a group's committed offset and the partition's high watermark; summed over a topic without partition labels.",
		[]string{"tenant", "group", "topic", "partition"}, nil)
)

// stateCollector reads, at scrape time, what the gateway holds: partition
// offsets and DIS quota use, and the groups it coordinates with their lag.
type stateCollector struct{ gw *Gateway }

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
	gw, m := c.gw, c.gw.metrics
	now := time.Now()
	aggs := make(map[[3]string]*partAgg)
	gw.forEachTenant(func(tn *tenant) {
		for _, ps := range tn.parts.All() {
			k := ps.Key()
			tenant, topic, part := m.labels.of(tn.accessKey, k.Topic, k.Partition)
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
			limRecs, limIn, limOut := quotaLimits(tn.catalog.streamType(k.Topic))
			recs, in, out := ps.Rates(now)
			for i, share := range [3]float64{recs / limRecs, in / limIn, out / limOut} {
				a.quota[i] = max(a.quota[i], share)
			}
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
	gw, m := c.gw, c.gw.metrics
	aggs := make(map[[2]string]*groupAgg)
	m.groups.mu.Lock()
	gens := maps.Clone(m.groups.gens)
	m.groups.mu.Unlock()
	gw.groups.WithEach(func(id, accessKey string, coord *groupcoord.Coordinator) {
		for _, lg := range coord.List() {
			if !gw.coordinates(lg.Group) {
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
			if lg.GroupType == "consumer" {
				d := coord.DescribeConsumer(lg.Group)
				a.members += float64(len(d.Members))
				gen = d.Epoch
			} else if d, ok := coord.Describe(lg.Group); ok {
				a.members += float64(len(d.Members))
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
	gw, m := c.gw, c.gw.metrics
	m.groups.mu.Lock()
	offsets := make(map[groupOffsetKey]int64, len(m.groups.committed))
	for k, off := range m.groups.committed {
		offsets[k] = off
	}
	m.groups.mu.Unlock()
	ctx, cancel := context.WithTimeout(gw.ctx, lagRecoveryTimeout)
	defer cancel()
	recoveries := 0
	type lagAgg struct{ offset, lag float64 }
	aggs := make(map[[4]string]*lagAgg)
	for k, off := range offsets {
		if !gw.coordinates(k.group) {
			continue
		}
		ak := k.part.tenant.accessKey
		tenant, group := m.groupLabels.value(ak, k.group)
		_, topic, part := m.labels.of(ak, k.part.topic, k.part.partition)
		l := [4]string{tenant, group, topic, part}
		a := aggs[l]
		if a == nil {
			a = &lagAgg{}
			aggs[l] = a
		}
		a.offset += float64(off)
		hwm := int64(-1)
		if ps, ok := k.part.tenant.parts.Peek(k.part.log()); ok {
			hwm = ps.KnownNext()
		}
		if hwm < 0 && recoveries < lagRecoveriesPerScrape && ctx.Err() == nil && gw.ownsPartition(k.part.topic, k.part.partition) {
			recoveries++
			if next, err := gw.partitionFor(k.part).Next(ctx); err == nil {
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

// streamType is the DIS stream type of a cached topic, "" when the topic
// is not cached: what the quota share is computed against, without a DIS
// call.
func (c *catalog) streamType(topic string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.topics[topic]; t != nil {
		return t.streamType
	}
	return ""
}
