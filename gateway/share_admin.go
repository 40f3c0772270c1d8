package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/sharestore"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/groupcoord"
)

// The share group admin APIs (docs/design.md §14): DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets go to the group's
// coordinator, which checks the group and asks each partition's owner for
// what its partition log holds: in process, or over a peer connection
// (txn_peers.go) with the same API key marked with peerShareTag.
// DeleteGroups of a share group deletes its state the same way.

// peerShareTag marks a share admin request (keys 90–92) a group's
// coordinator sends to another gateway for the partitions it owns: the
// callee serves the partitions named, answering NOT_LEADER_OR_FOLLOWER for
// any it no longer owns, without the group's checks, which the coordinator
// made. DeleteShareGroupOffsets names topics only, so in a forwarded one
// each topic carries the tag too, its value the partitions to delete, 4
// bytes big-endian each. It follows the tags of txn_peers.go and share_peers.go.
const peerShareTag = 0x4450

// shareOp is what the share admin APIs do to one share-partition.
type shareOp int8

const (
	// shareDescribe reads the start offset and the lag.
	shareDescribe shareOp = iota
	// shareAlter moves the start offset.
	shareAlter
	// shareDelete forgets the share-partition.
	shareDelete
)

// shareAdminPart is one partition a share admin API acts on; offset is
// AlterShareGroupOffsets' new start offset.
type shareAdminPart struct {
	t      *topics.Meta
	p      int32
	offset int64
}

// shareResult is the answer for one shareAdminPart: start and lag are -1 when
// unknown (a share-partition the group never read has neither).
type shareResult struct {
	start, lag int64
	code       int16
}

// shareFailed is a shareResult for a partition that was not served.
func shareFailed(code int16) shareResult { return shareResult{start: -1, lag: -1, code: code} }

// shareGroupCode is what group is to the share admin APIs: 0 for a share
// group, GROUP_ID_NOT_FOUND for a classic or consumer group as Kafka
// answers, and, when empty is set, NON_EMPTY_GROUP for a share group with
// members. A group the coordinator does not hold is an empty share group
// (one is forgotten after a while, its state kept with the partitions)
// unless it has committed offsets, which only classic and consumer groups
// keep in a DIS app.
func (gw *Gateway) shareGroupCode(ctx context.Context, tn *tenant, group string, empty bool) int16 {
	var code int16
	held := false
	gw.groups.With(tn, func(c *groupcoord.Coordinator) {
		if d := c.DescribeShare(group); d.ErrorCode == 0 {
			held = true
			if empty && len(d.Members) > 0 {
				code = kerr.NonEmptyGroup.Code
			}
			return
		}
		if _, ok := c.Describe(group); ok {
			held, code = true, kerr.GroupIDNotFound.Code
		}
	})
	if held {
		return code
	}
	stored, err := gw.groups.GroupStored(ctx, tn, group)
	switch {
	case err != nil:
		return kafkaCodeForDIS(err)
	case stored:
		return kerr.GroupIDNotFound.Code
	}
	return 0
}

// shareAtOwners does op to group's parts at their owners, this gateway's
// own in process and each other owner's in one peer request, and returns
// the answers in parts' order.
func (gw *Gateway) shareAtOwners(ctx context.Context, tn *tenant, group string, op shareOp, parts []shareAdminPart) []shareResult {
	out := make([]shareResult, len(parts))
	remote := make(map[int32][]int)
	owners := make(map[int32]cluster.Peer)
	for i, sp := range parts {
		owner := gw.partitionOwner(sp.t.Name, sp.p)
		if owner.ID == gw.cfg.NodeID {
			out[i] = gw.shareLocal(ctx, tn, group, op, sp)
			continue
		}
		owners[owner.ID] = owner
		remote[owner.ID] = append(remote[owner.ID], i)
	}
	for id, idx := range remote {
		gw.shareAtPeer(ctx, tn, owners[id], group, op, parts, idx, out)
	}
	return out
}

// shareLocal does op to group's share-partition sp, which this gateway
// owns. The lag is Kafka's (KIP-1226) without its count of records done
// above the start offset, which the partition log does not report: the
// high watermark less the start offset.
func (gw *Gateway) shareLocal(ctx context.Context, tn *tenant, group string, op shareOp, sp shareAdminPart) shareResult {
	ps := gw.partitionFor(tn.key(sp.t, sp.p))
	switch op {
	case shareAlter:
		return shareResult{code: ps.ShareResetStart(ctx, group, sp.offset)}
	case shareDelete:
		return shareResult{code: ps.ShareDelete(ctx, group)}
	}
	start, found, code := ps.ShareStartOffset(ctx, group)
	if code != 0 || !found {
		return shareFailed(code)
	}
	res := shareResult{start: start, lag: -1}
	hwm := kmsg.NewListOffsetsResponseTopicPartition()
	gw.listOffset(ctx, tn, sp.t, sp.p, listLatest, false, &hwm)
	if hwm.ErrorCode == 0 && hwm.Offset >= 0 {
		res.lag = max(hwm.Offset-start, 0)
	}
	return res
}

