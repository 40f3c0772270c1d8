package groupcoord

import (
	"container/heap"
	"time"
)

// timerKind says which deadline of a group is next.
type timerKind uint8

const (
	timerNone            timerKind = iota
	timerJoin                      // the join phase of PreparingRebalance ends
	timerSync                      // members that got their JoinGroup answer must have synced
	timerSession                   // a member has been silent for its session timeout
	timerPending                   // a member told MEMBER_ID_REQUIRED did not come back
	timerExpire                    // an Empty group's retention passed
	timerConsumerSession           // a consumer-protocol member has been silent for its session timeout
	timerConsumerRevoke            // a consumer-protocol member did not revoke within its rebalance timeout
	timerShareSession              // a share group member has been silent for its session timeout
)

// timer is a group's earliest deadline and what to do when it passes.
type timer struct {
	at      time.Time
	kind    timerKind
	member  *member
	pending *pendingMember
	cmember *consumerMember
}

// offer keeps the earlier of t and a new deadline; on a tie the one offered
// first wins, which makes the order of simultaneous deadlines fixed.
func (t *timer) offer(at time.Time, kind timerKind, m *member, p *pendingMember) {
	if t.kind == timerNone || at.Before(t.at) {
		*t = timer{at: at, kind: kind, member: m, pending: p}
	}
}

// offerConsumer is offer for a consumer-protocol or share group member's
// deadline.
func (t *timer) offerConsumer(at time.Time, kind timerKind, m *consumerMember) {
	if t.kind == timerNone || at.Before(t.at) {
		*t = timer{at: at, kind: kind, cmember: m}
	}
}

// nextTimer computes the group's earliest deadline: the join phase, the sync
// deadline, then sessions in join order, then pending members, then the
// expiry of an Empty group that waits for no pending member.
func (g *group) nextTimer() timer {
	var t timer
	if g.state == statePreparingRebalance {
		t.offer(g.joinDeadline, timerJoin, nil, nil)
	}
	if !g.syncDeadline.IsZero() {
		t.offer(g.syncDeadline, timerSync, nil, nil)
	}
	for _, m := range g.members {
		if m.join == nil && m.sync == nil {
			t.offer(m.lastHeard.Add(m.sessionTimeout), timerSession, m, nil)
		}
	}
	for _, p := range g.pending {
		t.offer(p.expires, timerPending, nil, p)
	}
	if g.cg != nil {
		for _, m := range g.cg.members {
			t.offerConsumer(m.lastHeard.Add(m.sessionTimeout), timerConsumerSession, m)
			if m.state == memberUnrevoked {
				t.offerConsumer(m.revokeDeadline, timerConsumerRevoke, m)
			}
		}
	}
	if g.sg != nil {
		for _, m := range g.sg.members {
			t.offerConsumer(m.lastHeard.Add(m.sessionTimeout), timerShareSession, m)
		}
	}
	if g.empty() {
		t.offer(g.expiresAt(), timerExpire, nil, nil)
	}
	return t
}

// fire carries out a due deadline as of its own time.
func (g *group) fire(t timer) {
	switch t.kind {
	case timerJoin:
		g.joinPhaseEnded(t.at)
	case timerSync:
		g.syncDeadlinePassed(t.at)
	case timerSession:
		g.c.log.Info().Str("group", g.id).Str("member", t.member.id).Msg("member session expired")
		g.removeMemberAndUpdate(t.at, t.member, "session timeout of "+t.member.id)
	case timerPending:
		g.removePending(t.pending.id)
		g.tryCompleteJoin(t.at)
	case timerExpire:
		g.expire()
	case timerConsumerSession:
		g.c.log.Info().Str("group", g.id).Str("member", t.cmember.id).Msg("consumer group member session expired")
		g.removeConsumerMember(t.at, t.cmember, "session timeout of "+t.cmember.id)
	case timerConsumerRevoke:
		g.c.log.Info().Str("group", g.id).Str("member", t.cmember.id).Msg("consumer group member did not revoke its partitions in time")
		g.removeConsumerMember(t.at, t.cmember, "rebalance timeout of "+t.cmember.id)
	case timerShareSession:
		g.c.log.Info().Str("group", g.id).Str("member", t.cmember.id).Msg("share group member session expired")
		g.removeShareMember(t.at, t.cmember, "session timeout of "+t.cmember.id)
	}
}

// advance carries out every deadline at or before now, earliest first.
func (c *Coordinator) advance(now time.Time) {
	for len(c.timers) > 0 && !c.timers[0].next.at.After(now) {
		g := c.timers[0]
		// Recomputed, so a stale heap entry can never fire a deadline that
		// has since moved.
		if t := g.nextTimer(); t.kind != timerNone && !t.at.After(now) {
			g.fire(t)
		}
		if c.groups[g.id] == g {
			c.schedule(g)
		}
	}
}

// schedule places g in the timer heap by its earliest deadline, or takes it
// out when it waits for none. Every change to a group is followed by one.
func (c *Coordinator) schedule(g *group) {
	g.next = g.nextTimer()
	switch {
	case g.next.kind == timerNone && g.timerIndex >= 0:
		heap.Remove(&c.timers, g.timerIndex)
	case g.next.kind == timerNone:
	case g.timerIndex >= 0:
		heap.Fix(&c.timers, g.timerIndex)
	default:
		heap.Push(&c.timers, g)
	}
}

// unschedule takes g out of the timer heap for good.
func (c *Coordinator) unschedule(g *group) {
	if g.timerIndex >= 0 {
		heap.Remove(&c.timers, g.timerIndex)
	}
}

// timerHeap orders groups by their earliest deadline so that Tick and Ready
// cost O(log groups), not a scan of every member of every group.
type timerHeap []*group

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].next.at.Before(h[j].next.at) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].timerIndex = i
	h[j].timerIndex = j
}

func (h *timerHeap) Push(x any) {
	g := x.(*group)
	g.timerIndex = len(*h)
	*h = append(*h, g)
}

func (h *timerHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	g.timerIndex = -1
	return g
}
