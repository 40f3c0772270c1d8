package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/wire"
	"github.com/disgw/disgw/protocol"
)

// Fetch v4–v16.
//
// v4 added isolation level and the last stable offset; v5 log start offset;
// v7 fetch sessions (KIP-227); v9 the current leader epoch; v11 rack-aware
// preferred replicas; v12 made it flexible; v13 names topics by id; v15 moved
// the replica id into replica state; v16 adds leader hints (KIP-951), which
// are not needed here. Fetch sessions are answered as full fetches with
// session id 0, which KIP-227 allows: the client sends its full partition
// list every time, so nothing is kept for partitions it dropped.
// read_committed (isolation level 1) reads below the last stable offset and
// is told the aborted transactions among what it got; read_uncommitted
// reads to the high watermark and is told none, as a client given the list
// drops records (docs/design.md §13). Kafka-format partitions
// answer with their stored batches unchanged, from the one holding the fetch
// offset; raw ones with batches built from their records.

func init() {
	regKey(1, 4, 16, api[*kmsg.FetchRequest]{Concurrent: handleFetch, Deadline: fetchDeadline, Errors: fetchError})
}

// maxFetchWait bounds max_wait_ms, so a client cannot park a handler forever.
const maxFetchWait = 30 * time.Second

// fetchDISBudget is how long past max_wait_ms a fetch may spend on DIS
// calls before it is answered with what it has. Clients time a fetch out
// soon after its max wait (franz-go after 10 s more), so a DIS that hangs
// must not hold the answer longer than that.
const fetchDISBudget = 5 * time.Second

// fetchDeadline is the long poll's max_wait_ms (within maxFetchWait) plus
// fetchDISBudget for the DIS calls that follow it.
func fetchDeadline(_ *Gateway, req *kmsg.FetchRequest) time.Duration {
	return fetchWait(req) + fetchDISBudget
}

// fetchWait is how long a fetch may wait for min_bytes.
func fetchWait(req *kmsg.FetchRequest) time.Duration {
	return min(max(time.Duration(req.MaxWaitMillis)*time.Millisecond, 0), maxFetchWait)
}

// fetchError answers req with code at the top level and in every partition.
func fetchError(req *kmsg.FetchRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = code
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return &wire.FetchResponse{FetchResponse: resp}
}

// fetchPart is one partition of a fetch in progress: what the partition
// log reads for it (plog.FetchPart), and where its answer goes.
type fetchPart struct {
	plog.FetchPart
	topic *topics.Meta
	req   *kmsg.FetchRequestTopicPartition
	resp  *kmsg.FetchResponseTopicPartition
}

