package gateway

import (
	"context"
	"errors"

	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
)

// partitionKey names one partition of one stream as one tenant sees it. The
// stream id is part of it so that a topic deleted and created again never
// meets the writers, producer state and cached records of its predecessor;
// the tenant, so that records are written with the client's own credentials
// and cached records never reach a client whose keys may not read them.
type partitionKey struct {
	tenant    *tenant
	topic     string
	stream    string
	partition int32
}

// key names partition p of t's stream as tn sees it.
func (tn *tenant) key(t *topics.Meta, p int32) partitionKey {
	return partitionKey{tenant: tn, topic: t.Name, stream: t.StreamID, partition: p}
}

// streamName is the DIS stream of the partition's topic.
func (k partitionKey) streamName() string { return topics.StreamName(k.topic) }

// log is the key in the tenant's partition log.
func (k partitionKey) log() plog.Key {
	return plog.Key{Topic: k.topic, Stream: k.streamName(), StreamID: k.stream, Partition: k.partition}
}

// partitionFor returns k's partition log (docs/design.md §4), made on first
// use.
func (gw *Gateway) partitionFor(k partitionKey) *plog.Partition {
	return k.tenant.parts.Partition(k.log())
}

// disReadBytes is the least max_fetch_bytes a GetRecords asks for: more
// than the largest record the gateway writes (data and key), since DIS
// returns nothing when the next record is larger than asked and the reader
// would stall in front of it.
func (gw *Gateway) disReadBytes() int { return max(gw.cfg.MaxRecordBytes+64<<10, 2<<20) }

// plogDeps is what tn's partition log gets of the gateway: settings, tn's
// DIS client and apps, the gateway-wide write queues and read cache, and
// hooks for panics and metrics.
func (gw *Gateway) plogDeps(tn *tenant) plog.Deps {
	cfg := &gw.cfg
	return plog.Deps{
		Config: plog.Config{
			ReadCacheBytes:           cfg.ReadCacheBytes,
			ProducerIDExpiration:     cfg.ProducerIDExpiration,
			MaxProducersPerPartition: cfg.MaxProducersPerPartition,
			PutRecordsMaxRecords:     cfg.PutRecordsMaxRecords,
			PutRecordsMaxBytes:       cfg.PutRecordsMaxBytes,
			PutRecordsKeepsOrder:     cfg.PutRecordsKeepsOrder,
			PollInterval:             cfg.PollInterval,
			MaxRecordBytes:           cfg.MaxRecordBytes,
			MaxDecompressedBytes:     cfg.MaxDecompressedBytes,
			WatermarkInterval:        cfg.WatermarkInterval,
			RequestTimeout:           cfg.RequestTimeout,
			ReadBytes:                gw.disReadBytes(),
		},
		Ctx: gw.ctx,
		Log: gw.log,
		DIS: tn.dis,
		Refresh: func(ctx context.Context, topic string, partition int32) (int64, int64, bool, error) {
			t, err := tn.catalog.Refresh(ctx, topic)
			if err != nil {
				return 0, 0, false, err
			}
			if int(partition) >= len(t.Partitions) {
				return 0, 0, false, nil
			}
			pm := t.Partitions[partition]
			return pm.Earliest, pm.Next, true, nil
		},
		RetentionMs: func(ctx context.Context, topic string) (int64, error) {
			t, err := tn.catalog.Get(ctx, topic)
			if err != nil {
				return 0, err
			}
			return t.RetentionMs, nil
		},
		Kept: func(ctx context.Context, topic string) (keep.Policy, string, bool, error) {
			k, err := tn.catalog.Keep(ctx, topic)
			switch {
			case errors.Is(err, topics.ErrUnknownTopic):
				return keep.Policy{}, "", false, nil
			case err != nil:
				return keep.Policy{}, "", false, err
			}
			return k.Policy, k.Stream, k.Kept(), nil
		},
		EnsureApp:   func(ctx context.Context, app string) error { return gw.groups.EnsureApp(ctx, tn, app) },
		ForgetApp:   func(app string) { tn.knownApps.Delete(app) },
		KafkaCode:   kafkaCodeForDIS,
		Queues:      gw.queues,
		Cache:       gw.readCache,
		Go:          gw.panics.Go,
		Recover:     gw.panics.Recover,
		Owns:        gw.ownsPartition,
		Shares:      tn.shares,
		ShareLimits: cfg.ShareLimits,
		ShareBudget: gw.shareBudget,
		TxnsOpen: func() {
			gw.panics.Go("transaction state load", func() {
				ctx, cancel := context.WithTimeout(gw.ctx, cfg.RequestTimeout)
				defer cancel()
				gw.loadTxnStateEverywhere(ctx, tn)
			})
		},
		Produced: func(k plog.Key, records, bytes int) {
			gw.metrics.Produced(tn.accessKey, k.Topic, k.Partition, records, bytes)
		},
		ProduceCancelled: func(n int) { gw.metrics.ProduceCancelled.Add(float64(n)) },
		OffsetProbe:      gw.metrics.OffsetProbes.Inc,
		FencedBatches:    func(n int) { gw.metrics.FencedBatches.Add(float64(n)) },
		ShareWritten: func(ok bool) {
			result := "written"
			if !ok {
				result = "failed"
			}
			gw.metrics.ShareStateWrites.WithLabelValues(result).Inc()
		},
	}
}
