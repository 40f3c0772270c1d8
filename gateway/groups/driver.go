package groups

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/groupcoord"
)

// Driver is the thin driver around the group coordinator state machine
// (docs/design.md §5): it feeds requests and the clock in, under one lock, and
// carries out what Ready returns: responses to waiting requests, and a timer
// for the next Tick; the offsets of groups that expired are deleted. All
// group membership lives in the coordinators; offsets live in DIS as
// checkpoints of the group's app (offsets.go), written through one queue
// per group (commits.go).
//
// Groups belong to a tenant: each tenant (one set of DIS credentials) has a
// coordinator of its own, so a tenant can neither see nor join, fence or
// evict another's groups, even under the same group id, and one tenant
// filling MaxGroups leaves the others their own. A passthrough tenant's
// coordinator goes when it holds no group; the gateway's own stays.
type Driver[T comparable] struct {
	deps Deps[T]
	cfg  groupcoord.Config
	// groupForApp maps encoded app names back to group ids.
	groupForApp sync.Map

	mu sync.Mutex
	// coords holds each tenant's coordinator by tenant id, which outlives
	// an idle tenant dropped and signed in again.
	coords  map[string]*tenantCoord[T]
	nextID  uint64
	waiting map[uint64]groupWaiter
	timer   *time.Timer
	closed  bool
	// consumerSession and consumerHeartbeat are the consumer-protocol
	// group timings, defaults filled in, the same in every coordinator.
	consumerSession, consumerHeartbeat time.Duration
	// shareSession, shareHeartbeat and shareMaxSize are the share group
	// settings, defaults filled in, the same in every coordinator.
	shareSession, shareHeartbeat time.Duration
	shareMaxSize                 int
	// queues holds, per tenant and group, the offset writes not yet
	// started, in the order the coordinator accepted them; a key is
	// present while its worker runs.
	queues map[offsetQueueKey[T]][]func()
	// committers are the tenants whose offsets of a group were committed
	// through its coordinator: whose offsets go when the group expires.
	committers map[groupKey]T
}

// tenantCoord is one tenant's coordinator, with the access key its groups'
// series are labelled with. The coordinator is not safe for concurrent
// use: it is called only under Driver.mu (docs/design.md §11).
type tenantCoord[T comparable] struct {
	*groupcoord.Coordinator
	accessKey string
	// tn is the tenant value last seen for this id: the one whose
	// partition log releases a departed share member's records.
	tn T
}

// groupKey names a group of one tenant's, by tenant id.
type groupKey struct {
	tenant, group string
}

// New returns the driver of every tenant's groups; Close stops it.
func New[T comparable](deps Deps[T]) *Driver[T] {
	cfg := deps.Coord
	cfg.NewMemberID = newMemberID
	cfg.Logger = deps.Log.With().Str("component", "groupcoord").Logger()
	d := &Driver[T]{
		deps:       deps,
		cfg:        cfg,
		coords:     make(map[string]*tenantCoord[T]),
		waiting:    make(map[uint64]groupWaiter),
		queues:     make(map[offsetQueueKey[T]][]func()),
		committers: make(map[groupKey]T),
	}
	proto := groupcoord.New(d.cfg)
	d.consumerSession, d.consumerHeartbeat = proto.ConsumerTimings()
	d.shareSession, d.shareHeartbeat, d.shareMaxSize = proto.ShareSettings()
	return d
}

// ShareSettings are the share groups' session timeout, heartbeat interval
// and largest size, defaults filled in, which DescribeConfigs reports.
// They never change after New.
func (d *Driver[T]) ShareSettings() (session, heartbeat time.Duration, maxSize int) {
	return d.shareSession, d.shareHeartbeat, d.shareMaxSize
}

// ConsumerTimings are the session timeout and heartbeat interval of
// consumer-protocol groups, defaults filled in, which DescribeConfigs
// reports as group configs. They never change after New.
func (d *Driver[T]) ConsumerTimings() (session, heartbeat time.Duration) {
	return d.consumerSession, d.consumerHeartbeat
}