// shareAtPeer does op to the parts at indexes idx, which owner owns, with
// one request marked peerShareTag, and sets their answers in out.
// Gateways with peers serve only their own tenant's partitions for one
// another (a passthrough client's credentials stay with its gateway).
func (gw *Gateway) shareAtPeer(ctx context.Context, tn *tenant, owner cluster.Peer, group string, op shareOp, parts []shareAdminPart, idx []int, out []shareResult) {
	fail := func(code int16) {
		for _, i := range idx {
			out[i] = shareFailed(code)
		}
	}
	if tn != gw.tenant {
		fail(kerr.NotLeaderForPartition.Code)
		return
	}
	var req kmsg.Request
	switch op {
	case shareDescribe:
		req = peerShareDescribe(group, parts, idx)
	case shareAlter:
		req = peerShareAlter(group, parts, idx)
	default:
		req = peerShareDelete(group, parts, idx)
	}
	resp, code := gw.callPeer(ctx, owner, req, kerr.NotLeaderForPartition.Code)
	if code != 0 {
		fail(code)
		return
	}
	got := peerShareResults(resp)
	for _, i := range idx {
		res, ok := got[shareKey{parts[i].t.Name, parts[i].p}]
		if !ok && op == shareDelete {
			res, ok = got[shareKey{parts[i].t.Name, -1}]
		}
		if !ok {
			res = shareFailed(kerr.UnknownServerError.Code)
		}
		out[i] = res
	}
}

// shareKey names a partition in a peer's answer.
type shareKey struct {
	topic string
	p     int32
}

// byTopic groups the parts at indexes idx by topic, in order of first
// appearance.
func byTopic(parts []shareAdminPart, idx []int) [][]shareAdminPart {
	var out [][]shareAdminPart
	at := make(map[string]int)
	for _, i := range idx {
		j, ok := at[parts[i].t.Name]
		if !ok {
			j = len(out)
			at[parts[i].t.Name] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], parts[i])
	}
	return out
}

// peerShareDescribe is the DescribeShareGroupOffsets a coordinator sends
// for parts[idx].
func peerShareDescribe(group string, parts []shareAdminPart, idx []int) kmsg.Request {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.UnknownTags.Set(peerShareTag, nil)
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	for _, tps := range byTopic(parts, idx) {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic = tps[0].t.Name
		for _, sp := range tps {
			rt.Partitions = append(rt.Partitions, sp.p)
		}
		g.Topics = append(g.Topics, rt)
	}
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{g}
	return req
}

