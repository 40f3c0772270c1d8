package groupcoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shJoin is a first v1 share heartbeat (epoch 0) subscribing to names.
func shJoin(group, member string, names ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version = 1
	r.GroupID, r.MemberID, r.MemberEpoch = group, member, 0
	r.SubscribedTopicNames = names
	return r
}

// shBeat is a v1 share heartbeat at epoch that changes nothing.
func shBeat(group, member string, epoch int32) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version = 1
	r.GroupID, r.MemberID, r.MemberEpoch = group, member, epoch
	return r
}

// shStep sends a share heartbeat with topics and returns its answer.
func (h *harness) shStep(client string, req *kmsg.ShareGroupHeartbeatRequest, topics Topics) *kmsg.ShareGroupHeartbeatResponse {
	h.t.Helper()
	h.lastID++
	id := h.lastID
	h.sent[id] = req
	h.c.StepShare(h.now, id, client, client+".host", req, topics)
	h.collect()
	return h.answer(id).(*kmsg.ShareGroupHeartbeatResponse)
}

// shClient is one simulated share consumer: it fetches from what its last
// assignment gave it.
type shClient struct {
	h        *harness
	group    string
	id       string
	epoch    int32
	assigned map[[16]byte][]int32
	topics   Topics
}

func (h *harness) shMember(group, id string, topics Topics, names ...string) *shClient {
	h.t.Helper()
	c := &shClient{h: h, group: group, id: id, topics: topics}
	c.take(h.shStep(id, shJoin(group, id, names...), topics))
	return c
}

// take applies a successful answer.
func (c *shClient) take(resp *kmsg.ShareGroupHeartbeatResponse) {
	c.h.t.Helper()
	if resp.ErrorCode != 0 {
		c.h.t.Fatalf("%s: share heartbeat: %v", c.id, kerr.ErrorForCode(resp.ErrorCode))
	}
	c.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		c.assigned = map[[16]byte][]int32{}
		for _, t := range resp.Assignment.TopicPartitions {
			c.assigned[t.TopicID] = t.Partitions
		}
	}
}

func (c *shClient) beat() {
	c.h.t.Helper()
	c.take(c.h.shStep(c.id, shBeat(c.group, c.id, c.epoch), c.topics))
}

func (c *shClient) count() int {
	n := 0
	for _, ps := range c.assigned {
		n += len(ps)
	}
	return n
}

// wantShareCode fails unless resp carries want.
func wantShareCode(t *testing.T, what string, resp *kmsg.ShareGroupHeartbeatResponse, want *kerr.Error) {
	t.Helper()
	if resp.ErrorCode != codeOf(want) {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(resp.ErrorCode), want)
	}
}

func TestShareJoinHeartbeatLeave(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.shMember("g", "a", topics, "foo")
	if a.epoch != 1 || a.count() != 6 {
		t.Fatalf("first member: epoch %d, %d partitions; want 1, 6", a.epoch, a.count())
	}
	resp := h.shStep("a", shBeat("g", "a", 1), topics)
	if resp.ErrorCode != 0 || resp.Assignment != nil || resp.MemberEpoch != 1 || *resp.MemberID != "a" || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("plain heartbeat: %+v", resp)
	}
	b := h.shMember("g", "b", topics, "foo")
	if b.epoch != 2 || !slices.Equal(b.assigned[topicFoo.ID], []int32{3, 4, 5}) {
		t.Fatalf("second member: epoch %d assigned %v; want 2, [3 4 5]", b.epoch, b.assigned)
	}
	// a fetches by its old assignment until it heartbeats.
	if got := h.c.ShareAssignees("g", topicFoo.ID, 4); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("assignees of foo-4 before a heartbeat: %v", got)
	}
	a.beat()
	if a.epoch != 2 || !slices.Equal(a.assigned[topicFoo.ID], []int32{0, 1, 2}) {
		t.Fatalf("first member after the second joined: epoch %d assigned %v", a.epoch, a.assigned)
	}
	for p, want := range map[int32][]string{0: {"a"}, 4: {"b"}, 6: nil} {
		if got := h.c.ShareAssignees("g", topicFoo.ID, p); !slices.Equal(got, want) {
			t.Errorf("assignees of foo-%d: %v, want %v", p, got, want)
		}
	}
	if got := h.c.ShareAssignees("nope", topicFoo.ID, 0); got != nil {
		t.Errorf("assignees in a group not held: %v", got)
	}

	resp = h.shStep("b", shBeat("g", "b", -1), topics)
	if resp.ErrorCode != 0 || resp.MemberEpoch != -1 || *resp.MemberID != "b" {
		t.Fatalf("leave: %+v", resp)
	}
	if !slices.Equal(h.departures, []ShareDeparture{{Group: "g", Member: "b"}}) {
		t.Fatalf("departures: %+v", h.departures)
	}
	a.beat()
	if a.epoch != 3 || a.count() != 6 {
		t.Fatalf("after b left: epoch %d, %d partitions; want 3, 6", a.epoch, a.count())
	}
	var epochs []int32
	for _, r := range h.rebalances {
		if r.Group != "g" || r.Took != 0 {
			t.Fatalf("rebalance %+v", r)
		}
		epochs = append(epochs, r.Generation)
	}
	if !slices.Equal(epochs, []int32{1, 2, 3}) {
		t.Fatalf("epochs reported: %v", epochs)
	}
	h.allAnswered()
}