// coordLocked is tn's coordinator, made on first use.
func (d *Driver[T]) coordLocked(tn T) *groupcoord.Coordinator {
	id, accessKey := d.deps.Tenant(tn)
	c := d.coords[id]
	if c == nil {
		c = &tenantCoord[T]{Coordinator: groupcoord.New(d.cfg), accessKey: accessKey}
		d.coords[id] = c
	}
	c.tn = tn
	return c.Coordinator
}

// groupWaiter is a request waiting for the coordinator's answer.
type groupWaiter struct {
	req kmsg.Request
	// answer is buffered, so the driver never blocks on a request whose
	// handler stopped waiting (deadline passed, connection gone).
	answer chan kmsg.Response
}

// newMemberID is clientID-uuid, as Kafka makes member ids.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:4]) + "-" + hex.EncodeToString(b[4:6]) + "-" +
		hex.EncodeToString(b[6:8]) + "-" + hex.EncodeToString(b[8:10]) + "-" + hex.EncodeToString(b[10:])
}

// Step hands one membership request to the coordinator; the answer
// arrives on the returned channel when the coordinator says so (a
// JoinGroup waits for the rebalance), so the handler waits for it
// concurrently. A group this gateway does not coordinate, or any group
// once the gateway is draining, is answered NOT_COORDINATOR, judged under
// the driver's lock so that it cannot be loaded again after UnloadMoved
// let go of it.
func (d *Driver[T]) Step(conn Conn[T], req kmsg.Request) <-chan kmsg.Response {
	return d.stepWith(conn, req, MembershipGroup(req), func(c *groupcoord.Coordinator, id uint64) error {
		return c.Step(time.Now(), id, conn.ClientID, conn.Host, req)
	})
}

// StepConsumer hands a ConsumerGroupHeartbeat to the coordinator with the
// topic metadata looked up for it; it is answered at once.
func (d *Driver[T]) StepConsumer(conn Conn[T], req *kmsg.ConsumerGroupHeartbeatRequest, topics groupcoord.Topics) kmsg.Response {
	return <-d.stepWith(conn, req, req.Group, func(c *groupcoord.Coordinator, id uint64) error {
		c.StepConsumer(time.Now(), id, conn.ClientID, conn.Host, req, topics)
		return nil
	})
}

// StepShare hands a ShareGroupHeartbeat to the coordinator with the topic
// metadata looked up for it; it is answered at once.
func (d *Driver[T]) StepShare(conn Conn[T], req *kmsg.ShareGroupHeartbeatRequest, topics groupcoord.Topics) kmsg.Response {
	return <-d.stepWith(conn, req, req.GroupID, func(c *groupcoord.Coordinator, id uint64) error {
		c.StepShare(time.Now(), id, conn.ClientID, conn.Host, req, topics)
		return nil
	})
}

// stepWith runs one Step-like call for group on the coordinator of the
// connection's tenant under the driver's lock, with the waiter for its
// answer registered under id.
func (d *Driver[T]) stepWith(conn Conn[T], req kmsg.Request, group string, fn func(c *groupcoord.Coordinator, id uint64) error) <-chan kmsg.Response {
	w := groupWaiter{req: req, answer: make(chan kmsg.Response, 1)}
	d.mu.Lock()
	if d.closed || !d.deps.Coordinates(group) {
		d.mu.Unlock()
		w.answer <- conn.Refuse(kerr.NotCoordinator.Code)
		return w.answer
	}
	d.nextID++
	id := d.nextID
	d.waiting[id] = w
	err := fn(d.coordLocked(conn.Tenant), id)
	ready := d.readyLocked()
	d.mu.Unlock()
	if err != nil {
		d.deps.Log.Error().Err(err).Msg("group coordinator refused a request")
	}
	d.deliver(ready)
	return w.answer
}

