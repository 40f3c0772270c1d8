package gateway

import (
	"github.com/disgw/disgw/gateway/topics"
)

// noteRawDrops counts what a queued produce partition's records lost and,
// the first time a producer loses headers (or keys) on a partition, logs one
// warning, so an operator learns who sends what the topic cannot keep
// without a line per record. A producer is its producer id, or for one
// without (not idempotent) its connection.
func (gw *Gateway) noteRawDrops(r *request, t *topics.Meta, partition int32, producerID int64, d topics.RawDrops) {
	if d.HeaderRecords == 0 && d.KeyRecords == 0 {
		return
	}
	tenant, topic := gw.metrics.Labels.Topic(r.Tenant().accessKey, t.Name)
	notices := &gw.rawNotices
	if producerID < 0 {
		notices = r.Notices()
	}
	clientID := r.ClientID()
	if d.HeaderRecords > 0 {
		gw.metrics.RawHeadersDropped.WithLabelValues(tenant, topic).Add(float64(d.HeaderRecords))
		if notices.First(rawNotice{part: r.Tenant().key(t, partition), producerID: producerID}) {
			r.Log().Warn().Str("topic", t.Name).Int32("partition", partition).Int64("producer_id", producerID).
				Str("client_id", clientID).Int("headers", d.Headers).
				Msg("raw topic: records written without their headers (dis.raw.headers=drop); logged once per producer and partition, counted in disgw_raw_headers_dropped_total")
		}
	}
	if d.KeyRecords > 0 {
		gw.metrics.RawKeysDropped.WithLabelValues(tenant, topic).Add(float64(d.KeyRecords))
		if notices.First(rawNotice{part: r.Tenant().key(t, partition), producerID: producerID, key: true}) {
			r.Log().Warn().Str("topic", t.Name).Int32("partition", partition).Int64("producer_id", producerID).
				Str("client_id", clientID).Str("reason", d.KeyWhy).
				Msg("raw topic: records written without their keys (dis.raw.keys=drop); logged once per producer and partition, counted in disgw_raw_keys_dropped_total")
		}
	}
}

// rawNotice is one warning noteRawDrops gives once (wire.Notices): a
// producer's dropped headers, or keys, on one partition.
type rawNotice struct {
	part       partitionKey
	producerID int64
	key        bool
}
