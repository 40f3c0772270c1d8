package gateway

import (
	"context"
	"errors"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/gateway/plog"
)

// The keeper drives the rewrites of kept topics (docs/design.md §12): every
// KeepInterval it asks each partition this gateway owns whether a rewrite
// is due (plog.Partition.Keep decides and does it), one partition at a
// time, so that one key map serves them all and the keep streams' write
// quota goes to one rewrite at a time.

// minDISRetention is DIS's shortest retention: what rewrites are timed by
// when the topic's stream does not say its own.
const minDISRetention = 24 * time.Hour

// keepLoop runs the keeper until the gateway stops.
func (gw *Gateway) keepLoop() {
	keys := keep.NewOffsetMap(gw.cfg.CompactionMapBytes)
	tick := time.NewTicker(gw.cfg.KeepInterval)
	defer tick.Stop()
	for {
		select {
		case <-gw.ctx.Done():
			return
		case <-tick.C:
		}
		gw.keepOnce(gw.ctx, keys)
	}
}

// keepOnce rewrites every owned partition of a kept topic that is due,
// one at a time. It lists the topics from the catalog rather than the
// partitions in memory: a kept topic nobody uses must be rewritten too.
func (gw *Gateway) keepOnce(ctx context.Context, keys *keep.OffsetMap) {
	gw.forEachTenant(func(tn *tenant) {
		names, err := tn.catalog.List(ctx)
		if err != nil {
			if ctx.Err() == nil {
				gw.log.Warn().Err(err).Msg("keep: listing the topics failed; the keeper tries again at the next interval")
			}
			return
		}
		for _, name := range names {
			t, err := tn.catalog.Get(ctx, name)
			if err != nil || !t.Keep.Kept() {
				continue
			}
			for p := range int32(len(t.Partitions)) {
				if ctx.Err() != nil {
					return
				}
				if t.Readable(p) && gw.ownsPartition(name, p) {
					gw.keepPartition(ctx, tn, gw.partitionFor(tn.key(t, p)), keys, max(time.Duration(t.RetentionHours)*time.Hour, minDISRetention))
				}
			}
		}
	})
}

// keepPartition runs one partition's rewrite, if due, and counts it;
// disRetention is how long DIS keeps the topic's records (a kept topic's
// stream and its keep stream keep DIS's longest).
func (gw *Gateway) keepPartition(ctx context.Context, tn *tenant, ps *plog.Partition, keys *keep.OffsetMap, disRetention time.Duration) {
	k := ps.Key()
	limit := rate.NewLimiter(rate.Limit(gw.cfg.KeepReadBytesPerSecond), gw.cfg.KeepReadBytesPerSecond)
	res, err := ps.Keep(ctx, plog.KeepRun{Now: gw.cfg.Now, DISRetention: disRetention, Keys: keys, Throttle: limit,
		Writer: strconv.Itoa(int(gw.cfg.NodeID))})
	result := "skipped"
	switch {
	case errors.Is(err, plog.ErrRewriteFenced):
		result = "fenced"
		gw.log.Info().Str("topic", k.Topic).Int32("partition", k.Partition).Msg("keep: someone else wrote the keep partition during the rewrite; it was abandoned")
	case err != nil:
		result = "failed"
		if ctx.Err() == nil {
			gw.log.Warn().Err(err).Str("topic", k.Topic).Int32("partition", k.Partition).Msg("keep: rewriting the partition failed; it is tried again at the next interval")
		}
	case res.Written:
		result = "written"
		gw.metrics.Rewritten(tn.accessKey, k.Topic, k.Partition, res.Batches, res.Records, res.Bytes)
	}
	gw.metrics.KeepRewrites.WithLabelValues(result).Inc()
}
