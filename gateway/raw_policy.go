package gateway

import (
	"fmt"
	"sync"

	"github.com/disgw/disgw/disclient"
)

// What a raw topic does with the parts of a Kafka record a DIS record cannot
// hold (docs/record-formats.md): its headers, and a key that is not a
// non-empty UTF-8 string of at most maxRawKeyBytes. drop writes the record
// without them, as Huawei's DIS Kafka adapter does, so producers that add
// headers (tracing, typed serializers) work on streams that existed in DIS
// before the gateway; refuse fails the batch with INVALID_RECORD.
const (
	configRawHeaders = "dis.raw.headers"
	configRawKeys    = "dis.raw.keys"

	policyDrop   = "drop"
	policyRefuse = "refuse"

	// The stream tags that record the two policies; a stream without one
	// (every stream created outside the gateway) drops.
	rawHeadersTagKey = "disgw-raw-headers"
	rawKeysTagKey    = "disgw-raw-keys"
)

// rawSpec is a topic's dis.raw.* policies, each "" (the default, drop),
// policyDrop or policyRefuse.
type rawSpec struct {
	headers, keys string
}

// withDefaults fills the policies left unset with drop.
func (rs rawSpec) withDefaults() rawSpec {
	if rs.headers == "" {
		rs.headers = policyDrop
	}
	if rs.keys == "" {
		rs.keys = policyDrop
	}
	return rs
}

// tags are the stream tags that record rs, one per policy set.
func (rs rawSpec) tags() []disclient.Tag {
	var out []disclient.Tag
	for _, t := range []disclient.Tag{{Key: rawHeadersTagKey, Value: rs.headers}, {Key: rawKeysTagKey, Value: rs.keys}} {
		if t.Value != "" {
			out = append(out, t)
		}
	}
	return out
}

// parseRawPolicy checks the value of the policy config name.
func parseRawPolicy(name, v string) (string, error) {
	if v != policyDrop && v != policyRefuse {
		return "", fmt.Errorf("%s must be %s or %s", name, policyDrop, policyRefuse)
	}
	return v, nil
}

// rawSpecFromTags reads the policies a stream's tags record; a tag whose
// value is neither policy (set by hand on DIS) is ignored, leaving drop.
func rawSpecFromTags(tags []disclient.Tag) rawSpec {
	var rs rawSpec
	for _, tg := range tags {
		switch tg.Key {
		case rawHeadersTagKey:
			rs.headers, _ = parseRawPolicy(configRawHeaders, tg.Value)
		case rawKeysTagKey:
			rs.keys, _ = parseRawPolicy(configRawKeys, tg.Value)
		}
	}
	return rs
}

// rawDrops is what the records of one produce partition lost to drop
// policies, for the counters and the producer's warning.
type rawDrops struct {
	headerRecords, keyRecords int
	// headers is how many headers the first record that lost them had,
	// keyWhy why the first dropped key could not be kept.
	headers int
	keyWhy  string
}

// add records what one record lost.
func (d *rawDrops) add(headers int, keyWhy string) {
	if headers > 0 {
		if d.headerRecords == 0 {
			d.headers = headers
		}
		d.headerRecords++
	}
	if keyWhy != "" {
		if d.keyRecords == 0 {
			d.keyWhy = keyWhy
		}
		d.keyRecords++
	}
}

// noteRawDrops counts what a queued produce partition's records lost and,
// the first time a producer loses headers (or keys) on a partition, logs one
// warning, so an operator learns who sends what the topic cannot keep
// without a line per record. A producer is its producer id, or for one
// without (not idempotent) its connection.
func (gw *Gateway) noteRawDrops(r *request, t *topicMeta, partition int32, producerID int64, d rawDrops) {
	if d.headerRecords == 0 && d.keyRecords == 0 {
		return
	}
	tenant, topic := gw.metrics.Labels.Topic(t.tenant.accessKey, t.name)
	notices := &gw.rawNotices
	if producerID < 0 {
		notices = &r.s.rawNotices
	}
	clientID := ""
	if r.hdr.ClientID != nil {
		clientID = *r.hdr.ClientID
	}
	if d.headerRecords > 0 {
		gw.metrics.RawHeadersDropped.WithLabelValues(tenant, topic).Add(float64(d.headerRecords))
		if notices.first(rawNotice{part: t.key(partition), producerID: producerID}) {
			r.log().Warn().Str("topic", t.name).Int32("partition", partition).Int64("producer_id", producerID).
				Str("client_id", clientID).Int("headers", d.headers).
				Msg("raw topic: records written without their headers (dis.raw.headers=drop); logged once per producer and partition, counted in disgw_raw_headers_dropped_total")
		}
	}
	if d.keyRecords > 0 {
		gw.metrics.RawKeysDropped.WithLabelValues(tenant, topic).Add(float64(d.keyRecords))
		if notices.first(rawNotice{part: t.key(partition), producerID: producerID, key: true}) {
			r.log().Warn().Str("topic", t.name).Int32("partition", partition).Int64("producer_id", producerID).
				Str("client_id", clientID).Str("reason", d.keyWhy).
				Msg("raw topic: records written without their keys (dis.raw.keys=drop); logged once per producer and partition, counted in disgw_raw_keys_dropped_total")
		}
	}
}

// rawNotice is one warning noteRawDrops gives once: a producer's dropped
// headers, or keys, on one partition.
type rawNotice struct {
	part       partitionKey
	producerID int64
	key        bool
}

// maxRawNotices bounds a rawNotices set, so that producers minting ids, or
// writing many partitions, cannot grow it without limit; past it the set
// starts again, and the producers it forgot are warned about once more.
const maxRawNotices = 4096

// rawNotices is the set of warnings already given; its zero value is empty
// and ready.
type rawNotices struct {
	mu   sync.Mutex
	seen map[rawNotice]struct{}
}

// first reports whether n is new, and remembers it.
func (s *rawNotices) first(n rawNotice) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[n]; ok {
		return false
	}
	if s.seen == nil || len(s.seen) >= maxRawNotices {
		s.seen = make(map[rawNotice]struct{})
	}
	s.seen[n] = struct{}{}
	return true
}
