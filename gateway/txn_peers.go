package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/txns"
	"github.com/disgw/disgw/txncoord"
)

// Transactions between gateways (docs/design.md §13, "Between
// gateways"): the coordinator of a transactional id is the owner of its
// state partition, and what it asks of a partition or a group another
// gateway owns, and they of it, goes as a Kafka request over a peer
// connection (cluster.PeerClients, signed in with cluster.MechPeer).

// PeerCaller sends a Kafka request to another gateway and returns its
// answer (cluster.PeerClients); it does not retry.
type PeerCaller interface {
	Request(ctx context.Context, p cluster.Peer, req kmsg.Request) (kmsg.Response, error)
}

// Tags of the requests one gateway forwards to another, in the range the
// probes' tags use, which Kafka does not.
const (
	// peerVersionTag carries the client's version of a forwarded
	// TxnOffsetCommit, whose meaning depends on it; the forward itself
	// goes at the highest version, so the tag has a place.
	peerVersionTag = 0x4449
	// peerPendingTag marks an OffsetFetch that asks only which of its
	// partitions have offsets pending in a transaction this gateway
	// coordinates.
	peerPendingTag = 0x444a
)

// transactional reports whether tn's transactional ids are served here: a
// gateway alone serves every tenant's; gateways with peers serve their own
// tenant's, whose DIS credentials every one of them holds. A passthrough
// tenant's credentials stay on the gateway the client signed in to, so
// its markers could not be written by another gateway.
func (gw *Gateway) transactional(tn *tenant) bool {
	if gw.cfg.Membership.Changed() == nil {
		return true
	}
	return gw.cfg.Peers != nil && tn == gw.tenant
}

// txnCoordinator is the gateway that coordinates transactional id: the
// owner of its state partition.
func (gw *Gateway) txnCoordinator(id string) cluster.Peer {
	return gw.partitionOwner(txnStateTopic, txns.PartitionOf(id, gw.cfg.TransactionStatePartitions))
}

// coordinatesTxnPartition reports whether this gateway coordinates the ids
// of state partition p: it owns it and, if it just started, its peers have
// let go (groupHandover), as for groups.
func (gw *Gateway) coordinatesTxnPartition(p int32) bool {
	return gw.ownsPartition(txnStateTopic, p) && gw.handover.over(gw.cfg.NodeID, gw.cfg.Membership.Live())
}

// askTxnCoordinator hands req for transactional id to its coordinator, in
// process or at the peer that is, and returns the answer, or a code when
// there is none.
func (gw *Gateway) askTxnCoordinator(ctx context.Context, tn *tenant, id string, req kmsg.Request) (kmsg.Response, int16) {
	owner := gw.txnCoordinator(id)
	if owner.ID == gw.cfg.NodeID {
		return gw.txns.Step(ctx, tn, id, req)
	}
	return gw.callPeer(ctx, owner, req, kerr.NotCoordinator.Code)
}

// callPeer sends req to peer p and returns its answer, or unreachable (or
// REQUEST_TIMED_OUT past ctx's deadline) when p did not answer.
func (gw *Gateway) callPeer(ctx context.Context, p cluster.Peer, req kmsg.Request, unreachable int16) (kmsg.Response, int16) {
	if gw.cfg.Peers == nil {
		return nil, unreachable
	}
	resp, err := gw.cfg.Peers.Request(ctx, p, req)
	if err == nil {
		return resp, 0
	}
	if gw.ctx.Err() == nil { // a stopping gateway's calls fail; that is no news
		gw.log.Warn().Int32("peer", p.ID).Str("api", kmsg.NameForKey(req.Key())).Err(err).Msg("a call to a peer gateway failed")
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return nil, kerr.RequestTimedOut.Code
	}
	return nil, unreachable
}

