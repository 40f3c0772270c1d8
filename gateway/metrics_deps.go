package gateway

import (
	"context"

	"github.com/disgw/disgw/gateway/metrics"
	"github.com/disgw/disgw/gateway/wire"
	"github.com/disgw/disgw/groupcoord"
)

// Label granularity of the per-topic series (Config.MetricsLabels,
// --metrics-topic-labels).
const (
	// MetricsLabelsTopic labels per-topic series by topic, as Kafka
	// exporters do; the default.
	MetricsLabelsTopic = metrics.LabelsTopic
	// MetricsLabelsPartition labels them by topic and partition.
	MetricsLabelsPartition = metrics.LabelsPartition
	// MetricsLabelsNone folds every topic into one series.
	MetricsLabelsNone = metrics.LabelsNone
)

// newMetrics makes the series of gw and registers them with its
// Config.Registry; what they read of gw at scrape time goes through
// metrics.State.
func newMetrics(gw *Gateway) *metrics.Metrics {
	cfg := &gw.cfg
	return metrics.New(metrics.Config{
		Registry:         cfg.Registry,
		Log:              gw.log,
		Labels:           cfg.MetricsLabels,
		MaxTopics:        cfg.MetricsMaxTopics,
		MaxGroups:        cfg.MetricsMaxGroups,
		MaxTenants:       cfg.MetricsMaxTenants,
		MaxInflightBytes: cfg.MaxInflightBytes,
		MaxQueueBytes:    cfg.MaxQueueBytes,
		ReadCacheBytes:   cfg.ReadCacheBytes,
		Mechanisms:       []string{wire.MechPlain, wire.MechSCRAMSHA256, wire.MechSCRAMSHA512},
	}, metrics.State{
		Ctx:      gw.ctx,
		Inflight: gw.inflight.Load,
		Partitions: func(each func(metrics.ServedPartition)) {
			gw.forEachTenant(func(tn *tenant) {
				for _, ps := range tn.parts.All() {
					k := ps.Key()
					each(metrics.ServedPartition{AccessKey: tn.accessKey, Topic: k.Topic, Partition: k.Partition,
						StreamType: tn.catalog.StreamType(k.Topic), State: ps})
				}
			})
		},
		Groups: func(each func(tenantID, accessKey string, coord *groupcoord.Coordinator)) {
			gw.groups.WithEach(each)
		},
		Coordinates:   gw.coordinates,
		OwnsPartition: gw.ownsPartition,
	})
}

// A partitionKey is what the lag series know a committed partition by.
var _ metrics.Part = partitionKey{}

// TenantID is the id of the key's tenant.
func (k partitionKey) TenantID() string { return k.tenant.id }

// AccessKey is the access key of the key's tenant.
func (k partitionKey) AccessKey() string { return k.tenant.accessKey }

// Topic is the key's topic.
func (k partitionKey) Topic() string { return k.topic }

// Partition is the key's partition.
func (k partitionKey) Partition() int32 { return k.partition }

// KnownNext is the partition's high watermark as its tenant's partition
// log holds it, -1 when it holds none.
func (k partitionKey) KnownNext() int64 {
	if ps, ok := k.tenant.parts.Peek(k.log()); ok {
		return ps.KnownNext()
	}
	return -1
}

// Next is the partition's high watermark, recovered from DIS when not
// known.
func (k partitionKey) Next(ctx context.Context) (int64, error) {
	return k.tenant.parts.Partition(k.log()).Next(ctx)
}

// countFetched counts what a Fetch response returns, per partition.
func countFetched(m *metrics.Metrics, accessKey string, parts []*fetchPart) {
	for _, p := range parts {
		n := len(p.Records)
		for i := range p.Batches {
			n += int(p.Batches[i].Records())
		}
		m.Fetched(accessKey, p.topic.Name, p.resp.Partition, n, len(p.resp.RecordBatches))
	}
}
