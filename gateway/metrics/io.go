package metrics

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// Produced counts records and bytes stored in DIS for a partition of the
// tenant with this access key.
func (m *Metrics) Produced(accessKey, topic string, partition int32, records, bytes int) {
	m.producedRecs.Add(float64(records))
	tenant, topic, part := m.Labels.of(accessKey, topic, partition)
	m.topicRecsIn.WithLabelValues(tenant, topic, part).Add(float64(records))
	m.topicBytesIn.WithLabelValues(tenant, topic, part).Add(float64(bytes))
}

// Fetched counts what a Fetch response returns for one partition of the
// tenant with this access key: its records, and the bytes of its record
// batches.
func (m *Metrics) Fetched(accessKey, topic string, partition int32, records, bytes int) {
	if records == 0 {
		return
	}
	m.fetchedRecs.Add(float64(records))
	tenant, topic, part := m.Labels.of(accessKey, topic, partition)
	m.topicRecsOut.WithLabelValues(tenant, topic, part).Add(float64(records))
	m.topicBytesOut.WithLabelValues(tenant, topic, part).Add(float64(bytes))
}

// Answered observes the latency of a request of this API the dispatcher
// served since began, and for Produce and Fetch the same latency for each
// topic they name, as a topic of the tenant with this access key, the one
// the request was served for.
func (m *Metrics) Answered(api, accessKey string, req kmsg.Request, began time.Time) {
	took := time.Since(began).Seconds()
	m.requestSeconds.WithLabelValues(api).Observe(took)
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		for i := range req.Topics {
			m.produceSeconds.WithLabelValues(m.Labels.Topic(accessKey, req.Topics[i].Topic)).Observe(took)
		}
	case *kmsg.FetchRequest:
		for i := range req.Topics {
			// Topics named by id (v13+) are labelled by id: the name
			// would cost a lookup on the answer path.
			name := req.Topics[i].Topic
			if name == "" {
				name = topicIDLabel(req.Topics[i].TopicID)
			}
			m.fetchSeconds.WithLabelValues(m.Labels.Topic(accessKey, name)).Observe(took)
		}
	}
}

// topicIDLabel is the label of a topic a request names only by id.
func topicIDLabel(id [16]byte) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, 35)
	b = append(b, "id:"...)
	for _, c := range id {
		b = append(b, hex[c>>4], hex[c&15])
	}
	return string(b)
}

// quotaLimits are DIS's per-partition limits of a stream type
// (docs/dis-api.md §2, "Throughput per partition"): records and bytes per
// second in, bytes per second out.
func quotaLimits(streamType string) (recordsIn, bytesIn, bytesOut float64) {
	if streamType == disclient.StreamTypeAdvanced {
		return 2000, 5 << 20, 10 << 20
	}
	return 1000, 1 << 20, 2 << 20
}

// Rewritten counts a rewrite's new generation of one partition of the
// tenant with this access key: its batches, records and bytes, written
// again to the topic's keep stream (docs/design.md §12).
func (m *Metrics) Rewritten(accessKey, topic string, partition int32, batches, records, bytes int64) {
	tenant, topic, part := m.Labels.of(accessKey, topic, partition)
	m.keptBatches.WithLabelValues(tenant, topic, part).Add(float64(batches))
	m.keptRecords.WithLabelValues(tenant, topic, part).Add(float64(records))
	m.keptBytes.WithLabelValues(tenant, topic, part).Add(float64(bytes))
}