// peerMarker writes marker m into partition tp at owner, the partition's
// owner, as WriteTxnMarkers.
func (gw *Gateway) peerMarker(ctx context.Context, owner cluster.Peer, tp txncoord.TopicPartition, m plog.Marker) int16 {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = tp.Topic, []int32{tp.Partition}
	mk.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{mt}
	req.Markers = []kmsg.WriteTxnMarkersRequestMarker{mk}
	resp, code := gw.callPeer(ctx, owner, req, kerr.NotLeaderForPartition.Code)
	if code != 0 {
		return code
	}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == tp.Topic && rp.Partition == tp.Partition {
					return rp.ErrorCode
				}
			}
		}
	}
	return kerr.UnknownServerError.Code
}

// forwardTxnOffsetCommit hands a TxnOffsetCommit the group's coordinator
// (this gateway) checked to the transaction's coordinator at owner, which
// keeps the offsets pending in the transaction's state.
func (gw *Gateway) forwardTxnOffsetCommit(ctx context.Context, owner cluster.Peer, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	fwd := *req
	fwd.UnknownTags = kmsg.Tags{}
	fwd.UnknownTags.Set(peerVersionTag, []byte{byte(req.Version)})
	resp, code := gw.callPeer(ctx, owner, &fwd, kerr.CoordinatorNotAvailable.Code)
	if code != 0 {
		return txnOffsetCommitError(req, code)
	}
	resp.SetVersion(req.Version)
	return resp
}

// forwardedVersion is the client's version a forwarded request carries
// (peerVersionTag), ok=false when it carries none.
func forwardedVersion(tags *kmsg.Tags) (version int16, ok bool) {
	tags.Each(func(key uint32, val []byte) {
		if key == peerVersionTag && len(val) == 1 {
			version, ok = int16(val[0]), true
		}
	})
	return version, ok
}

// hasTag reports whether tags carry key.
func hasTag(tags *kmsg.Tags, key uint32) bool {
	found := false
	tags.Each(func(k uint32, _ []byte) { found = found || k == key })
	return found
}

// pendingAtPeers marks the partitions of out that have offsets pending in
// a transaction another gateway coordinates, asking each gateway that owns
// a state partition; one that does not answer leaves the group
// COORDINATOR_NOT_AVAILABLE, and the consumer asks again.
func (gw *Gateway) pendingAtPeers(ctx context.Context, out *kmsg.OffsetFetchResponseGroup) {
	asked := make(map[int32]bool)
	for p := range gw.cfg.TransactionStatePartitions {
		owner := gw.partitionOwner(txnStateTopic, p)
		if owner.ID == gw.cfg.NodeID || asked[owner.ID] {
			continue
		}
		asked[owner.ID] = true
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		req.UnknownTags.Set(peerPendingTag, nil)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = out.Group
		for _, t := range out.Topics {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic = t.Topic
			for _, tp := range t.Partitions {
				rt.Partitions = append(rt.Partitions, tp.Partition)
			}
			g.Topics = append(g.Topics, rt)
		}
		req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		resp, code := gw.callPeer(ctx, owner, req, kerr.CoordinatorNotAvailable.Code)
		if code == 0 {
			groups := resp.(*kmsg.OffsetFetchResponse).Groups
			if len(groups) != 1 {
				code = kerr.CoordinatorNotAvailable.Code
			} else if code = groups[0].ErrorCode; code == 0 {
				markUnstable(out, func(topic string, partition int32) bool {
					for _, t := range groups[0].Topics {
						for _, tp := range t.Partitions {
							if t.Topic == topic && tp.Partition == partition {
								return tp.ErrorCode == kerr.UnstableOffsetCommit.Code
							}
						}
					}
					return false
				})
			}
		}
		if code != 0 {
			out.ErrorCode = code
			return
		}
	}
}

