package groupcoord

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// t0 is the injected clock's start; tests move time by passing later times.
var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

const (
	testSession   = 10 * time.Second
	testRebalance = 30 * time.Second
)

// harness drives a Coordinator the way the gateway does and checks the
// contract on every Ready: each response answers a request that was stepped,
// once, with the request's key and version.
type harness struct {
	t        *testing.T
	c        *Coordinator
	now      time.Time
	lastID   uint64
	sent     map[uint64]kmsg.Request
	got      map[uint64]kmsg.Response
	order    []uint64 // response ids in the order they were ready
	nextTick time.Time
	removed  []Removed // every Ready's, in order
	// rebalances are every Ready's, in order.
	rebalances []Rebalance
	// departures are every Ready's share departures, in order.
	departures []ShareDeparture
}

func newHarness(t *testing.T, cfg Config) *harness {
	return &harness{
		t:    t,
		c:    New(cfg),
		now:  t0,
		sent: make(map[uint64]kmsg.Request),
		got:  make(map[uint64]kmsg.Response),
	}
}

// step sends req from client at the current time and returns its handle.
func (h *harness) step(client string, req kmsg.Request) uint64 {
	h.t.Helper()
	h.lastID++
	id := h.lastID
	h.sent[id] = req
	if err := h.c.Step(h.now, id, client, client+".host", req); err != nil {
		h.t.Fatalf("Step(%T): %v", req, err)
	}
	h.collect()
	return id
}

// collect takes Ready and checks it.
func (h *harness) collect() {
	h.t.Helper()
	rd := h.c.Ready()
	h.removed = append(h.removed, rd.Removed...)
	h.rebalances = append(h.rebalances, rd.Rebalances...)
	h.departures = append(h.departures, rd.ShareDepartures...)
	for _, r := range rd.Responses {
		req, ok := h.sent[r.ID]
		if !ok {
			h.t.Fatalf("response to unknown id %d", r.ID)
		}
		if _, dup := h.got[r.ID]; dup {
			h.t.Fatalf("request %d answered twice", r.ID)
		}
		if r.Msg.Key() != req.Key() || r.Msg.GetVersion() != req.GetVersion() {
			h.t.Fatalf("request %d (key %d v%d) answered with key %d v%d", r.ID, req.Key(), req.GetVersion(), r.Msg.Key(), r.Msg.GetVersion())
		}
		r.Msg.AppendTo(nil) // every answer must encode at its version
		h.got[r.ID] = r.Msg
		h.order = append(h.order, r.ID)
	}
	if !rd.NextTick.IsZero() && !rd.NextTick.After(h.now) {
		h.t.Fatalf("NextTick %v is not after now %v", rd.NextTick, h.now)
	}
	h.nextTick = rd.NextTick
}

// at moves the clock to t and ticks.
func (h *harness) at(t time.Time) {
	h.t.Helper()
	h.now = t
	h.c.Tick(t)
	h.collect()
}

// after moves the clock by d and ticks.
func (h *harness) after(d time.Duration) {
	h.t.Helper()
	h.at(h.now.Add(d))
}

// waiting reports whether request id is still unanswered.
func (h *harness) waiting(id uint64) bool {
	_, ok := h.got[id]
	return !ok
}

func (h *harness) answer(id uint64) kmsg.Response {
	h.t.Helper()
	resp, ok := h.got[id]
	if !ok {
		h.t.Fatalf("request %d (%T) is unanswered", id, h.sent[id])
	}
	return resp
}

func (h *harness) joinResp(id uint64) *kmsg.JoinGroupResponse {
	h.t.Helper()
	return h.answer(id).(*kmsg.JoinGroupResponse)
}

func (h *harness) syncResp(id uint64) *kmsg.SyncGroupResponse {
	h.t.Helper()
	return h.answer(id).(*kmsg.SyncGroupResponse)
}

// code is the top-level error code of the answer to id.
func (h *harness) code(id uint64) int16 {
	h.t.Helper()
	switch r := h.answer(id).(type) {
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode
	case *kmsg.LeaveGroupResponse:
		return r.ErrorCode
	}
	h.t.Fatalf("unexpected answer %T", h.got[id])
	return 0
}

// wantCode checks the answer to id carries want.
func (h *harness) wantCode(id uint64, want *kerr.Error) {
	h.t.Helper()
	if got := h.code(id); got != codeOf(want) {
		h.t.Fatalf("request %d (%T): error %v, want %v", id, h.sent[id], kerr.ErrorForCode(got), want)
	}
}