func TestShareMoreMembersThanPartitions(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"bar": topicBar})
	var cs []*shClient
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		cs = append(cs, h.shMember("g", id, topics, "bar"))
		for _, c := range cs {
			c.beat()
		}
	}
	// Two partitions, five members: each partition goes to three, one
	// member gets both.
	sharers := map[int32]int{}
	counts := map[int]int{}
	for _, c := range cs {
		for _, p := range c.assigned[topicBar.ID] {
			sharers[p]++
		}
		counts[c.count()]++
	}
	if sharers[0] != 3 || sharers[1] != 3 || counts[2] != 1 || counts[1] != 4 {
		t.Fatalf("sharers per partition %v, members per count %v", sharers, counts)
	}
	// Nothing changes while nothing does.
	before := map[string]map[[16]byte][]int32{}
	for _, c := range cs {
		before[c.id] = c.assigned
	}
	epoch := cs[0].epoch
	for _, c := range cs {
		c.beat()
		if c.epoch != epoch || !assignmentsEqual(c.assigned, before[c.id]) {
			t.Fatalf("%s moved without a change: epoch %d assigned %v", c.id, c.epoch, c.assigned)
		}
	}
	if d := h.c.DescribeShare("g"); d.GroupEpoch != epoch || d.AssignmentEpoch != epoch {
		t.Fatalf("describe epochs %d/%d, want %d", d.GroupEpoch, d.AssignmentEpoch, epoch)
	}
}

