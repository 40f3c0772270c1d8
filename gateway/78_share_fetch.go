package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/protocol"
)

// ShareFetch v0–v2 (KIP-932).
//
// A share consumer's fetch: it acknowledges what it processed
// (piggy-backed), then acquires records of the partitions in its share
// session, each record locked to it until it acknowledges it or the lock
// expires. The records go out as stored batches with the acquired ranges
// beside them; the client hands out only the acquired offsets. The fetch
// long-polls until it acquires something, max_wait_ms passes, or records
// come free (released, a lock expired). v1 adds max_records and
// batch_size, v2 the acquire mode (record-limit mode is what is always
// done: max_records is never exceeded) and renew acknowledgements, which
// make the fetch acquire nothing.

func init() {
	regKey(78, 0, 2, api[*kmsg.ShareFetchRequest]{Concurrent: handleShareFetch, Errors: shareFetchError})
}

func shareFetchError(req *kmsg.ShareFetchRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.ErrorCode = code
	return resp
}

// shareFetchPart is one session partition being fetched.
type shareFetchPart struct {
	plog.FetchPart
	tg   *shareTarget
	got  []sharestate.AcquiredRecords
	data []byte // the batches holding got
}

func handleShareFetch(ctx context.Context, gw *Gateway, r *request, req *kmsg.ShareFetchRequest) (kmsg.Response, error) {
	epoch := req.ShareSessionEpoch
	if epoch == shareEpochOpen {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if len(p.AcknowledgementBatches) > 0 {
					return shareFetchError(req, kerr.InvalidRequest.Code), nil // nothing to acknowledge yet
				}
			}
		}
	}
	c, code := gw.beginShare(ctx, r, req.GroupID, req.MemberID, epoch, "ShareFetch")
	if code != 0 {
		return shareFetchError(req, code), nil
	}
	defer gw.endShare(c)
	tn := r.Tenant()
	group, member, s, cfg, lock := c.group, c.member, c.session, c.cfg, c.lock
	gw.releaseShareSession(ctx, r, group, member, c.replaced)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = int32(lock.Milliseconds())

	// The session's partitions: every one the request names joins it,
	// with or without acknowledgements, unless no such partition exists
	// (so a session holds no more than the topics have); forgotten ones
	// leave.
	var named []sharePart
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			named = append(named, sharePart{t.TopicID, p.Partition})
		}
	}
	targets := gw.shareTargets(ctx, r, append(append([]sharePart(nil), named...), s.parts...))
	if epoch != shareEpochClose {
		for _, p := range named {
			if code := targets[p].code; code != kerr.UnknownTopicID.Code && code != kerr.UnknownTopicOrPartition.Code {
				s.add(p)
			}
		}
		for _, f := range req.ForgottenTopicsData {
			for _, p := range f.Partitions {
				s.forget(sharePart{f.TopicID, p})
			}
		}
	}
	out := newShareFetchAnswer(gw, r, resp)

	// Acknowledgements first, all partitions at once: each returns once
	// durable.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			tg := targets[sharePart{t.TopicID, p.Partition}]
			batches := make([]shareAckBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				batches[i] = shareAckBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
			}
			wg.Add(1)
			gw.panics.Go("share fetch acknowledgements", func() {
				defer wg.Done()
				code := gw.shareAcknowledge(ctx, tn, tg, group, member, batches, req.IsRenewAck, lock)
				mu.Lock()
				out.partition(tg).AcknowledgeErrorCode = code
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if epoch == shareEpochClose {
		gw.releaseShareSession(ctx, r, group, member, s)
		return resp, nil
	}
	for _, p := range named {
		if tg := targets[p]; tg.code != 0 {
			out.fail(tg)
		}
	}
	if req.IsRenewAck {
		return resp, nil
	}
	var parts []*shareFetchPart
	for _, p := range s.parts {
		if tg := targets[p]; tg.code == 0 {
			parts = append(parts, &shareFetchPart{tg: tg})
		}
	}
	gw.shareAcquire(ctx, r, req, group, member, cfg, lock, parts)
	for _, p := range parts {
		if len(p.got) == 0 && p.ErrorCode == 0 {
			continue
		}
		sp := out.partition(p.tg)
		sp.ErrorCode = p.ErrorCode
		sp.Records = p.data
		for _, a := range p.got {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
			sp.AcquiredRecords = append(sp.AcquiredRecords, ar)
		}
	}
	return resp, nil
}

// shareAcquire fetches parts and acquires what it read for member, until
// it acquired something, max_wait_ms passed, or ctx ended. Between
// rounds it waits for new records or for records to come free.
func (gw *Gateway) shareAcquire(ctx context.Context, r *request, req *kmsg.ShareFetchRequest, group, member string, cfg plog.ShareGroupConfig, lock time.Duration, parts []*shareFetchPart) {
	if len(parts) == 0 {
		return
	}
	tn := r.Tenant()
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	maxBytes := int(gw.cfg.FetchMaxBytes)
	if req.MaxBytes > 0 && int(req.MaxBytes) < maxBytes {
		maxBytes = int(req.MaxBytes)
	}
	budget := int(req.MaxRecords)
	for {
		var reads []*plog.FetchPart
		var avails []<-chan struct{}
		for _, p := range parts {
			if p.ErrorCode != 0 {
				continue
			}
			ps := gw.sharePartition(tn, p.tg)
			offset, ok, avail, code := ps.ShareFetchOffset(ctx, group, gw.shareStart(tn, p.tg, cfg))
			if code != 0 {
				p.ErrorCode = code
				continue
			}
			avails = append(avails, avail)
			if !ok {
				continue
			}
			pm := p.tg.topic.Partitions[p.tg.ref.partition]
			p.FetchPart = plog.FetchPart{
				Partition: ps, Kafka: p.tg.topic.Format == FormatKafka, Offset: offset, Limit: maxBytes,
				Committed: cfg.ReadCommitted, Earliest: pm.Earliest, Next: pm.Next,
				HighWatermark: -1, LogStartOffset: -1, LastStableOffset: -1,
			}
			reads = append(reads, &p.FetchPart)
		}
		if len(avails) == 0 {
			return // every partition failed
		}
		stop, cancel := gw.shareWake(ctx, avails)
		if len(reads) > 0 {
			tn.parts.Fetch(ctx, reads, deadline, 1, maxBytes, stop)
		} else {
			wait := time.NewTimer(time.Until(deadline))
			select {
			case <-stop:
			case <-wait.C:
			case <-ctx.Done():
			}
			wait.Stop()
		}
		cancel()
		acquired := 0
		for _, p := range parts {
			if p.Partition == nil || p.ErrorCode != 0 && p.ErrorCode != kerr.OffsetOutOfRange.Code {
				continue
			}
			n := gw.shareTake(r, p, group, member, budget-acquired, lock, req.MaxRecords > 0)
			acquired += n
			p.Partition, p.Batches, p.Records = nil, nil, nil
		}
		if acquired > 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			return
		}
	}
}

