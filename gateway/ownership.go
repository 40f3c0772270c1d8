package gateway

import (
	"time"

	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/wire"
)

// The gateway obeys its Membership (docs/design.md §6): Metadata names each
// partition's owner as its leader and FindCoordinator each group's owner;
// a request for a partition or group this gateway does not own is answered
// as a Kafka follower or a former coordinator answers it, and when the live
// set changes the gateway lets go of what moved away.

// peerAddr is where clients of listener l reach peer p: this gateway at the
// listener's own advertised address, another at its host and first
// listener's port, shifted by this listener's offset from this gateway's
// first listener (every gateway lays its listeners out alike).
func (gw *Gateway) peerAddr(l *wire.Bound, p cluster.Peer) (string, int32) {
	if p.ID == gw.cfg.NodeID {
		return l.Host(), l.Port()
	}
	return p.Host, p.Port + l.Port() - gw.wire.Listeners()[0].Port()
}

// partitionOwner is the gateway that leads partition p of topic.
func (gw *Gateway) partitionOwner(topic string, p int32) cluster.Peer {
	return gw.cfg.Membership.Owner(cluster.PartitionKey(topic, p))
}

// ownsPartition reports whether this gateway leads partition p of topic.
func (gw *Gateway) ownsPartition(topic string, p int32) bool {
	return gw.partitionOwner(topic, p).ID == gw.cfg.NodeID
}

// coordinator is the gateway that coordinates group.
func (gw *Gateway) coordinator(group string) cluster.Peer {
	return gw.groupOwner(cluster.GroupKey(group))
}

// leaderEndpoint is the endpoint a KIP-951 leader hint gives for owner,
// on the listener r came in on; add is false when the response's n
// brokers (ids by id(i)) already list it.
func (gw *Gateway) leaderEndpoint(r *request, owner cluster.Peer, n int, id func(i int) int32) (host string, port int32, add bool) {
	for i := range n {
		if id(i) == owner.ID {
			return "", 0, false
		}
	}
	host, port = gw.peerAddr(r.Listener(), owner)
	return host, port, true
}

// coordinates reports whether this gateway coordinates group: it owns it
// and, if it just started, its peers have let go of their groups
// (groupHandover); meanwhile the group's requests are answered
// NOT_COORDINATOR and its clients ask again.
func (gw *Gateway) coordinates(group string) bool {
	return gw.coordinator(group).ID == gw.cfg.NodeID && gw.handover.over(gw.cfg.NodeID, gw.cfg.Membership.Live())
}

// movedRetryInterval is how often the gateway looks again for a partition
// that moved away but still had batches queued or a read running.
const movedRetryInterval = 50 * time.Millisecond

// followMembership runs until the gateway closes, letting go of the
// partitions, groups and transaction and share state partitions that
// moved away
// whenever the live set changes, and taking over the transaction state
// partitions it now coordinates (at start too), once its peers let go.
func (gw *Gateway) followMembership() {
	var retry <-chan time.Time
	take := gw.cfg.Membership.Changed() != nil
	if take {
		retry = time.After(0)
	}
	for {
		changed := gw.cfg.Membership.Changed()
		if changed == nil && retry == nil {
			return // a gateway alone: nothing ever moves
		}
		select {
		case <-gw.ctx.Done():
			return
		case <-changed:
			take = true
		case <-retry:
		}
		retry = nil
		gw.groups.UnloadMoved()
		gw.txns.UnloadMoved()
		gw.unloadMovedShareState()
		if take && gw.handover.over(gw.cfg.NodeID, gw.cfg.Membership.Live()) {
			gw.takeTxnState()
			take = false
		}
		if !gw.releaseMovedPartitions() || take {
			retry = time.After(movedRetryInterval)
		}
	}
}

// releaseMovedPartitions drops the state of every partition this gateway
// no longer leads (plog.Tenant.ReleaseMoved); it reports whether none is
// left.
func (gw *Gateway) releaseMovedPartitions() bool {
	done := true
	gw.forEachTenant(func(tn *tenant) {
		done = tn.parts.ReleaseMoved(gw.ownsPartition) && done
	})
	return done
}
