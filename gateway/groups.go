package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/groupcoord"
)

// groupDriver is the thin driver around the group coordinator state machine
// (docs/design.md §5): it feeds requests and the clock in, under one lock, and
// carries out what Ready returns: responses to waiting requests, and a timer
// for the next Tick. All group membership lives in the coordinator; offsets
// live in DIS.
type groupDriver struct {
	gw *Gateway

	mu      sync.Mutex
	coord   *groupcoord.Coordinator
	nextID  uint64
	waiting map[uint64]*request
	timer   *time.Timer
	closed  bool
}

func newGroupDriver(gw *Gateway) *groupDriver {
	return &groupDriver{
		gw: gw,
		coord: groupcoord.New(groupcoord.Config{
			InitialRebalanceDelay: gw.cfg.InitialRebalanceDelay,
			NewMemberID:           newMemberID,
			Logger:                gw.log.With().Str("component", "groupcoord").Logger(),
		}),
		waiting: make(map[uint64]*request),
	}
}

// newMemberID is clientID-uuid, as Kafka makes member ids.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:4]) + "-" + hex.EncodeToString(b[4:6]) + "-" +
		hex.EncodeToString(b[6:8]) + "-" + hex.EncodeToString(b[8:10]) + "-" + hex.EncodeToString(b[10:])
}

// step hands one membership request to the coordinator; r is answered when
// the coordinator says so.
func (d *groupDriver) step(r *request, req kmsg.Request) {
	clientID := ""
	if r.hdr.ClientID != nil {
		clientID = *r.hdr.ClientID
	}
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	d.waiting[id] = r
	err := d.coord.Step(time.Now(), id, clientID, r.s.remoteHost(), req)
	ready := d.readyLocked()
	d.mu.Unlock()
	if err != nil {
		d.gw.log.Error().Err(err).Msg("group coordinator refused a request")
	}
	d.deliver(ready)
}

// tick advances the coordinator's clock.
func (d *groupDriver) tick() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.coord.Tick(time.Now())
	ready := d.readyLocked()
	d.mu.Unlock()
	d.deliver(ready)
}

// delivery pairs waiting requests with their responses.
type delivery struct {
	r    *request
	resp kmsg.Response
}

// readyLocked takes the coordinator's Ready and arms the timer.
func (d *groupDriver) readyLocked() []delivery {
	rd := d.coord.Ready()
	out := make([]delivery, 0, len(rd.Responses))
	for _, resp := range rd.Responses {
		if r, ok := d.waiting[resp.ID]; ok {
			delete(d.waiting, resp.ID)
			out = append(out, delivery{r, resp.Msg})
		}
	}
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if !rd.NextTick.IsZero() && !d.closed {
		d.timer = time.AfterFunc(max(time.Until(rd.NextTick), 0), d.tick)
	}
	return out
}

// deliver answers outside the lock: writing a response must not hold up
// the coordinator.
func (d *groupDriver) deliver(ds []delivery) {
	for _, dl := range ds {
		dl.r.respond(dl.resp)
	}
}

// with runs a synchronous query against the coordinator.
func (d *groupDriver) with(fn func(c *groupcoord.Coordinator)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(d.coord)
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
	d.waiting = map[uint64]*request{}
	d.mu.Unlock()
	for _, r := range waiting {
		resp := r.body.ResponseKind()
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
		r.respond(resp)
	}
}