func TestShareFencingAndValidation(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.shMember("g", "a", topics, "foo")
	h.shMember("g", "b", topics, "foo")
	a.beat()
	h.shMember("g", "c", topics, "foo")
	a.beat()
	if a.epoch != 3 {
		t.Fatalf("a at epoch %d, want 3", a.epoch)
	}
	join := func(mutate func(*kmsg.ShareGroupHeartbeatRequest)) *kmsg.ShareGroupHeartbeatRequest {
		r := shJoin("g", "x", "foo")
		mutate(r)
		return r
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.ShareGroupHeartbeatRequest
		want *kerr.Error
	}{
		{"epoch ahead", shBeat("g", "a", 4), kerr.FencedMemberEpoch},
		{"epoch behind, not the previous", shBeat("g", "a", 1), kerr.FencedMemberEpoch},
		{"previous epoch (a lost answer)", shBeat("g", "a", 2), nil},
		{"unknown member", shBeat("g", "zz", 3), kerr.UnknownMemberID},
		{"unknown member leaving", shBeat("g", "zz", -1), kerr.UnknownMemberID},
		{"group not held", shBeat("nope", "a", 3), kerr.UnknownMemberID},
		{"leaving a group not held", shBeat("nope", "a", -1), kerr.GroupIDNotFound},
		{"no member id", join(func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberID = "" }), kerr.InvalidRequest},
		{"blank member id", join(func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberID = " " }), kerr.InvalidRequest},
		{"no group id", join(func(r *kmsg.ShareGroupHeartbeatRequest) { r.GroupID = "" }), kerr.InvalidRequest},
		{"blank rack", join(func(r *kmsg.ShareGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") }), kerr.InvalidRequest},
		{"join without topics", join(func(r *kmsg.ShareGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }), kerr.InvalidRequest},
		{"join with no topic", join(func(r *kmsg.ShareGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{} }), kerr.InvalidRequest},
		{"epoch -2", join(func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberEpoch = -2 }), kerr.InvalidRequest},
		{"v0 heartbeat without member id", join(func(r *kmsg.ShareGroupHeartbeatRequest) {
			r.Version, r.MemberID, r.MemberEpoch = 0, "", 1
		}), kerr.InvalidRequest},
	} {
		wantShareCode(t, tc.name, h.shStep("x", tc.req, topics), tc.want)
	}
	resp := h.shStep("x", shBeat("g", "a", 9), topics)
	if resp.ErrorMessage == nil || resp.MemberID != nil || resp.Assignment != nil {
		t.Errorf("error answer: %+v", resp)
	}
	// A known member rejoining with epoch 0 stays as it is and gets its
	// whole assignment (KAFKA-19233).
	resp = h.shStep("a", shJoin("g", "a", "foo"), topics)
	if resp.ErrorCode != 0 || resp.MemberEpoch != 3 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("rejoin with epoch 0: %+v", resp)
	}
	// A v0 member may join without an id: the coordinator names it.
	v0 := shJoin("g", "", "foo")
	v0.Version = 0
	resp = h.shStep("old", v0, topics)
	if resp.ErrorCode != 0 || resp.MemberID == nil || *resp.MemberID != "old-1" || resp.MemberEpoch != 4 {
		t.Fatalf("v0 join: %+v", resp)
	}
	if d := h.c.DescribeShare("g"); len(d.Members) != 4 {
		t.Fatalf("members after the errors: %d, want 4", len(d.Members))
	}
	h.allAnswered()
}

func TestShareSessionExpiry(t *testing.T) {
	if s, hb, size := New(Config{}).ShareSettings(); s != 45*time.Second || hb != 5*time.Second || size != 200 {
		t.Fatalf("default share settings %v %v %d", s, hb, size)
	}
	h := newHarness(t, Config{ShareSessionTimeout: 20 * time.Second, ShareHeartbeatInterval: 2 * time.Second})
	if s, hb, _ := h.c.ShareSettings(); s != 20*time.Second || hb != 2*time.Second {
		t.Fatalf("share timings %v %v", s, hb)
	}
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.shMember("g", "a", topics, "foo")
	h.after(time.Second)
	b := h.shMember("g", "b", topics, "foo")
	a.beat()
	if resp := h.shStep("b", shBeat("g", "b", b.epoch), topics); resp.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("heartbeat interval %d, want 2000", resp.HeartbeatIntervalMillis)
	}
	if !h.nextTick.Equal(h.now.Add(20 * time.Second)) {
		t.Fatalf("next tick %v, want the sessions' end %v", h.nextTick, h.now.Add(20*time.Second))
	}
	// b falls silent; a keeps heartbeating and gets b's partitions once
	// b's session is over.
	for range 3 {
		h.after(5 * time.Second)
		a.beat()
	}
	h.after(5*time.Second - time.Nanosecond)
	if len(h.departures) != 0 {
		t.Fatalf("departures before the session ended: %+v", h.departures)
	}
	h.after(time.Nanosecond)
	if !slices.Equal(h.departures, []ShareDeparture{{Group: "g", Member: "b"}}) {
		t.Fatalf("departures: %+v", h.departures)
	}
	a.beat()
	if a.count() != 6 {
		t.Fatalf("a after b expired: %d partitions", a.count())
	}
	wantShareCode(t, "expired member", h.shStep("b", shBeat("g", "b", b.epoch), topics), kerr.UnknownMemberID)
	// Everyone gone: Empty, then forgotten, its share state not touched.
	h.after(21 * time.Second)
	if len(h.departures) != 2 || h.departures[1].Member != "a" {
		t.Fatalf("departures: %+v", h.departures)
	}
	if l := h.c.List(); len(l) != 1 || l[0].GroupState != "Empty" {
		t.Fatalf("list after everyone left: %+v", l)
	}
	h.after(10 * time.Minute)
	if len(h.c.Groups()) != 0 || !slices.Equal(h.removed, []Removed{{Group: "g"}}) {
		t.Fatalf("groups %v, removed %+v", h.c.Groups(), h.removed)
	}
}

