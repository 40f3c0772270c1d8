package gateway

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// produced counts records and bytes stored in DIS for a partition of the
// tenant with this access key.
func (m *metrics) produced(accessKey, topic string, partition int32, records, bytes int) {
	m.producedRecs.Add(float64(records))
	tenant, topic, part := m.labels.of(accessKey, topic, partition)
	m.topicRecsIn.WithLabelValues(tenant, topic, part).Add(float64(records))
	m.topicBytesIn.WithLabelValues(tenant, topic, part).Add(float64(bytes))
}

// fetched counts what a Fetch response of the tenant with this access key
// returns, per partition.
func (m *metrics) fetched(accessKey string, parts []*fetchPart) {
	total := 0
	for _, p := range parts {
		n := len(p.Records)
		for i := range p.Batches {
			n += int(p.Batches[i].Records())
		}
		if n == 0 {
			continue
		}
		total += n
		tenant, topic, part := m.labels.of(accessKey, p.topic.Name, p.resp.Partition)
		m.topicRecsOut.WithLabelValues(tenant, topic, part).Add(float64(n))
		m.topicBytesOut.WithLabelValues(tenant, topic, part).Add(float64(len(p.resp.RecordBatches)))
	}
	m.fetchedRecs.Add(float64(total))
}

// answered observes the latency of a request the dispatcher served, and
// for Produce and Fetch the same latency for each topic they name, as a
// topic of the tenant the request was served for.
func (m *metrics) answered(r *request) {
	took := time.Since(r.began).Seconds()
	ak := r.tenant.accessKey
	m.requestSeconds.WithLabelValues(r.h.name).Observe(took)
	switch req := r.body.(type) {
	case *kmsg.ProduceRequest:
		for i := range req.Topics {
			m.produceSeconds.WithLabelValues(m.labels.topic(ak, req.Topics[i].Topic)).Observe(took)
		}
	case *kmsg.FetchRequest:
		for i := range req.Topics {
			// Topics named by id (v13+) are labelled by id: the name
			// would cost a lookup on the answer path.
			name := req.Topics[i].Topic
			if name == "" {
				name = topicIDLabel(req.Topics[i].TopicID)
			}
			m.fetchSeconds.WithLabelValues(m.labels.topic(ak, name)).Observe(took)
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

// name is the listener's label in the connection series: its security
// protocol.
func (l *listener) name() string { return string(l.Protocol) }