// codeOf is a kerr error's code, nil being 0.
func codeOf(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// allAnswered fails the test if any request is still unanswered.
func (h *harness) allAnswered() {
	h.t.Helper()
	for id, req := range h.sent {
		if h.waiting(id) {
			h.t.Fatalf("request %d (%T) was never answered", id, req)
		}
	}
}

func joinReq(group, memberID string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = memberID
	r.SessionTimeoutMillis = int32(testSession / time.Millisecond)
	r.RebalanceTimeoutMillis = int32(testRebalance / time.Millisecond)
	r.ProtocolType = "consumer"
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("meta")}}
	return r
}

func staticJoinReq(group, memberID, instance string) *kmsg.JoinGroupRequest {
	r := joinReq(group, memberID)
	r.InstanceID = kmsg.StringPtr(instance)
	return r
}

func syncReq(group, memberID string, generation int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group = group
	r.MemberID = memberID
	r.Generation = generation
	r.ProtocolType = kmsg.StringPtr("consumer")
	r.Protocol = kmsg.StringPtr("range")
	for id, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
	}
	return r
}

func heartbeatReq(group, memberID string, generation int32) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group = group
	r.MemberID = memberID
	r.Generation = generation
	return r
}

func leaveReq(group string, members ...kmsg.LeaveGroupRequestMember) *kmsg.LeaveGroupRequest {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = 5
	r.Group = group
	r.Members = members
	return r
}

// newMemberID makes client's first v9 JoinGroup and returns the member id
// handed back with MEMBER_ID_REQUIRED.
func (h *harness) newMemberID(group, client string) string {
	h.t.Helper()
	id := h.step(client, joinReq(group, ""))
	resp := h.joinResp(id)
	if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
		h.t.Fatalf("first join of %s: error %v member %q, want MEMBER_ID_REQUIRED with an id", client, kerr.ErrorForCode(resp.ErrorCode), resp.MemberID)
	}
	return resp.MemberID
}

// stableGroup makes a Stable group of one member per client, all in
// generation 1, the first the leader; each member is assigned "as-<id>".
func (h *harness) stableGroup(group string, clients ...string) []string {
	h.t.Helper()
	ids := make([]string, len(clients))
	for i, c := range clients {
		ids[i] = h.newMemberID(group, c)
	}
	joins := make([]uint64, len(clients))
	for i, c := range clients {
		joins[i] = h.step(c, joinReq(group, ids[i]))
	}
	h.syncAll(group, clients, ids, joins)
	return ids
}

// syncAll checks the JoinGroup answers of a completed join phase and syncs
// everyone, the leader last, assigning "as-<id>".
func (h *harness) syncAll(group string, clients, ids []string, joins []uint64) {
	h.t.Helper()
	leader := -1
	var gen int32
	for i, j := range joins {
		resp := h.joinResp(j)
		if resp.ErrorCode != 0 {
			h.t.Fatalf("join of %s: %v", ids[i], kerr.ErrorForCode(resp.ErrorCode))
		}
		gen = resp.Generation
		if resp.LeaderID == ids[i] {
			leader = i
		}
	}
	if leader < 0 {
		h.t.Fatalf("no joined member is the leader")
	}
	assign := make(map[string]string)
	for _, id := range ids {
		assign[id] = "as-" + id
	}
	syncs := make([]uint64, len(ids))
	for i := range ids {
		if i != leader {
			syncs[i] = h.step(clients[i], syncReq(group, ids[i], gen, nil))
		}
	}
	syncs[leader] = h.step(clients[leader], syncReq(group, ids[leader], gen, assign))
	for i, s := range syncs {
		resp := h.syncResp(s)
		if resp.ErrorCode != 0 || string(resp.MemberAssignment) != "as-"+ids[i] {
			h.t.Fatalf("sync of %s: error %v assignment %q", ids[i], kerr.ErrorForCode(resp.ErrorCode), resp.MemberAssignment)
		}
	}
}

// state is the group's state as Describe spells it, "" when not in memory.
func (h *harness) state(group string) string {
	d, ok := h.c.Describe(group)
	if !ok {
		return ""
	}
	return d.State
}

// memberIDs lists the group's members as Describe reports them.
func (h *harness) memberIDs(group string) []string {
	d, _ := h.c.Describe(group)
	var ids []string
	for _, m := range d.Members {
		ids = append(ids, m.MemberID)
	}
	return ids
}
