package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
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
// list every time, so nothing is kept for partitions it dropped. Without
// transactions, read_committed and read_uncommitted see the same records and
// the last stable offset is the high watermark. Kafka-format partitions
// answer with their stored batches unchanged, from the one holding the fetch
// offset; raw ones with batches built from their records.

func init() {
	regKey(1, 4, 16, api[*kmsg.FetchRequest]{concurrent: handleFetch, deadline: fetchDeadline, errors: fetchError})
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
	return resp
}

// fetchPart is one partition of a fetch in progress.
type fetchPart struct {
	topic   *topicMeta
	req     *kmsg.FetchRequestTopicPartition
	resp    *kmsg.FetchResponseTopicPartition
	offset  int64
	records []protocol.Record // raw format
	batches []plog.Batch      // kafka format
	bytes   int
	done    bool
	// throttled: DIS refused to read the partition for traffic control; it
	// answers empty and the response asks the client to back off.
	throttled bool
}

func handleFetch(ctx context.Context, gw *Gateway, r *request, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	dups := duplicateFetchPartitions(r, req)
	var parts []*fetchPart
	metas := make([]*topicMeta, len(req.Topics)) // resolved once per topic
	var byID map[[16]byte]string
	offsetsServed := false // a partition of the offsets topic answered, empty
	if req.Version >= 13 {
		ids := make([][16]byte, 0, len(req.Topics))
		for ti := range req.Topics {
			if id := req.Topics[ti].TopicID; id != offsetsTopicID {
				ids = append(ids, id)
			}
		}
		byID = r.s.tenant.catalog.namesForIDs(ctx, ids, newCallBudget(gw.cfg.MaxDescribesPerRequest))
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name := rt.Topic
		var t *topicMeta
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
			t, terr = r.s.tenant.catalog.get(ctx, name)
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
			case errors.Is(terr, errUnknownTopic):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case terr != nil:
				sp.ErrorCode = kafkaCodeForDIS(terr)
			case !t.readable(sp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !gw.ownsPartition(name, sp.Partition):
				gw.fetchNotLeader(r, resp, &sp, name)
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
			parts = append(parts, &fetchPart{topic: metas[ti], req: rp, resp: sp, offset: rp.FetchOffset})
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

// serveFetch reads every partition, long-polling until min_bytes are there
// or max_wait_ms has passed, then encodes the batches. A long poll registers
// one waiter with every partition still waiting, which an append wakes.
func (gw *Gateway) serveFetch(ctx context.Context, r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, parts []*fetchPart) {
	deadline := time.Now().Add(fetchWait(req))
	maxBytes := gw.fetchLimit(req)
	minBytes := int(req.MinBytes)
	wake := make(chan struct{}, 1)
	for {
		// Read every partition still waiting at once: one DIS round trip
		// per fetch, not one per partition.
		var wg sync.WaitGroup
		for _, p := range parts {
			if p.done {
				continue
			}
			limit := int(p.req.PartitionMaxBytes)
			if limit <= 0 || limit > maxBytes {
				limit = maxBytes
			}
			wg.Add(1)
			gw.goSafe("fetch partition", func() {
				defer wg.Done()
				gw.fetchPartition(ctx, p, limit)
			})
		}
		wg.Wait()
		total := 0
		var waiting []*plog.Partition
		for _, p := range parts {
			total += p.bytes
			if !p.done {
				waiting = append(waiting, gw.partitionFor(p.topic.key(p.resp.Partition)))
			}
		}
		if total >= max(minBytes, 1) || len(waiting) == 0 || !time.Now().Before(deadline) {
			break
		}
		for _, ps := range waiting {
			ps.Register(wake)
		}
		ok := gw.waitWake(ctx, gw.draining, wake, deadline, gw.cfg.PollInterval)
		for _, ps := range waiting {
			ps.Unregister(wake)
		}
		select {
		case <-wake:
		default:
		}
		if !ok {
			break
		}
	}
	trimToMaxBytes(parts, maxBytes)
	pieces := 1
	for _, p := range parts {
		if p.throttled {
			// Kafka's way to ask a client to slow down.
			resp.ThrottleMillis = throttleHintMillis
		}
		if len(p.batches) > 0 {
			n := 0
			for i := range p.batches {
				n += p.batches[i].Size()
			}
			batches := batchParts(make([]framePart, 0, len(p.batches)), p.batches)
			// Cached batches are never changed: the frame carries them
			// as they are (fetch_splice.go), unless it would have too
			// many pieces; then they are copied together.
			if pieces+len(batches)+2 <= maxSpliceParts {
				pieces += len(batches) + 2
				r.splices = append(r.splices, newFetchSplice(&p.resp.RecordBatches, batches, n))
				continue
			}
			b := responseBuffers.get(n)
			var err error
			for i := range batches {
				if b, err = batches[i].appendTo(b); err != nil {
					break
				}
			}
			r.scratch = append(r.scratch, b)
			if err != nil {
				gw.log.Error().Err(err).Str("topic", p.topic.name).Msg("fetch: reading record batches from the record log failed")
				p.resp.ErrorCode = kerr.KafkaStorageError.Code
				continue
			}
			p.resp.RecordBatches = b
			continue
		}
		if len(p.records) == 0 {
			continue
		}
		b, err := protocol.AppendBatch(nil, p.records, protocol.CodecNone, 0)
		if err != nil {
			gw.log.Error().Err(err).Str("topic", p.topic.name).Msg("fetch: encoding a record batch failed")
			p.resp.ErrorCode = kerr.UnknownServerError.Code
			continue
		}
		p.resp.RecordBatches = b
	}
	gw.metrics.fetched(parts)
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

// trimToMaxBytes keeps the encoded response within max_bytes, in request
// order; the first record always stays so that a consumer makes progress
// past a record larger than its limit, as Kafka returns the first batch
// whatever its size (a record is at most MaxRecordBytes). Dropped records
// stay in the read cache for the next fetch.
func trimToMaxBytes(parts []*fetchPart, maxBytes int) {
	total := 0
	for _, p := range parts {
		if len(p.batches) > 0 {
			keep := 0
			for keep < len(p.batches) {
				n := p.batches[keep].Size()
				if total > 0 && total+n > maxBytes {
					break
				}
				total += n
				keep++
			}
			p.batches = p.batches[:keep]
			continue
		}
		keep := 0
		for keep < len(p.records) {
			r := &p.records[keep]
			n := protocol.RecordSizeInBatch(r, int32(r.Offset-p.records[0].Offset), r.Timestamp-p.records[0].Timestamp)
			if keep == 0 {
				n += protocol.BatchHeaderSize
			}
			if total > 0 && total+n > maxBytes {
				break
			}
			total += n
			keep++
		}
		p.records = p.records[:keep]
	}
}

// fetchPartition reads once for p. A partition is done once it has records
// or an error.
func (gw *Gateway) fetchPartition(ctx context.Context, p *fetchPart, limit int) {
	if p.topic.format == FormatKafka {
		gw.fetchBatches(ctx, p, limit)
		return
	}
	k := p.topic.key(p.resp.Partition)
	pr := gw.partitionFor(k)
	pm := p.topic.partitions[p.resp.Partition]
	pr.ObserveHWM(pm.next)
	p.resp.LogStartOffset = pm.earliest
	hwm := pr.KnownHWM()
	if p.offset < pm.earliest || p.offset > hwm {
		// The description may be stale; look again before refusing.
		if t, err := p.topic.tenant.catalog.refresh(ctx, p.topic.name); err == nil && int(k.partition) < len(t.partitions) {
			p.topic = t
			pm = t.partitions[k.partition]
			pr.ObserveHWM(pm.next)
			hwm = pr.KnownHWM()
			p.resp.LogStartOffset = pm.earliest
		}
		if p.offset < pm.earliest || p.offset > hwm {
			gw.outOfRange(p, pm.earliest, hwm)
			return
		}
	}
	recs, err := pr.ReadRecords(ctx, p.offset, limit)
	hwm = pr.KnownHWM()
	p.resp.HighWatermark, p.resp.LastStableOffset = hwm, hwm
	if err != nil {
		if errors.Is(err, plog.ErrOutOfRange) {
			if t, rerr := p.topic.tenant.catalog.refresh(ctx, p.topic.name); rerr == nil && int(k.partition) < len(t.partitions) {
				pm = t.partitions[k.partition]
			}
			gw.outOfRange(p, pm.earliest, max(pm.next, hwm))
			return
		}
		if ctx.Err() != nil {
			return
		}
		if disclient.IsThrottle(disclient.ErrorCode(err)) {
			p.throttled, p.done = true, true
			return
		}
		gw.log.Warn().Err(err).Str("topic", k.topic).Int32("partition", k.partition).Msg("fetch: reading DIS failed")
		p.resp.ErrorCode = fetchErrorCode(err)
		p.done = true
		return
	}
	if len(recs) == 0 {
		return
	}
	n := 0
	for i := range recs {
		n += plog.RecordSize(&recs[i])
	}
	p.records, p.bytes, p.done = recs, n, true
}

func (gw *Gateway) outOfRange(p *fetchPart, earliest, hwm int64) {
	p.resp.ErrorCode = kerr.OffsetOutOfRange.Code
	p.resp.LogStartOffset = earliest
	p.resp.HighWatermark, p.resp.LastStableOffset = hwm, hwm
	p.done = true
}

// waitWake blocks until wake is signalled, poll passes, or deadline. It
// returns false when ctx is done or stop closes.
func (gw *Gateway) waitWake(ctx context.Context, stop <-chan struct{}, wake <-chan struct{}, deadline time.Time, poll time.Duration) bool {
	d := min(time.Until(deadline), poll)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-wake:
	case <-timer.C:
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
	return true
}

// fetchBatches reads once for p, a partition of a kafka-format topic: the
// stored batches from the one holding the fetch offset on.
func (gw *Gateway) fetchBatches(ctx context.Context, p *fetchPart, limit int) {
	k := p.topic.key(p.resp.Partition)
	ps := gw.partitionFor(k)
	fail := func(err error) {
		if ctx.Err() != nil {
			return
		}
		gw.log.Warn().Err(err).Str("topic", k.topic).Int32("partition", k.partition).Msg("fetch: reading DIS failed")
		p.resp.ErrorCode = fetchErrorCode(err)
		p.done = true
	}
	bounds := func(t *topicMeta) (int64, int64, error) {
		earliest, err := ps.Earliest(ctx, t.partitions[k.partition].earliest)
		if err != nil {
			return 0, 0, err
		}
		next, err := ps.Next(ctx)
		return earliest, next, err
	}
	earliest, next, err := bounds(p.topic)
	if err != nil {
		fail(err)
		return
	}
	if p.offset < earliest || p.offset > next {
		// The description may be stale, or someone else wrote: look again
		// before refusing.
		if t, err := p.topic.tenant.catalog.refresh(ctx, p.topic.name); err == nil && int(k.partition) < len(t.partitions) {
			p.topic = t
			_, rerr := ps.ReadBatches(ctx, next, 1)
			if rerr == nil {
				earliest, next, rerr = bounds(t)
			}
			if rerr != nil {
				fail(rerr)
				return
			}
		}
		if p.offset < earliest || p.offset > next {
			gw.outOfRange(p, earliest, next)
			return
		}
	}
	p.resp.LogStartOffset = earliest
	batches, err := ps.ReadBatches(ctx, p.offset, limit)
	hwm := ps.KnownNext()
	p.resp.HighWatermark, p.resp.LastStableOffset = hwm, hwm
	if errors.Is(err, plog.ErrOutOfRange) {
		gw.outOfRange(p, earliest, hwm)
		return
	}
	if err != nil {
		fail(err)
		return
	}
	if len(batches) == 0 {
		return
	}
	n := 0
	for i := range batches {
		n += batches[i].Size()
	}
	p.batches, p.bytes, p.done = batches, n, true
}
