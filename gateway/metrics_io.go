package gateway

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
)

// produced counts records and bytes stored in DIS for a partition.
func (m *metrics) produced(k partitionKey, records, bytes int) {
	m.producedRecs.Add(float64(records))
	tenant, topic, part := m.labels.of(k.tenant.accessKey, k.topic, k.partition)
	m.topicRecsIn.WithLabelValues(tenant, topic, part).Add(float64(records))
	m.topicBytesIn.WithLabelValues(tenant, topic, part).Add(float64(bytes))
}

// fetched counts what a Fetch response returns, per partition.
func (m *metrics) fetched(parts []*fetchPart) {
	total := 0
	for _, p := range parts {
		n := len(p.records)
		for i := range p.batches {
			n += int(p.batches[i].last - p.batches[i].base + 1)
		}
		if n == 0 {
			continue
		}
		total += n
		tenant, topic, part := m.labels.of(p.topic.tenant.accessKey, p.topic.name, p.resp.Partition)
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

// quotaWindow is how many whole seconds the DIS quota share is averaged
// over.
const quotaWindow = 10

// ioMeter counts a partition's DIS traffic per second over the last
// quotaWindow seconds, which is what DIS's per-partition limits apply to.
// The zero value is ready.
type ioMeter struct {
	mu    sync.Mutex
	slots [quotaWindow + 1]ioSlot
}

type ioSlot struct {
	sec                          int64
	recordsIn, bytesIn, bytesOut float64
}

// entriesBytes is the record data of PutRecords entries.
func entriesBytes(recs []disclient.PutRecordsEntry) int {
	n := 0
	for i := range recs {
		n += len(recs[i].Data)
	}
	return n
}

// wrote counts records DIS stored.
func (m *ioMeter) wrote(recs []disclient.PutRecordsEntry) {
	m.add(time.Now(), float64(len(recs)), float64(entriesBytes(recs)), 0)
}

// read counts records DIS returned.
func (m *ioMeter) read(recs []disclient.Record) {
	n := 0
	for i := range recs {
		n += len(recs[i].Data) + recs[i].Rest.Len
	}
	m.add(time.Now(), 0, 0, float64(n))
}

func (m *ioMeter) add(now time.Time, recordsIn, bytesIn, bytesOut float64) {
	sec := now.Unix()
	m.mu.Lock()
	s := &m.slots[sec%int64(len(m.slots))]
	if s.sec != sec {
		*s = ioSlot{sec: sec}
	}
	s.recordsIn += recordsIn
	s.bytesIn += bytesIn
	s.bytesOut += bytesOut
	m.mu.Unlock()
}

// rates are the per-second averages over the last quotaWindow whole
// seconds before now.
func (m *ioMeter) rates(now time.Time) (recordsIn, bytesIn, bytesOut float64) {
	cur := now.Unix()
	m.mu.Lock()
	for _, s := range m.slots {
		if s.sec < cur && s.sec >= cur-quotaWindow {
			recordsIn += s.recordsIn
			bytesIn += s.bytesIn
			bytesOut += s.bytesOut
		}
	}
	m.mu.Unlock()
	return recordsIn / quotaWindow, bytesIn / quotaWindow, bytesOut / quotaWindow
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
