package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// groupDriver is the thin driver around the group coordinator state machine
// (docs/design.md §5): it feeds requests and the clock in, under one lock, and
// carries out what Ready returns: responses to waiting requests, and a timer
// for the next Tick; the DIS apps of groups that expired are deleted. All
// group membership lives in the coordinators; offsets live in DIS, written
// through one queue per group (offsets.go).
//
// Groups belong to a tenant: each tenant (one set of DIS credentials) has a
// coordinator of its own, so a tenant can neither see nor join, fence or
// evict another's groups, even under the same group id, and one tenant
// filling MaxGroups leaves the others their own. A passthrough tenant's
// coordinator goes when it holds no group; the gateway's own stays.
type groupDriver struct {
	gw  *Gateway
	cfg groupcoord.Config

	mu sync.Mutex
	// coords holds each tenant's coordinator by tenant id, which outlives
	// an idle tenant dropped and signed in again.
	coords  map[string]*tenantCoord
	nextID  uint64
	waiting map[uint64]groupWaiter
	timer   *time.Timer
	closed  bool
	// consumerSession and consumerHeartbeat are the consumer-protocol
	// group timings, defaults filled in, the same in every coordinator.
	consumerSession, consumerHeartbeat time.Duration
	// queues holds, per tenant and group, the offset writes not yet
	// started, in the order the coordinator accepted them; a key is
	// present while its worker runs.
	queues map[offsetQueueKey][]func()
	// committers are the tenants whose offsets of a group were committed
	// through its coordinator: whose DIS apps go when the group expires.
	committers map[groupKey]*tenant
}

// tenantCoord is one tenant's coordinator, with the access key its groups'
// series are labelled with. The coordinator is not safe for concurrent
// use: it is called only under groupDriver.mu (docs/design.md §11).
type tenantCoord struct {
	*groupcoord.Coordinator
	accessKey string
}

// groupKey names a group of one tenant's, by tenant id.
type groupKey struct {
	tenant, group string
}

func newGroupDriver(gw *Gateway) *groupDriver {
	d := &groupDriver{
		gw: gw,
		cfg: groupcoord.Config{
			MaxRebalanceTimeout:       gw.cfg.GroupMaxRebalanceTimeout,
			MaxGroupSize:              gw.cfg.GroupMaxSize,
			MaxPendingMembers:         gw.cfg.GroupMaxPendingMembers,
			MaxGroups:                 gw.cfg.MaxGroups,
			OffsetsRetention:          gw.cfg.OffsetsRetention,
			InitialRebalanceDelay:     gw.cfg.InitialRebalanceDelay,
			ConsumerSessionTimeout:    gw.cfg.ConsumerGroupSessionTimeout,
			ConsumerHeartbeatInterval: gw.cfg.ConsumerGroupHeartbeatInterval,
			NewMemberID:               newMemberID,
			Logger:                    gw.log.With().Str("component", "groupcoord").Logger(),
		},
		coords:     make(map[string]*tenantCoord),
		waiting:    make(map[uint64]groupWaiter),
		queues:     make(map[offsetQueueKey][]func()),
		committers: make(map[groupKey]*tenant),
	}
	d.consumerSession, d.consumerHeartbeat = groupcoord.New(d.cfg).ConsumerTimings()
	return d
}

// coordLocked is tn's coordinator, made on first use.
func (d *groupDriver) coordLocked(tn *tenant) *groupcoord.Coordinator {
	c := d.coords[tn.id]
	if c == nil {
		c = &tenantCoord{Coordinator: groupcoord.New(d.cfg), accessKey: tn.accessKey}
		d.coords[tn.id] = c
	}
	return c.Coordinator
}

// groupWaiter is a request waiting for the coordinator's answer.
type groupWaiter struct {
	req kmsg.Request
	// answer is buffered, so the driver never blocks on a request whose
	// handler stopped waiting (deadline passed, connection gone).
	answer chan kmsg.Response
}