func handleFetch(ctx context.Context, gw *Gateway, r *request, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := &wire.FetchResponse{FetchResponse: req.ResponseKind().(*kmsg.FetchResponse)}
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	dups := duplicateFetchPartitions(r, req)
	var parts []*fetchPart
	metas := make([]*topics.Meta, len(req.Topics)) // resolved once per topic
	var byID map[[16]byte]string
	offsetsServed := false // a partition of the offsets topic answered, empty
	if req.Version >= 13 {
		ids := make([][16]byte, 0, len(req.Topics))
		for ti := range req.Topics {
			if id := req.Topics[ti].TopicID; id != offsetsTopicID {
				ids = append(ids, id)
			}
		}
		byID = r.Tenant().catalog.NamesForIDs(ctx, ids, topics.NewCallBudget(gw.cfg.MaxDescribesPerRequest))
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name := rt.Topic
		var t *topics.Meta
		var terr error
		if req.Version >= 13 {
			if n, ok := byID[rt.TopicID]; ok {
				name = n
			} else if rt.TopicID == offsetsTopicID {
				name = offsetsTopic
			} else {
				terr = errUnknownTopicID
			}
		}
		internal := terr == nil && name == offsetsTopic
		denied := terr == nil && !gw.authorize(r, authz.OpRead, authz.ResourceTopic, name)
		if terr == nil && !internal && !denied {
			t, terr = r.Tenant().catalog.Get(ctx, name)
		}
		metas[ti] = t
		for pi := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rt.Partitions[pi].Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{} // librdkafka refuses a null record set
			switch {
			case dups[partitionRef{topic: rt.Topic, id: rt.TopicID, part: sp.Partition}] && req.Version < 13,
				dups[partitionRef{id: rt.TopicID, part: sp.Partition}] && req.Version >= 13:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case denied:
				sp.ErrorCode = topicDenied
			case internal:
				fetchOffsetsPartition(&sp, rt.Partitions[pi].FetchOffset)
				if sp.ErrorCode == 0 {
					offsetsServed = true
				}
			case errors.Is(terr, errUnknownTopicID):
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case errors.Is(terr, topics.ErrUnknownTopic):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case terr != nil:
				sp.ErrorCode = kafkaCodeForDIS(terr)
			case !t.Readable(sp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !gw.ownsPartition(name, sp.Partition):
				gw.fetchNotLeader(r, resp.FetchResponse, &sp, name)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for ti := range req.Topics {
		if metas[ti] == nil {
			continue
		}
		for pi := range req.Topics[ti].Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			if sp.ErrorCode != 0 {
				continue
			}
			rp := &req.Topics[ti].Partitions[pi]
			parts = append(parts, &fetchPart{topic: metas[ti], req: rp, resp: sp})
		}
	}
	if len(parts) == 0 && offsetsServed {
		gw.waitEmptyFetch(ctx, req)
		return resp, nil
	}
	gw.serveFetch(ctx, r, req, resp, parts)
	return resp, nil
}

var errUnknownTopicID = errors.New("unknown topic id")

// fetchNotLeader answers a partition another gateway owns as a Kafka
// follower answers a consumer: NOT_LEADER_OR_FOLLOWER, with the owner as
// current leader from v12 and its endpoint from v16 (KIP-951).
func (gw *Gateway) fetchNotLeader(r *request, resp *kmsg.FetchResponse, sp *kmsg.FetchResponseTopicPartition, topic string) {
	sp.ErrorCode = kerr.NotLeaderForPartition.Code
	owner := gw.partitionOwner(topic, sp.Partition)
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = owner.ID, 0
	if host, port, add := gw.leaderEndpoint(r, owner, len(resp.Brokers), func(i int) int32 { return resp.Brokers[i].NodeID }); add {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = owner.ID, host, port
		resp.Brokers = append(resp.Brokers, b)
	}
}

// serveFetch reads every partition with the partition log, long-polling
// until min_bytes are there or max_wait_ms has passed (plog.Tenant.Fetch),
// then encodes the batches.
func (gw *Gateway) serveFetch(ctx context.Context, r *request, req *kmsg.FetchRequest, resp *wire.FetchResponse, parts []*fetchPart) {
	deadline := time.Now().Add(fetchWait(req))
	maxBytes := gw.fetchLimit(req)
	reads := make([]*plog.FetchPart, len(parts))
	for i, p := range parts {
		limit := int(p.req.PartitionMaxBytes)
		if limit <= 0 || limit > maxBytes {
			limit = maxBytes
		}
		pm := p.topic.Partitions[p.resp.Partition]
		p.FetchPart = plog.FetchPart{
			Partition: gw.partitionFor(r.Tenant().key(p.topic, p.resp.Partition)), Kafka: p.topic.Format == FormatKafka,
			Offset: p.req.FetchOffset, Limit: limit, Earliest: pm.Earliest, Next: pm.Next,
			Committed:     req.Version >= 4 && req.IsolationLevel == 1,
			HighWatermark: -1, LogStartOffset: -1, LastStableOffset: -1,
		}
		reads[i] = &p.FetchPart
	}
	r.Tenant().parts.Fetch(ctx, reads, deadline, int(req.MinBytes), maxBytes, gw.draining)
	for _, p := range parts {
		p.resp.ErrorCode = p.ErrorCode
		p.resp.HighWatermark, p.resp.LastStableOffset = p.HighWatermark, p.LastStableOffset
		p.resp.LogStartOffset = p.LogStartOffset
		for _, a := range p.Aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			p.resp.AbortedTransactions = append(p.resp.AbortedTransactions, at)
		}
		if p.Throttled {
			// Kafka's way to ask a client to slow down.
			resp.ThrottleMillis = throttleHintMillis
		}
		if len(p.Batches) > 0 {
			n := 0
			for i := range p.Batches {
				n += p.Batches[i].Size()
			}
			batches := make([]wire.FramePart, 0, len(p.Batches))
			for i := range p.Batches {
				batches = wire.AppendBatch(batches, p.Batches[i].Data, p.Batches[i].File)
			}
			if err := resp.PutBatches(&p.resp.RecordBatches, batches, n); err != nil {
				gw.log.Error().Err(err).Str("topic", p.topic.Name).Msg("fetch: reading record batches from the record log failed")
				p.resp.ErrorCode = kerr.KafkaStorageError.Code
			}
			continue
		}
		if len(p.Records) == 0 {
			continue
		}
		b, err := protocol.AppendBatch(nil, p.Records, protocol.CodecNone, 0)
		if err != nil {
			gw.log.Error().Err(err).Str("topic", p.topic.Name).Msg("fetch: encoding a record batch failed")
			p.resp.ErrorCode = kerr.UnknownServerError.Code
			continue
		}
		p.resp.RecordBatches = b
	}
	countFetched(gw.metrics, r.Tenant().accessKey, parts)
}

// fetchLimit is the most a fetch response may hold: the client's max_bytes
// within FetchMaxBytes, as Kafka bounds it by its fetch.max.bytes.
func (gw *Gateway) fetchLimit(req *kmsg.FetchRequest) int {
	limit := int(gw.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 && int(req.MaxBytes) < limit {
		limit = int(req.MaxBytes)
	}
	return limit
}