// shareWake returns a channel closed when any of avails is, or the
// gateway drains, and the cancel that ends its watching.
func (gw *Gateway) shareWake(ctx context.Context, avails []<-chan struct{}) (<-chan struct{}, context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	var once sync.Once
	fire := func() { once.Do(func() { close(stop) }) }
	watch := func(c <-chan struct{}) {
		select {
		case <-c:
			fire()
		case <-wctx.Done():
		}
	}
	for _, a := range avails {
		go watch(a)
	}
	go watch(gw.draining)
	return stop, cancel
}

// shareTake hands member what the read of p found, at most budget records
// when capped, and keeps the batches that hold them for the response. It
// returns how many records were acquired.
func (gw *Gateway) shareTake(r *request, p *shareFetchPart, group, member string, budget int, lock time.Duration, capped bool) int {
	ps := p.Partition
	if p.ErrorCode == kerr.OffsetOutOfRange.Code {
		if p.LogStartOffset > p.Offset {
			ps.ShareMoveLogStart(group, p.LogStartOffset)
		}
		p.ErrorCode = 0
		return 0
	}
	if capped && budget <= 0 {
		return 0
	}
	type stored struct {
		first, last int64
		data        []byte
	}
	var batches []stored
	var ranges []sharestate.Range
	if p.Kafka {
		for i := range p.Batches {
			b := &p.Batches[i]
			data := b.Data
			if b.File.Len > 0 {
				var err error
				if data, err = b.File.AppendTo(nil); err != nil {
					gw.log.Error().Err(err).Str("topic", p.tg.topic.Name).Msg("share fetch: reading record batches from the record log failed")
					p.ErrorCode = kerr.KafkaStorageError.Code
					return 0
				}
			}
			info, ok := protocol.ParseBatchInfo(data)
			if !ok {
				continue
			}
			batches = append(batches, stored{info.BaseOffset, info.LastOffset(), data})
			// Control batches and aborted transactions' batches are
			// gaps: never delivered.
			if !info.Control() && !(p.Committed && info.Transactional() && abortedBatch(p.Aborted, info)) {
				ranges = append(ranges, sharestate.Range{First: info.BaseOffset, Last: info.LastOffset()})
			}
		}
	} else {
		for _, rec := range p.Records {
			ranges = append(ranges, sharestate.Range{First: rec.Offset, Last: rec.Offset})
		}
	}
	if len(ranges) == 0 && len(batches) == 0 {
		return 0
	}
	maxRecords := 0
	if capped {
		maxRecords = budget
	}
	got, code := ps.ShareAcquire(group, sharestate.AcquireRequest{Member: member, From: p.Offset, Batches: ranges, MaxRecords: maxRecords, Lock: lock})
	if code != 0 {
		p.ErrorCode = code
		return 0
	}
	n := 0
	for _, a := range got {
		n += int(a.Last - a.First + 1)
	}
	if n == 0 {
		return 0
	}
	gw.metrics.ShareRecords.WithLabelValues("acquired").Add(float64(n))
	p.got = append(p.got, got...)
	if p.Kafka {
		for _, b := range batches {
			if overlaps(got, b.first, b.last) {
				p.data = append(p.data, b.data...)
			}
		}
		return n
	}
	var recs []protocol.Record
	for _, rec := range p.Records {
		if overlaps(got, rec.Offset, rec.Offset) {
			recs = append(recs, rec)
		}
	}
	data, err := protocol.AppendBatch(nil, recs, protocol.CodecNone, 0)
	if err != nil {
		gw.log.Error().Err(err).Str("topic", p.tg.topic.Name).Msg("share fetch: encoding a record batch failed")
		p.ErrorCode = kerr.UnknownServerError.Code
		return n
	}
	p.data = append(p.data, data...)
	return n
}

