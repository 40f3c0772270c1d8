package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/topics"
)

// What ShareFetch (78) and ShareAcknowledge (79) share: resolving the
// partitions a request names, acknowledging, and starting a
// share-partition where share.auto.offset.reset says (docs/design.md §14).

// shareTarget is one partition a share request names, resolved: its topic,
// or the code it is answered with.
type shareTarget struct {
	ref   sharePart
	topic *topics.Meta
	code  int16
}

// shareTargets resolves the topic ids of refs, checking that r may read
// each topic and that this gateway leads each partition.
func (gw *Gateway) shareTargets(ctx context.Context, r *request, refs []sharePart) map[sharePart]*shareTarget {
	tn := r.Tenant()
	ids := make([][16]byte, 0, len(refs))
	for _, p := range refs {
		ids = append(ids, p.topic)
	}
	names := tn.catalog.NamesForIDs(ctx, ids, topics.NewCallBudget(gw.cfg.MaxDescribesPerRequest))
	metas := make(map[[16]byte]*topics.Meta)
	out := make(map[sharePart]*shareTarget, len(refs))
	for _, p := range refs {
		tg := &shareTarget{ref: p}
		out[p] = tg
		name, ok := names[p.topic]
		switch {
		case !ok:
			tg.code = kerr.UnknownTopicID.Code
			continue
		case isInternalTopic(name) || name == offsetsTopic:
			tg.code = kerr.InvalidRequest.Code
			continue
		case !gw.authorize(r, authz.OpRead, authz.ResourceTopic, name):
			tg.code = topicDenied
			continue
		}
		t := metas[p.topic]
		if t == nil {
			var err error
			t, err = tn.catalog.Get(ctx, name)
			switch {
			case errors.Is(err, topics.ErrUnknownTopic):
				tg.code = kerr.UnknownTopicID.Code
				continue
			case err != nil:
				tg.code = kafkaCodeForDIS(err)
				continue
			}
			metas[p.topic] = t
		}
		switch {
		case !t.Readable(p.partition):
			tg.code = kerr.UnknownTopicOrPartition.Code
		case !gw.ownsPartition(name, p.partition):
			tg.code = kerr.NotLeaderForPartition.Code
		}
		tg.topic = t
	}
	return out
}

// sharePartition is the partition log of a resolved target.
func (gw *Gateway) sharePartition(tn *tenant, tg *shareTarget) *plog.Partition {
	return gw.partitionFor(tn.key(tg.topic, tg.ref.partition))
}

// shareAckBatch is one acknowledgement batch as both requests carry it.
type shareAckBatch struct {
	first, last int64
	types       []int8
}

// shareAcknowledge applies member's acknowledgements of one partition and
// returns the partition's acknowledge error: the first range's failure
// (each range is applied or refused on its own, docs/design.md §14), or
// INVALID_REQUEST for a RENEW the request did not announce.
func (gw *Gateway) shareAcknowledge(ctx context.Context, tn *tenant, tg *shareTarget, group, member string, batches []shareAckBatch, renew bool, lock time.Duration) int16 {
	if tg.code != 0 {
		return tg.code
	}
	req := sharestate.AckRequest{Member: member, Lock: lock, Ranges: make([]sharestate.AckRange, 0, len(batches))}
	for _, b := range batches {
		ar := sharestate.AckRange{First: b.first, Last: b.last, Types: make([]sharestate.AckType, len(b.types))}
		for i, t := range b.types {
			if sharestate.AckType(t) == sharestate.Renew && !renew {
				return kerr.InvalidRequest.Code
			}
			ar.Types[i] = sharestate.AckType(t)
		}
		req.Ranges = append(req.Ranges, ar)
	}
	codes, code := gw.sharePartition(tn, tg).ShareAcknowledge(ctx, group, req)
	if code != 0 {
		return code
	}
	first := int16(0)
	for i, c := range codes {
		if c == 0 {
			gw.countShareAcks(req.Ranges[i])
		} else if first == 0 {
			first = c
		}
	}
	return first
}

// shareAckEvents names the disgw_share_records_total event of each
// acknowledgement type: a gap is an offset rejected for want of a record.
var shareAckEvents = [...]string{sharestate.Gap: "rejected", sharestate.Accept: "accepted", sharestate.Release: "released", sharestate.Reject: "rejected", sharestate.Renew: "renewed"}