// peerShareAlter is the AlterShareGroupOffsets a coordinator sends for
// parts[idx].
func peerShareAlter(group string, parts []shareAdminPart, idx []int) kmsg.Request {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.UnknownTags.Set(peerShareTag, nil)
	req.GroupID = group
	for _, tps := range byTopic(parts, idx) {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = tps[0].t.Name
		for _, sp := range tps {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = sp.p, sp.offset
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// peerShareDelete is the DeleteShareGroupOffsets a coordinator sends for
// parts[idx], each topic's partitions in its peerShareTag.
func peerShareDelete(group string, parts []shareAdminPart, idx []int) kmsg.Request {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.UnknownTags.Set(peerShareTag, nil)
	req.GroupID = group
	for _, tps := range byTopic(parts, idx) {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = tps[0].t.Name
		var ps []byte
		for _, sp := range tps {
			ps = binary.BigEndian.AppendUint32(ps, uint32(sp.p))
		}
		rt.UnknownTags.Set(peerShareTag, ps)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// peerDeletePartitions reads the partitions a forwarded
// DeleteShareGroupOffsets topic names; ok is false when its tag is
// missing or malformed.
func peerDeletePartitions(tags *kmsg.Tags) (ps []int32, ok bool) {
	tags.Each(func(key uint32, val []byte) {
		if key != peerShareTag || len(val)%4 != 0 {
			return
		}
		ok = true
		for b := val; len(b) > 0; b = b[4:] {
			ps = append(ps, int32(binary.BigEndian.Uint32(b)))
		}
	})
	return ps, ok
}

// peerShareResults reads a peer's answer to a forwarded share admin
// request by partition; a forwarded delete answers per topic, under
// partition -1.
func peerShareResults(resp kmsg.Response) map[shareKey]shareResult {
	out := make(map[shareKey]shareResult)
	switch r := resp.(type) {
	case *kmsg.DescribeShareGroupOffsetsResponse:
		for _, g := range r.Groups {
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					code := p.ErrorCode
					if code == 0 {
						code = g.ErrorCode
					}
					out[shareKey{t.Topic, p.Partition}] = shareResult{start: p.StartOffset, lag: p.Lag, code: code}
				}
			}
		}
	case *kmsg.AlterShareGroupOffsetsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				code := p.ErrorCode
				if code == 0 {
					code = r.ErrorCode
				}
				out[shareKey{t.Topic, p.Partition}] = shareResult{code: code}
			}
		}
	case *kmsg.DeleteShareGroupOffsetsResponse:
		for _, t := range r.Topics {
			code := t.ErrorCode
			if code == 0 {
				code = r.ErrorCode
			}
			out[shareKey{t.Topic, -1}] = shareResult{code: code}
		}
	}
	return out
}

// shareKeysByTopic lists group's share-partitions with kept state by
// topic, topics sorted. Those of a topic deleted since (no topic of that
// name, or one over another stream) are stale: left out, and returned
// apart for deletion.
func (gw *Gateway) shareKeysByTopic(ctx context.Context, tn *tenant, group string) (names []string, parts map[string][]int32, stale []sharestore.Key, err error) {
	keys, err := tn.parts.ShareKeys(ctx, group)
	if err != nil {
		return nil, nil, nil, err
	}
	parts = make(map[string][]int32)
	streams := make(map[string]string) // each name's stream now, "" when none
	for _, k := range keys {
		stream, known := streams[k.Topic]
		if !known {
			t, err := tn.catalog.Get(ctx, k.Topic)
			switch {
			case err == nil:
				stream = t.StreamID
			case !errors.Is(err, topics.ErrUnknownTopic):
				return nil, nil, nil, err
			}
			streams[k.Topic] = stream
		}
		if k.Stream != stream {
			stale = append(stale, k)
			continue
		}
		if _, ok := parts[k.Topic]; !ok {
			names = append(names, k.Topic)
		}
		parts[k.Topic] = append(parts[k.Topic], k.Partition)
	}
	slices.Sort(names)
	return names, parts, stale, nil
}

// deleteShareState deletes group's share-partitions at their owners:
// those of the topics in only, or, with only nil (DeleteGroups), those of
// every topic that still exists; a share-partition of a topic deleted
// since, which no partition log holds, is deleted from the kept state
// directly. It returns the code of each topic it found state of, by
// name, and a code for the whole group when the state could not be
// listed.
func (gw *Gateway) deleteShareState(ctx context.Context, tn *tenant, group string, only map[string]*topics.Meta) (found map[string]int16, code int16) {
	names, held, stale, err := gw.shareKeysByTopic(ctx, tn, group)
	if err != nil {
		return nil, kafkaCodeForDIS(err)
	}
	for _, k := range stale {
		if _, named := only[k.Topic]; only != nil && !named {
			continue
		}
		if err := tn.shares.Delete(ctx, k); err != nil {
			gw.log.Warn().Err(err).Str("group", group).Str("topic", k.Topic).Int32("partition", k.Partition).
				Msg("deleting the share state of a deleted topic failed; it stays, unused")
		}
	}
	found = make(map[string]int16)
	var parts []shareAdminPart
	for _, name := range names {
		t := only[name]
		switch {
		case only != nil && t == nil:
			continue
		case only == nil:
			if t, err = tn.catalog.Refresh(ctx, name); errors.Is(err, topics.ErrUnknownTopic) {
				continue
			} else if err != nil {
				found[name] = kafkaCodeForDIS(err)
				continue
			}
		}
		found[name] = 0
		for _, p := range held[name] {
			if t.Readable(p) {
				parts = append(parts, shareAdminPart{t: t, p: p})
			}
		}
	}
	for i, res := range gw.shareAtOwners(ctx, tn, group, shareDelete, parts) {
		if name := parts[i].t.Name; found[name] == 0 {
			found[name] = res.code
		}
	}
	return found, 0
}

// deleteShareGroup deletes every share-partition of group, which
// DeleteGroups removes: 0 or the first topic's error, and whether there
// was any state.
func (gw *Gateway) deleteShareGroup(ctx context.Context, tn *tenant, group string) (found bool, code int16) {
	codes, code := gw.deleteShareState(ctx, tn, group, nil)
	names := make([]string, 0, len(codes))
	for name := range codes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if code == 0 {
			code = codes[name]
		}
	}
	return len(codes) > 0, code
}