// markUnstable answers UNSTABLE_OFFSET_COMMIT for the partitions of out
// pending says have offsets pending.
func markUnstable(out *kmsg.OffsetFetchResponseGroup, pending func(topic string, partition int32) bool) {
	for i := range out.Topics {
		t := &out.Topics[i]
		for j := range t.Partitions {
			if p := &t.Partitions[j]; p.ErrorCode == 0 && pending(t.Topic, p.Partition) {
				p.ErrorCode, p.Offset, p.LeaderEpoch, p.Metadata = kerr.UnstableOffsetCommit.Code, -1, -1, nil
			}
		}
	}
}

// answerPendingOffsets answers a peer's OffsetFetch marked peerPendingTag:
// each partition UNSTABLE_OFFSET_COMMIT when a transaction this gateway
// coordinates holds offsets of the group pending for it, else no error.
func (gw *Gateway) answerPendingOffsets(ctx context.Context, tn *tenant, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	code := gw.txns.LoadAll(ctx, tn)
	for _, g := range req.Groups {
		out := offsetFetchGroupError(offsetFetchGroup{g.Group, g.Topics, g.MemberID, g.MemberEpoch}, code)
		if code == 0 {
			gw.txns.With(tn, func(c *txncoord.Coordinator) {
				markUnstable(&out, func(topic string, partition int32) bool { return c.PendingOffsets(g.Group, topic, partition) })
			})
		}
		resp.Groups = append(resp.Groups, out)
	}
	return resp
}

// loadTxnStateEverywhere makes every gateway load the state partitions it
// coordinates, when a data partition's recovery found transactions open:
// whichever gateway coordinates them then finishes or times them out.
// Peers are asked with ListTransactions, which loads them.
func (gw *Gateway) loadTxnStateEverywhere(ctx context.Context, tn *tenant) {
	if code := gw.loadOwnedTxnState(ctx, tn); code != 0 && gw.ctx.Err() == nil {
		gw.log.Warn().Str("error", kerr.ErrorForCode(code).Error()).Msg("loading transaction state for a partition's open transactions failed; it loads on first use")
	}
	if gw.cfg.Membership.Changed() == nil || !gw.transactional(tn) {
		return
	}
	for _, p := range gw.cfg.Membership.Live() {
		if p.ID == gw.cfg.NodeID {
			continue
		}
		resp, code := gw.callPeer(ctx, p, kmsg.NewPtrListTransactionsRequest(), kerr.CoordinatorNotAvailable.Code)
		if code == 0 {
			code = resp.(*kmsg.ListTransactionsResponse).ErrorCode
		}
		if code != 0 && gw.ctx.Err() == nil {
			gw.log.Warn().Int32("peer", p.ID).Str("error", kerr.ErrorForCode(code).Error()).Msg("a peer could not load its transaction state")
		}
	}
}

// takeTxnState loads the state partitions this gateway coordinates once
// the live set changed, so a transaction a stopped coordinator left
// prepared or open is finished or timed out here without waiting for a
// client to ask.
func (gw *Gateway) takeTxnState() {
	if !gw.transactional(gw.tenant) {
		return
	}
	gw.panics.Go("transaction state takeover", func() {
		ctx, cancel := context.WithTimeout(gw.ctx, gw.cfg.RequestTimeout)
		defer cancel()
		if code := gw.loadOwnedTxnState(ctx, gw.tenant); code != 0 && gw.ctx.Err() == nil {
			gw.log.Warn().Str("error", kerr.ErrorForCode(code).Error()).Msg("taking over transaction state failed; it loads on first use")
		}
	})
}

// loadOwnedTxnState loads every state partition of tn this gateway
// coordinates, after asking DIS afresh whether the state topic exists: a
// takeover must not miss it for an "unknown" the catalog remembers from
// before another gateway created it.
func (gw *Gateway) loadOwnedTxnState(ctx context.Context, tn *tenant) int16 {
	if _, err := tn.catalog.Refresh(ctx, txnStateTopic); err != nil && !errors.Is(err, topics.ErrUnknownTopic) {
		return kafkaCodeForDIS(err)
	}
	return gw.txns.LoadAll(ctx, tn)
}