func TestShareMaxSize(t *testing.T) {
	h := newHarness(t, Config{ShareMaxGroupSize: 2})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.shMember("g", "a", topics, "foo")
	h.shMember("g", "b", topics, "foo")
	resp := h.shStep("c", shJoin("g", "c", "foo"), topics)
	wantShareCode(t, "third member", resp, kerr.GroupMaxSizeReached)
	if resp.ErrorMessage == nil || *resp.ErrorMessage != "The share group has reached its maximum capacity of 2 members." {
		t.Errorf("message: %v", resp.ErrorMessage)
	}
	// As Kafka, a full group answers a stranger so before looking it up.
	wantShareCode(t, "stranger to a full group", h.shStep("c", shBeat("g", "c", 2), topics), kerr.GroupMaxSizeReached)
	a.beat()
	h.shStep("a", shBeat("g", "a", -1), topics)
	h.shMember("g", "c", topics, "foo")

	// Kafka's default is 200.
	h = newHarness(t, Config{})
	for i := range 200 {
		h.shMember("big", "m"+itoa(int32(i)), topics, "foo")
	}
	wantShareCode(t, "member 201", h.shStep("x", shJoin("big", "x", "foo"), topics), kerr.GroupMaxSizeReached)
	if d := h.c.DescribeShare("big"); len(d.Members) != 200 {
		t.Fatalf("members: %d", len(d.Members))
	}
}

func TestShareMaxGroups(t *testing.T) {
	h := newHarness(t, Config{MaxGroups: 1})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	h.shMember("g", "a", topics, "foo")
	wantShareCode(t, "one group too many", h.shStep("b", shJoin("g2", "b", "foo"), topics), kerr.CoordinatorNotAvailable)
}

func TestShareSubscriptionChanges(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo, "bar": topicBar})
	req := h.c.ShareSubscription(shJoin("g", "a", "foo", "none"))
	if !slices.Equal(req.Names, []string{"foo", "none"}) || len(req.Regexes) != 0 {
		t.Fatalf("subscription of the first member: %+v", req)
	}
	a := h.shMember("g", "a", topics, "foo", "none")
	b := h.shMember("g", "b", topics, "bar")
	if sub := h.c.ShareSubscription(shBeat("g", "c", 1)); !slices.Equal(sub.Names, []string{"bar", "foo", "none"}) {
		t.Fatalf("subscription of the group: %+v", sub)
	}
	a.beat()
	if a.count() != 6 || len(b.assigned[topicBar.ID]) != 2 || b.count() != 2 {
		t.Fatalf("one topic each: a %v, b %v", a.assigned, b.assigned)
	}
	// b subscribes to both: each topic is balanced over its subscribers.
	re := shBeat("g", "b", b.epoch)
	re.SubscribedTopicNames = []string{"foo", "bar", "foo"}
	b.take(h.shStep("b", re, topics))
	a.beat()
	if a.count() != 3 || len(b.assigned[topicFoo.ID]) != 3 || len(b.assigned[topicBar.ID]) != 2 {
		t.Fatalf("b on both: a %v, b %v", a.assigned, b.assigned)
	}
	// a too: the two topics are one pool, 4 each, a keeping its three.
	kept := slices.Clone(a.assigned[topicFoo.ID])
	re = shBeat("g", "a", a.epoch)
	re.SubscribedTopicNames = []string{"bar", "foo"}
	a.take(h.shStep("a", re, topics))
	b.beat()
	if a.count() != 4 || b.count() != 4 {
		t.Fatalf("both on both: a %v, b %v", a.assigned, b.assigned)
	}
	for _, p := range kept {
		if !slices.Contains(a.assigned[topicFoo.ID], p) {
			t.Fatalf("a lost foo-%d: %v", p, a.assigned)
		}
	}
	d := h.c.DescribeShare("g")
	if !slices.Equal(d.Members[0].SubscribedTopicNames, []string{"bar", "foo"}) {
		t.Fatalf("describe subscription: %v", d.Members[0].SubscribedTopicNames)
	}
	// The same subscription again changes nothing.
	epoch := a.epoch
	a.take(h.shStep("a", re, topics))
	if a.epoch != epoch {
		t.Fatalf("same subscription moved the epoch to %d", a.epoch)
	}
}

