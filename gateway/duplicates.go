package gateway

import "github.com/twmb/franz-go/pkg/kmsg"

// A Produce or Fetch request that names the same partition twice is
// answered as Kafka answers it. A Kafka broker collects a Produce request's
// partitions into a map keyed by topic-partition (KafkaApis
// handleProduceRequest) and a Fetch request's into an insertion-ordered one
// (FetchRequest.fetchData): a partition listed again replaces the earlier
// entry, which is neither written nor fetched, and the response holds the
// partition once, with no error code. Refusing with an error would be a
// code no Kafka client expects here; the gateway keeps Kafka's answer and
// logs a warning, since only a broken client sends such a request.

// lastOccurrences rewrites topics so that each partition appears once,
// holding its last occurrence at the place of its first; a topic listed
// twice is merged into its first entry the same way. It returns the new
// list and how many entries it dropped; with none it returns topics as is.
func lastOccurrences[T, P any, K comparable](topics []T, topicKey func(*T) K, parts func(*T) *[]P, index func(*P) int32) ([]T, int) {
	n := 0
	for i := range topics {
		n += len(*parts(&topics[i]))
	}
	if n < 2 {
		return topics, 0
	}
	type partKey struct {
		topic K
		part  int32
	}
	type place struct{ topic, part int }
	topicAt := make(map[K]int, len(topics))
	partAt := make(map[partKey]place, n)
	out := make([]T, 0, len(topics))
	dropped := 0
	for i := range topics {
		t := &topics[i]
		k := topicKey(t)
		ti, ok := topicAt[k]
		if !ok {
			ti = len(out)
			topicAt[k] = ti
			nt := *t
			*parts(&nt) = nil
			out = append(out, nt)
		}
		for _, p := range *parts(t) {
			pk := partKey{k, index(&p)}
			if at, ok := partAt[pk]; ok {
				(*parts(&out[at.topic]))[at.part] = p
				dropped++
				continue
			}
			dst := parts(&out[ti])
			partAt[pk] = place{ti, len(*dst)}
			*dst = append(*dst, p)
		}
	}
	if dropped == 0 && len(out) == len(topics) {
		return topics, 0
	}
	return out, dropped
}

// dropDuplicatePartitions keeps the last occurrence of each partition of a
// produce request, as Kafka does.
func dropDuplicatePartitions(r *request, req *kmsg.ProduceRequest) {
	topics, dropped := lastOccurrences(req.Topics,
		func(t *kmsg.ProduceRequestTopic) string { return t.Topic },
		func(t *kmsg.ProduceRequestTopic) *[]kmsg.ProduceRequestTopicPartition { return &t.Partitions },
		func(p *kmsg.ProduceRequestTopicPartition) int32 { return p.Partition })
	req.Topics = topics
	if dropped > 0 {
		r.s.log.Warn().Int("dropped", dropped).Msg("produce request names a partition more than once; as Kafka does, only the last batch for it is written")
	}
}

// fetchTopicKey names a fetched topic: by name before v13, by id after.
type fetchTopicKey struct {
	name string
	id   [16]byte
}

// dropDuplicateFetchPartitions keeps the last occurrence of each partition
// of a fetch request, as Kafka does; from v13 topics are named by id.
func dropDuplicateFetchPartitions(r *request, req *kmsg.FetchRequest) {
	topics, dropped := lastOccurrences(req.Topics,
		func(t *kmsg.FetchRequestTopic) fetchTopicKey {
			if req.Version >= 13 {
				return fetchTopicKey{id: t.TopicID}
			}
			return fetchTopicKey{name: t.Topic}
		},
		func(t *kmsg.FetchRequestTopic) *[]kmsg.FetchRequestTopicPartition { return &t.Partitions },
		func(p *kmsg.FetchRequestTopicPartition) int32 { return p.Partition })
	req.Topics = topics
	if dropped > 0 {
		r.s.log.Warn().Int("dropped", dropped).Msg("fetch request names a partition more than once; as Kafka does, only the last entry for it is served")
	}
}