// stepGroup is the handler of the membership APIs. It hands req to the
// driver on the dispatcher, so the coordinator sees a connection's
// requests in order, and waits for the answer concurrently: the
// coordinator decides when (a JoinGroup waits for the rebalance).
func stepGroup[Req kmsg.Request](_ context.Context, gw *Gateway, r *request, req Req) (kmsg.Response, continuation, error) {
	if !gw.authorize(r, authz.OpRead, authz.ResourceGroup, membershipGroup(req)) {
		return r.h.errorResponse(r, groupDenied), nil, nil
	}
	answer := gw.groups.step(r, req)
	return nil, func(ctx context.Context) (kmsg.Response, error) {
		select {
		case resp := <-answer:
			return resp, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, nil
}

// newMemberID is clientID-uuid, as Kafka makes member ids.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:4]) + "-" + hex.EncodeToString(b[4:6]) + "-" +
		hex.EncodeToString(b[6:8]) + "-" + hex.EncodeToString(b[8:10]) + "-" + hex.EncodeToString(b[10:])
}

// step hands one membership request to the coordinator; the answer
// arrives on the returned channel when the coordinator says so.
// A group this gateway does not coordinate, or any group once the gateway
// is draining, is answered NOT_COORDINATOR,
// judged under the driver's lock so that it cannot be loaded again after
// unloadMoved let go of it.
func (d *groupDriver) step(r *request, req kmsg.Request) <-chan kmsg.Response {
	return d.stepWith(r, req, membershipGroup(req), func(c *groupcoord.Coordinator, id uint64, clientID, host string) error {
		return c.Step(time.Now(), id, clientID, host, req)
	})
}

// stepConsumer hands a ConsumerGroupHeartbeat to the coordinator with the
// topic metadata looked up for it; it is answered at once.
func (d *groupDriver) stepConsumer(r *request, req *kmsg.ConsumerGroupHeartbeatRequest, topics groupcoord.Topics) kmsg.Response {
	return <-d.stepWith(r, req, req.Group, func(c *groupcoord.Coordinator, id uint64, clientID, host string) error {
		c.StepConsumer(time.Now(), id, clientID, host, req, topics)
		return nil
	})
}

// stepWith runs one Step-like call for group on the coordinator of the
// connection's tenant under the driver's lock, with the waiter for its
// answer registered under id.
func (d *groupDriver) stepWith(r *request, req kmsg.Request, group string, fn func(c *groupcoord.Coordinator, id uint64, clientID, host string) error) <-chan kmsg.Response {
	clientID := ""
	if r.hdr.ClientID != nil {
		clientID = *r.hdr.ClientID
	}
	w := groupWaiter{req: req, answer: make(chan kmsg.Response, 1)}
	d.mu.Lock()
	if d.closed || !d.gw.coordinates(group) {
		d.mu.Unlock()
		w.answer <- r.h.errorResponse(r, kerr.NotCoordinator.Code)
		return w.answer
	}
	d.nextID++
	id := d.nextID
	d.waiting[id] = w
	err := fn(d.coordLocked(r.tenant), id, clientID, r.s.remoteHost())
	ready := d.readyLocked()
	d.mu.Unlock()
	if err != nil {
		d.gw.log.Error().Err(err).Msg("group coordinator refused a request")
	}
	d.deliver(ready)
	return w.answer
}

// membershipGroup is the group a membership request is for.
func membershipGroup(req kmsg.Request) string {
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return r.Group
	case *kmsg.SyncGroupRequest:
		return r.Group
	case *kmsg.HeartbeatRequest:
		return r.Group
	case *kmsg.LeaveGroupRequest:
		return r.Group
	}
	return ""
}

// unloadMoved takes the groups another gateway now coordinates out of the
// coordinator: their waiting requests are answered NOT_COORDINATOR and
// every later one is too (step), so their members rejoin at the new
// coordinator, which loads their committed offsets from DIS on first use.
func (d *groupDriver) unloadMoved() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	for _, c := range d.coords {
		for _, g := range c.Groups() {
			if !d.gw.coordinates(g) {
				c.Unload(g)
				d.gw.log.Info().Str("group", g).Msg("group moved to another gateway: unloaded")
			}
		}
	}
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// tick advances the coordinators' clock.
func (d *groupDriver) tick() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	now := time.Now()
	for _, c := range d.coords {
		c.Tick(now)
	}
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// delivery pairs waiting requests with their responses.
type delivery struct {
	w    groupWaiter
	resp kmsg.Response
}