func TestShareHomogeneousPool(t *testing.T) {
	h := newHarness(t, Config{})
	x, y := TopicInfo{ID: [16]byte{5}, Partitions: 1}, TopicInfo{ID: [16]byte{6}, Partitions: 1}
	topics := catalog(map[string]TopicInfo{"x": x, "y": y})
	a := h.shMember("g", "a", topics, "x", "y")
	b := h.shMember("g", "b", topics, "x", "y")
	a.beat()
	// One pool of two partitions for two members: one each, none shared.
	if a.count() != 1 || b.count() != 1 || assignmentsEqual(a.assigned, b.assigned) {
		t.Fatalf("a %v, b %v", a.assigned, b.assigned)
	}
}

func TestShareTopicChanges(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.shMember("g", "a", topics, "foo")
	b := h.shMember("g", "b", topics, "foo")
	a.beat()
	grown := catalog(map[string]TopicInfo{"foo": {ID: topicFoo.ID, Partitions: 8}})
	a.topics, b.topics = grown, grown
	epoch := a.epoch
	a.beat()
	b.beat()
	if a.epoch != epoch+1 || a.count() != 4 || b.count() != 4 {
		t.Fatalf("after foo grew: epoch %d, a %v, b %v", a.epoch, a.assigned, b.assigned)
	}
	gone := Topics{Info: map[string]TopicInfo{}, All: []string{}}
	a.topics, b.topics = gone, gone
	a.beat()
	if a.count() != 0 {
		t.Fatalf("after foo was deleted: a %v", a.assigned)
	}
	// b has not heard yet: its old partitions are left out of describe.
	if d := h.c.DescribeShare("g"); len(d.Members[1].Assignment.TopicPartitions) != 0 {
		t.Fatalf("describe of a deleted topic: %+v", d.Members[1].Assignment)
	}
	again := catalog(map[string]TopicInfo{"foo": {ID: [16]byte{7}, Partitions: 2}})
	a.topics, b.topics = again, again
	a.beat()
	b.beat()
	if len(a.assigned[[16]byte{7}]) != 1 || len(b.assigned[[16]byte{7}]) != 1 || len(b.assigned[topicFoo.ID]) != 0 {
		t.Fatalf("after foo was made again: a %v, b %v", a.assigned, b.assigned)
	}
}

func TestShareTypeConflicts(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	ids := h.stableGroup("classic", "c1")
	h.cgMember("cg", "m", topics, "foo")
	h.stableGroup("emptied", "c2")
	h.step("c2", leaveReq("emptied", kmsg.LeaveGroupRequestMember{MemberID: h.memberIDs("emptied")[0]}))
	if code := h.c.CheckCommit(h.now, "simple", "", nil, -1); code != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(code))
	}
	// Kafka makes no group a share group, nor a share group anything else,
	// while it exists, empty or not.
	for _, g := range []string{"classic", "cg", "emptied", "simple"} {
		resp := h.shStep("s", shJoin(g, "s", "foo"), topics)
		wantShareCode(t, "share join to "+g, resp, kerr.GroupIDNotFound)
		if resp.ErrorMessage == nil || *resp.ErrorMessage != "Group "+g+" is not a share group." {
			t.Errorf("message: %v", resp.ErrorMessage)
		}
		if d := h.c.DescribeShare(g); d.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("ShareGroupDescribe of %s: %v", g, kerr.ErrorForCode(d.ErrorCode))
		}
	}
	if d := h.c.DescribeShare("nope"); d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group nope not found." {
		t.Errorf("ShareGroupDescribe of an unknown group: %+v", d)
	}
	s := h.shMember("sg", "s", topics, "foo")
	h.shStep("e", shJoin("esg", "e", "foo"), topics)
	h.shStep("e", shBeat("esg", "e", -1), topics)
	for _, g := range []string{"sg", "esg"} {
		h.wantCode(h.step("c", joinReq(g, "")), kerr.InconsistentGroupProtocol)
		if resp := h.cgStep("m", cgJoin(g, "m", "foo"), topics); resp.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("consumer heartbeat to share group %s: %v", g, kerr.ErrorForCode(resp.ErrorCode))
		}
		if d := h.c.DescribeConsumer(g); d.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("ConsumerGroupDescribe of share group %s: %v", g, kerr.ErrorForCode(d.ErrorCode))
		}
	}
	h.wantCode(h.step("c", heartbeatReq("sg", "s", s.epoch)), kerr.UnknownMemberID)
	if code := h.c.CheckCommit(h.now, "sg", "s", nil, s.epoch); code != kerr.GroupIDNotFound.Code {
		t.Errorf("commit to a share group: %v", kerr.ErrorForCode(code))
	}
	if code := h.c.CheckCommit(h.now, "sg", "", nil, -1); code != kerr.GroupIDNotFound.Code {
		t.Errorf("simple commit to a share group: %v", kerr.ErrorForCode(code))
	}
	if code := h.c.CheckOffsetFetch("sg", nil, -1); code != kerr.GroupIDNotFound.Code {
		t.Errorf("offset fetch of a share group: %v", kerr.ErrorForCode(code))
	}
	// The classic group is untouched by it all.
	h.wantCode(h.step("c1", heartbeatReq("classic", ids[0], 1)), nil)
	h.allAnswered()
}