// MembershipGroup is the group a membership request is for: what the
// handler authorizes before Step.
func MembershipGroup(req kmsg.Request) string {
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

// UnloadMoved takes the groups another gateway now coordinates out of the
// coordinator: their waiting requests are answered NOT_COORDINATOR and
// every later one is too (Step), so their members rejoin at the new
// coordinator, which loads their committed offsets from DIS on first use.
func (d *Driver[T]) UnloadMoved() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	for _, c := range d.coords {
		for _, g := range c.Groups() {
			if !d.deps.Coordinates(g) {
				c.Unload(g)
				d.deps.Log.Info().Str("group", g).Msg("group moved to another gateway: unloaded")
			}
		}
	}
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// tick advances the coordinators' clock.
func (d *Driver[T]) tick() {
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

// outcome is what readyLocked leaves to do once the lock is released:
// answers to deliver and share members whose records are to be released.
type outcome[T comparable] struct {
	answers    []delivery
	departures []shareDeparture[T]
}

// shareDeparture is a share member that left, with its tenant.
type shareDeparture[T comparable] struct {
	tn T
	groupcoord.ShareDeparture
}

// readyLocked takes every coordinator's Ready, queues the deletion of
// expired groups' offsets behind their pending writes, drops passthrough
// tenants' coordinators left without groups, and arms the timer for the
// earliest deadline.
func (d *Driver[T]) readyLocked() outcome[T] {
	var out outcome[T]
	var next time.Time
	for id, c := range d.coords {
		rd := c.Ready()
		d.deps.Ready(id, c.accessKey, &rd)
		for _, rm := range rd.Removed {
			k := groupKey{id, rm.Group}
			tn, committed := d.committers[k]
			delete(d.committers, k)
			if rm.ExpireOffsets && committed {
				d.enqueueLocked(offsetQueueKey[T]{tn, rm.Group}, func() { d.expireOffsets(tn, rm.Group) })
			}
		}
		for _, dep := range rd.ShareDepartures {
			out.departures = append(out.departures, shareDeparture[T]{c.tn, dep})
		}
		for _, resp := range rd.Responses {
			if w, ok := d.waiting[resp.ID]; ok {
				delete(d.waiting, resp.ID)
				out.answers = append(out.answers, delivery{w, resp.Msg})
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
			defer d.deps.Recover("group coordinator tick", nil)
			d.tick()
		})
	}
	return out
}

// writingLocked reports whether an offset write of the tenant with this id
// is queued or running: its coordinator must stay until the write compared
// its commit fence, which a new coordinator could hand out again.
func (d *Driver[T]) writingLocked(id string) bool {
	for k := range d.queues {
		if tid, _ := d.deps.Tenant(k.tn); tid == id {
			return true
		}
	}
	return false
}

// deliver answers and releases departed share members' records outside
// the lock: neither must hold up the coordinator, and the partition log
// takes locks of its own.
func (d *Driver[T]) deliver(o outcome[T]) {
	for _, dl := range o.answers {
		dl.w.answer <- dl.resp
	}
	for _, dep := range o.departures {
		d.deps.ShareDeparted(dep.tn, dep.Group, dep.Member)
	}
}

// With runs a synchronous call against tn's coordinator, then carries out
// its Ready (a Delete forgets a group; a commit may set a deadline). fn
// runs under the driver's lock (docs/design.md §11).
func (d *Driver[T]) With(tn T, fn func(c *groupcoord.Coordinator)) {
	d.mu.Lock()
	fn(d.coordLocked(tn))
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// WithEach runs fn against every tenant's coordinator in turn, with the
// tenant's id and access key, for what the gateway reports as a whole
// (metrics), never for a client. fn runs under the driver's lock.
func (d *Driver[T]) WithEach(fn func(id, accessKey string, c *groupcoord.Coordinator)) {
	d.mu.Lock()
	for id, c := range d.coords {
		fn(id, c.accessKey, c.Coordinator)
	}
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// Close stops the timer and answers every request still waiting for a
// rebalance with NOT_COORDINATOR, so clients look for the coordinator again
// (on this gateway once it is back, or on another).
func (d *Driver[T]) Close() {
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