// abortedBatch reports whether a transactional batch belongs to one of
// the aborted transactions a read_committed read listed.
func abortedBatch(aborted []plog.Aborted, info protocol.BatchInfo) bool {
	for _, a := range aborted {
		if a.ProducerID == info.ProducerID && a.FirstOffset <= info.BaseOffset && info.BaseOffset <= a.LastOffset {
			return true
		}
	}
	return false
}

// overlaps reports whether any acquired run meets [first, last].
func overlaps(got []sharestate.AcquiredRecords, first, last int64) bool {
	for _, a := range got {
		if a.First <= last && first <= a.Last {
			return true
		}
	}
	return false
}

// shareFetchAnswer builds a ShareFetch response's partitions, grouped by
// topic, in the order they are first answered.
type shareFetchAnswer struct {
	gw    *Gateway
	r     *request
	resp  *kmsg.ShareFetchResponse
	index map[sharePart][2]int
}

func newShareFetchAnswer(gw *Gateway, r *request, resp *kmsg.ShareFetchResponse) *shareFetchAnswer {
	return &shareFetchAnswer{gw: gw, r: r, resp: resp, index: make(map[sharePart][2]int)}
}

// partition is tg's answer, added on first use.
func (a *shareFetchAnswer) partition(tg *shareTarget) *kmsg.ShareFetchResponseTopicPartition {
	if at, ok := a.index[tg.ref]; ok {
		return &a.resp.Topics[at[0]].Partitions[at[1]]
	}
	ti := -1
	for i := range a.resp.Topics {
		if a.resp.Topics[i].TopicID == tg.ref.topic {
			ti = i
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = tg.ref.topic
		a.resp.Topics = append(a.resp.Topics, t)
		ti = len(a.resp.Topics) - 1
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition = tg.ref.partition
	sp.Records = []byte{}
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
	t := &a.resp.Topics[ti]
	t.Partitions = append(t.Partitions, sp)
	a.index[tg.ref] = [2]int{ti, len(t.Partitions) - 1}
	return &t.Partitions[len(t.Partitions)-1]
}

// fail answers tg's fetch with its code and, when another gateway leads
// it, that gateway as leader with its endpoint (KIP-951).
func (a *shareFetchAnswer) fail(tg *shareTarget) {
	sp := a.partition(tg)
	sp.ErrorCode = tg.code
	if tg.code != kerr.NotLeaderForPartition.Code || tg.topic == nil {
		return
	}
	owner := a.gw.partitionOwner(tg.topic.Name, tg.ref.partition)
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = owner.ID, 0
	eps := a.resp.NodeEndpoints
	if host, port, add := a.gw.leaderEndpoint(a.r, owner, len(eps), func(i int) int32 { return eps[i].NodeID }); add {
		e := kmsg.NewShareFetchResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port = owner.ID, host, port
		a.resp.NodeEndpoints = append(a.resp.NodeEndpoints, e)
	}
}