func TestShareDescribeListDelete(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo, "bar": topicBar})
	a := h.shMember("g", "a", topics, "foo", "bar")
	rack := shBeat("g", "a", a.epoch)
	rack.RackID = kmsg.StringPtr("r1")
	a.take(h.shStep("a", rack, topics))
	h.shMember("g", "b", topics, "foo", "bar")
	a.beat()

	d := h.c.DescribeShare("g")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || d.Assignor != "simple" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != "a" || m.MemberEpoch != 2 || m.ClientID != "a" || m.ClientHost != "a.host" || m.RackID == nil || *m.RackID != "r1" ||
		!slices.Equal(m.SubscribedTopicNames, []string{"bar", "foo"}) {
		t.Fatalf("member a: %+v", m)
	}
	n := 0
	for _, tp := range m.Assignment.TopicPartitions {
		if tp.Topic != map[[16]byte]string{topicFoo.ID: "foo", topicBar.ID: "bar"}[tp.TopicID] {
			t.Fatalf("topic %x named %q", tp.TopicID, tp.Topic)
		}
		n += len(tp.Partitions)
	}
	if n != 4 || a.count() != 4 {
		t.Fatalf("a has %d partitions, describe says %d; want 4", a.count(), n)
	}
	if dg, ok := h.c.Describe("g"); !ok || dg.State != "Dead" || len(dg.Members) != 0 {
		t.Fatalf("DescribeGroups of a share group: %v %+v", ok, dg)
	}
	l := h.c.List()
	if len(l) != 1 || l[0].Group != "g" || l[0].GroupType != "share" || l[0].ProtocolType != "share" || l[0].GroupState != "Stable" {
		t.Fatalf("list: %+v", l)
	}
	if code := h.c.Delete("g"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: %v", kerr.ErrorForCode(code))
	}
	h.shStep("a", shBeat("g", "a", a.epoch), topics)
	h.shStep("a", shBeat("g", "a", -1), topics)
	h.shStep("b", shBeat("g", "b", 2), topics)
	h.shStep("b", shBeat("g", "b", -1), topics)
	if d := h.c.DescribeShare("g"); d.GroupState != "Empty" || len(d.Members) != 0 {
		t.Fatalf("describe once empty: %+v", d)
	}
	if code := h.c.Delete("g"); code != 0 {
		t.Fatalf("delete of the empty share group: %v", kerr.ErrorForCode(code))
	}
	h.collect()
	if len(h.c.List()) != 0 || !slices.Equal(h.removed, []Removed{{Group: "g"}}) {
		t.Fatalf("after delete: list %+v, removed %+v", h.c.List(), h.removed)
	}
	// The id is free again, for any type.
	h.stableGroup("g", "c1")
}