// countShareAcks counts an applied acknowledgement range's offsets by
// type (an applied range's types are all known ones).
func (gw *Gateway) countShareAcks(r sharestate.AckRange) {
	count := func(t sharestate.AckType, n int64) {
		if int(t) >= 0 && int(t) < len(shareAckEvents) {
			gw.metrics.ShareRecords.WithLabelValues(shareAckEvents[t]).Add(float64(n))
		}
	}
	if len(r.Types) == 1 {
		count(r.Types[0], r.Last-r.First+1)
		return
	}
	for _, t := range r.Types {
		count(t, 1)
	}
}

// shareStart is where group's share-partition of tg starts when nothing
// was kept: share.auto.offset.reset's latest, earliest, or the first
// record at or after its duration ago (the high watermark when none).
func (gw *Gateway) shareStart(tn *tenant, tg *shareTarget, cfg plog.ShareGroupConfig) func(ctx context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		ts := int64(listLatest)
		switch cfg.Reset {
		case plog.ShareResetEarliest:
			ts = listEarliest
		case plog.ShareResetByDuration:
			ts = time.Now().Add(-cfg.ResetDuration).UnixMilli()
		}
		for {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			gw.listOffset(ctx, tn, tg.topic, tg.ref.partition, ts, false, &sp)
			if sp.ErrorCode != 0 {
				return 0, kerr.ErrorForCode(sp.ErrorCode)
			}
			if sp.Offset >= 0 || ts == listLatest {
				return sp.Offset, nil
			}
			ts = listLatest // no record that recent
		}
	}
}

// shareLock is the lock duration a group's records get, as a response
// reports it.
func (gw *Gateway) shareLock(cfg plog.ShareGroupConfig) time.Duration {
	if cfg.LockDuration > 0 {
		return cfg.LockDuration
	}
	return gw.shareLimits().LockDuration
}

// releaseShareSession releases what the member of a closed or replaced
// session holds on the session's partitions here.
func (gw *Gateway) releaseShareSession(ctx context.Context, r *request, group, member string, s *shareSession) {
	if s == nil || len(s.parts) == 0 {
		return
	}
	tn := r.Tenant()
	for _, tg := range gw.shareTargets(ctx, r, s.parts) {
		if tg.code == 0 {
			gw.sharePartition(tn, tg).ShareReleaseMember(group, member)
		}
	}
}

// deref is s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shareMemberLeft lets go of what member of group held on this gateway: its
// records here are released and its share session dropped (groupcoord's
// Ready.ShareDepartures).
func (gw *Gateway) shareMemberLeft(tn *tenant, group, member string) {
	tn.parts.ReleaseShareMember(group, member)
	gw.shareSessions.drop(shareSessionKey{tenant: tn.id, group: group, member: member})
}

// shareCall is a share request being served: its member's session, taken
// for the request, the session it replaced (epoch 0), and the group's
// configs.
type shareCall struct {
	group, member string
	epoch         int32
	key           shareSessionKey
	session       *shareSession
	replaced      *shareSession
	cfg           plog.ShareGroupConfig
	lock          time.Duration
}

// beginShare checks what both share requests carry (a group and member,
// READ on the group), takes the member's session for epoch and reads the
// group's configs; a code fails the whole request. A call must be ended.
func (gw *Gateway) beginShare(ctx context.Context, r *request, group, member *string, epoch int32, api string) (*shareCall, int16) {
	c := &shareCall{group: deref(group), member: deref(member), epoch: epoch}
	switch {
	case c.group == "" || c.member == "":
		return nil, kerr.InvalidRequest.Code
	case !gw.authorize(r, authz.OpRead, authz.ResourceGroup, c.group):
		return nil, groupDenied
	}
	tn := r.Tenant()
	c.key = shareSessionKey{tenant: tn.id, group: c.group, member: c.member}
	var code int16
	if c.session, c.replaced, code = gw.shareSessions.begin(c.key, epoch, time.Now()); code != 0 {
		return nil, code
	}
	cfg, err := gw.shareConfig(ctx, tn, c.group)
	if err != nil {
		gw.shareSessions.end(c.key, c.session, epoch)
		gw.log.Warn().Err(err).Str("group", c.group).Str("api", api).Msg("share request: reading the group's configs failed")
		return nil, kafkaCodeForDIS(err)
	}
	c.cfg, c.lock = cfg, gw.shareLock(cfg)
	return c, 0
}

// end finishes the call's turn in its session.
func (gw *Gateway) endShare(c *shareCall) { gw.shareSessions.end(c.key, c.session, c.epoch) }
