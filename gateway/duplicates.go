package gateway

import "github.com/twmb/franz-go/pkg/kmsg"

// A Produce or Fetch request that names the same partition twice is
// refused for that partition with INVALID_REQUEST, as a Kafka broker
// refuses duplicate partitions in ListOffsets and its other per-partition
// requests. (For Produce and Fetch a Kafka broker keeps only the last entry
// and silently drops the others; the gateway never drops a batch its
// producer sent without saying so.) None of the entries for such a
// partition is written or read; the other partitions are served as usual.
// Only a broken or hostile client sends such a request, and refusing it
// also keeps one request from decompressing the same partition many times.

// partitionRef names one partition of a request; topics are named by id
// in Fetch v13+.
type partitionRef struct {
	topic string
	id    [16]byte
	part  int32
}

// duplicated returns the partitions that appear more than once in a
// request's topics, or nil when none does.
func duplicated[T, P any](topics []T, ref func(*T, *P) partitionRef, parts func(*T) []P) map[partitionRef]bool {
	n := 0
	for i := range topics {
		n += len(parts(&topics[i]))
	}
	if n < 2 {
		return nil
	}
	seen := make(map[partitionRef]bool, n)
	var dups map[partitionRef]bool
	for i := range topics {
		t := &topics[i]
		ps := parts(t)
		for j := range ps {
			k := ref(t, &ps[j])
			if seen[k] {
				if dups == nil {
					dups = make(map[partitionRef]bool)
				}
				dups[k] = true
			}
			seen[k] = true
		}
	}
	return dups
}

// duplicateProducePartitions is duplicated for a Produce request.
func duplicateProducePartitions(r *request, req *kmsg.ProduceRequest) map[partitionRef]bool {
	dups := duplicated(req.Topics,
		func(t *kmsg.ProduceRequestTopic, p *kmsg.ProduceRequestTopicPartition) partitionRef {
			return partitionRef{topic: t.Topic, part: p.Partition}
		},
		func(t *kmsg.ProduceRequestTopic) []kmsg.ProduceRequestTopicPartition { return t.Partitions })
	if dups != nil {
		r.Log().Warn().Int("partitions", len(dups)).Msg("produce request names a partition more than once; refusing those partitions with INVALID_REQUEST")
	}
	return dups
}

// duplicateFetchPartitions is duplicated for a Fetch request.
func duplicateFetchPartitions(r *request, req *kmsg.FetchRequest) map[partitionRef]bool {
	dups := duplicated(req.Topics,
		func(t *kmsg.FetchRequestTopic, p *kmsg.FetchRequestTopicPartition) partitionRef {
			if req.Version >= 13 {
				return partitionRef{id: t.TopicID, part: p.Partition}
			}
			return partitionRef{topic: t.Topic, part: p.Partition}
		},
		func(t *kmsg.FetchRequestTopic) []kmsg.FetchRequestTopicPartition { return t.Partitions })
	if dups != nil {
		r.Log().Warn().Int("partitions", len(dups)).Msg("fetch request names a partition more than once; refusing those partitions with INVALID_REQUEST")
	}
	return dups
}

// duplicateMessage explains INVALID_REQUEST for a partition named twice.
const duplicateMessage = "the request names this partition more than once"