// readyLocked takes every coordinator's Ready, queues the deletion of
// expired groups' offsets behind their pending writes, drops passthrough
// tenants' coordinators left without groups, and arms the timer for the
// earliest deadline.
func (d *groupDriver) readyLocked() []delivery {
	var out []delivery
	var next time.Time
	for id, c := range d.coords {
		rd := c.Ready()
		d.gw.metrics.GroupsReady(id, c.accessKey, &rd)
		for _, rm := range rd.Removed {
			k := groupKey{id, rm.Group}
			tn := d.committers[k]
			delete(d.committers, k)
			if rm.ExpireOffsets && tn != nil {
				d.enqueueLocked(offsetQueueKey{tn, rm.Group}, func() { d.gw.expireOffsets(tn, rm.Group) })
			}
		}
		for _, resp := range rd.Responses {
			if w, ok := d.waiting[resp.ID]; ok {
				delete(d.waiting, resp.ID)
				out = append(out, delivery{w, resp.Msg})
			}
		}
		if !rd.NextTick.IsZero() && (next.IsZero() || rd.NextTick.Before(next)) {
			next = rd.NextTick
		}
		if id != "" && c.Len() == 0 && !d.writingLocked(id) {
			delete(d.coords, id)
		}
	}
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if !next.IsZero() && !d.closed {
		d.timer = time.AfterFunc(max(time.Until(next), 0), func() {
			defer d.gw.recoverPanic("group coordinator tick", nil)
			d.tick()
		})
	}
	return out
}

// writingLocked reports whether an offset write of the tenant with this id
// is queued or running: its coordinator must stay until the write compared
// its commit fence, which a new coordinator could hand out again.
func (d *groupDriver) writingLocked(id string) bool {
	for k := range d.queues {
		if k.tn.id == id {
			return true
		}
	}
	return false
}

// deliver answers outside the lock: writing a response must not hold up
// the coordinator.
func (d *groupDriver) deliver(ds []delivery) {
	for _, dl := range ds {
		dl.w.answer <- dl.resp
	}
}

// with runs a synchronous call against tn's coordinator, then carries out
// its Ready (a Delete forgets a group; a commit may set a deadline).
func (d *groupDriver) with(tn *tenant, fn func(c *groupcoord.Coordinator)) {
	d.mu.Lock()
	fn(d.coordLocked(tn))
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// withEach runs fn against every tenant's coordinator in turn, with the
// tenant's id and access key, for what the gateway reports as a whole
// (metrics), never for a client.
func (d *groupDriver) withEach(fn func(id, accessKey string, c *groupcoord.Coordinator)) {
	d.mu.Lock()
	for id, c := range d.coords {
		fn(id, c.accessKey, c.Coordinator)
	}
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// close stops the timer and answers every request still waiting for a
// rebalance with NOT_COORDINATOR, so clients look for the coordinator again
// (on this gateway once it is back, or on another).
func (d *groupDriver) close() {
	d.mu.Lock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
	}
	waiting := d.waiting
	d.waiting = map[uint64]groupWaiter{}
	d.mu.Unlock()
	for _, w := range waiting {
		resp := w.req.ResponseKind()
		switch m := resp.(type) {
		case *kmsg.JoinGroupResponse:
			m.ErrorCode = kerr.NotCoordinator.Code
		case *kmsg.SyncGroupResponse:
			m.ErrorCode = kerr.NotCoordinator.Code
		case *kmsg.HeartbeatResponse:
			m.ErrorCode = kerr.NotCoordinator.Code
		case *kmsg.LeaveGroupResponse:
			m.ErrorCode = kerr.NotCoordinator.Code
		}
		w.answer <- resp
	}
}
