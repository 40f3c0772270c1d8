package groupcoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	topicFoo = TopicInfo{ID: [16]byte{1}, Partitions: 6}
	topicBar = TopicInfo{ID: [16]byte{2}, Partitions: 2}
)

// catalog is the topic metadata tests hand to every heartbeat.
func catalog(topics map[string]TopicInfo) Topics {
	t := Topics{Info: topics}
	for n := range topics {
		t.All = append(t.All, n)
	}
	slices.Sort(t.All)
	return t
}

// cgJoin is a first heartbeat (epoch 0) subscribing to names.
func cgJoin(group, member string, names ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = group, member, 0
	r.RebalanceTimeoutMillis = int32(testRebalance / time.Millisecond)
	r.SubscribedTopicNames = names
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return r
}

// cgBeat is a heartbeat at epoch reporting owned (nil: unchanged).
func cgBeat(group, member string, epoch int32, owned map[[16]byte][]int32) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = group, member, epoch
	if owned != nil {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for id, ps := range owned {
			r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
		}
	}
	return r
}

// cgStep sends a heartbeat with topics and returns its answer.
func (h *harness) cgStep(client string, req *kmsg.ConsumerGroupHeartbeatRequest, topics Topics) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	h.lastID++
	id := h.lastID
	h.sent[id] = req
	h.c.StepConsumer(h.now, id, client, client+".host", req, topics)
	h.collect()
	return h.answer(id).(*kmsg.ConsumerGroupHeartbeatResponse)
}

// member is one simulated consumer-protocol client: it owns what the last
// assignment gave it and revokes at once.
type cgClient struct {
	h      *harness
	group  string
	id     string
	epoch  int32
	owned  map[[16]byte][]int32
	topics Topics
}

func (h *harness) cgMember(group, id string, topics Topics, names ...string) *cgClient {
	h.t.Helper()
	c := &cgClient{h: h, group: group, id: id, topics: topics}
	resp := h.cgStep(id, cgJoin(group, id, names...), topics)
	c.take(resp)
	return c
}

// take applies a successful answer.
func (c *cgClient) take(resp *kmsg.ConsumerGroupHeartbeatResponse) {
	c.h.t.Helper()
	if resp.ErrorCode != 0 {
		c.h.t.Fatalf("%s: heartbeat: %v", c.id, kerr.ErrorForCode(resp.ErrorCode))
	}
	c.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		c.owned = map[[16]byte][]int32{}
		for _, t := range resp.Assignment.Topics {
			c.owned[t.TopicID] = t.Partitions
		}
	}
}

// beat heartbeats reporting what the client owns.
func (c *cgClient) beat() {
	c.h.t.Helper()
	owned := c.owned
	if owned == nil {
		owned = map[[16]byte][]int32{}
	}
	c.take(c.h.cgStep(c.id, cgBeat(c.group, c.id, c.epoch, owned), c.topics))
}

func (c *cgClient) count() int {
	n := 0
	for _, ps := range c.owned {
		n += len(ps)
	}
	return n
}

// noOverlap fails if two clients own one partition.
func noOverlap(t *testing.T, cs ...*cgClient) {
	t.Helper()
	seen := map[topicPartition]string{}
	for _, c := range cs {
		for id, ps := range c.owned {
			for _, p := range ps {
				tp := topicPartition{id, p}
				if o, ok := seen[tp]; ok {
					t.Fatalf("partition %v owned by %s and %s", tp, o, c.id)
				}
				seen[tp] = c.id
			}
		}
	}
}

// settle heartbeats every client, checking ownership after each, until
// no answer changes anything.
func settle(t *testing.T, cs ...*cgClient) {
	t.Helper()
	for range 10 {
		for _, c := range cs {
			c.beat()
			noOverlap(t, cs...)
		}
	}
}

func TestConsumerJoinRebalanceRevocation(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.cgMember("g", "a", topics, "foo")
	if a.epoch != 1 || a.count() != 6 {
		t.Fatalf("first member: epoch %d, %d partitions; want 1, 6", a.epoch, a.count())
	}
	b := h.cgMember("g", "b", topics, "foo")
	if b.epoch != 2 || b.count() != 0 {
		t.Fatalf("second member before a revoked: epoch %d, %d partitions; want 2, 0", b.epoch, b.count())
	}
	// a must revoke three partitions first, keeping its epoch.
	a.beat()
	if a.epoch != 1 || a.count() != 3 {
		t.Fatalf("a revoking: epoch %d, %d partitions; want 1, 3", a.epoch, a.count())
	}
	b.beat()
	if b.count() != 0 {
		t.Fatalf("b got %d partitions before a acknowledged the revocation", b.count())
	}
	a.beat()
	if a.epoch != 2 {
		t.Fatalf("a after revoking: epoch %d, want 2", a.epoch)
	}
	b.beat()
	if b.count() != 3 {
		t.Fatalf("b after a revoked: %d partitions, want 3", b.count())
	}
	noOverlap(t, a, b)
	if d := h.c.DescribeConsumer("g"); d.State != "Stable" || d.Epoch != 2 || d.AssignorName != "uniform" {
		t.Fatalf("describe: state %s epoch %d assignor %s", d.State, d.Epoch, d.AssignorName)
	}

	// b leaves: a gets everything back at the next epoch.
	resp := h.cgStep("b", cgBeat("g", "b", -1, nil), topics)
	if resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	a.beat()
	if a.epoch != 3 || a.count() != 6 {
		t.Fatalf("a after b left: epoch %d, %d partitions; want 3, 6", a.epoch, a.count())
	}
}

func TestConsumerFencing(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.cgMember("g", "a", topics, "foo")
	b := h.cgMember("g", "b", topics, "foo")
	settle(t, a, b)
	for _, tc := range []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		want *kerr.Error
	}{
		{"epoch ahead", cgBeat("g", "a", a.epoch+1, a.owned), kerr.FencedMemberEpoch},
		{"previous epoch owning what it was not given", cgBeat("g", "a", a.epoch-1, map[[16]byte][]int32{topicBar.ID: {0}}), kerr.FencedMemberEpoch},
		{"previous epoch without owned partitions", cgBeat("g", "a", a.epoch-1, nil), kerr.FencedMemberEpoch},
		{"unknown member", cgBeat("g", "zz", 1, nil), kerr.UnknownMemberID},
		{"unknown member leaving", cgBeat("g", "zz", -1, nil), kerr.UnknownMemberID},
		{"unknown group", cgBeat("nope", "a", 3, nil), kerr.UnknownMemberID},
		{"join with owned partitions", cgBeat("g", "c", 0, a.owned), kerr.InvalidRequest},
	} {
		if resp := h.cgStep("x", tc.req, topics); resp.ErrorCode != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), tc.want)
		}
	}
	bad := cgJoin("g", "c", "foo")
	bad.ServerAssignor = kmsg.StringPtr("sticky")
	if resp := h.cgStep("c", bad, topics); resp.ErrorCode != kerr.UnsupportedAssignor.Code {
		t.Errorf("unknown assignor: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	re := cgJoin("g", "c")
	re.SubscribedTopicNames, re.SubscribedTopicRegex = nil, kmsg.StringPtr("foo(")
	if resp := h.cgStep("c", re, topics); resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Errorf("bad regex: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// A commit must carry the member's current epoch.
	if code := h.c.CheckCommit(h.now, "g", "a", nil, a.epoch-1); code != kerr.StaleMemberEpoch.Code {
		t.Errorf("commit at an old epoch: %v", kerr.ErrorForCode(code))
	}
	if code := h.c.CheckCommit(h.now, "g", "a", nil, a.epoch); code != 0 {
		t.Errorf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := h.c.CheckCommit(h.now, "g", "", nil, -1); code != kerr.UnknownMemberID.Code {
		t.Errorf("simple commit to a group with members: %v", kerr.ErrorForCode(code))
	}
	// An OffsetFetch v9 is checked the same way; an admin's (no member, epoch
	// -1) is not, nor is one for a group the coordinator does not hold.
	for _, tc := range []struct {
		name   string
		group  string
		member *string
		epoch  int32
		want   int16
	}{
		{"member at its epoch", "g", kmsg.StringPtr("a"), a.epoch, 0},
		{"member at an old epoch", "g", kmsg.StringPtr("a"), a.epoch - 1, kerr.StaleMemberEpoch.Code},
		{"unknown member", "g", kmsg.StringPtr("zz"), 1, kerr.UnknownMemberID.Code},
		{"no member but an epoch", "g", nil, 3, kerr.UnknownMemberID.Code},
		{"admin", "g", nil, -1, 0},
		{"group not held", "nope", kmsg.StringPtr("a"), 3, 0},
	} {
		if code := h.c.CheckOffsetFetch(tc.group, tc.member, tc.epoch); code != tc.want {
			t.Errorf("offset fetch, %s: %v, want %v", tc.name, kerr.ErrorForCode(code), kerr.ErrorForCode(tc.want))
		}
	}
}

func TestConsumerStaticMemberRejoin(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	join := func(member string) *kmsg.ConsumerGroupHeartbeatRequest {
		r := cgJoin("g", member, "foo")
		r.InstanceID = kmsg.StringPtr("inst")
		return r
	}
	a := &cgClient{h: h, group: "g", id: "a1", topics: topics}
	a.take(h.cgStep("a1", join("a1"), topics))
	other := h.cgMember("g", "o", topics, "foo")
	settle(t, a, other)
	epoch, owned := a.epoch, a.owned

	if resp := h.cgStep("a2", join("a2"), topics); resp.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second member for a live instance: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	leave := cgBeat("g", "a1", -2, nil)
	leave.InstanceID = kmsg.StringPtr("inst")
	if resp := h.cgStep("a1", leave, topics); resp.ErrorCode != 0 || resp.MemberEpoch != -2 {
		t.Fatalf("static leave: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	d := h.c.DescribeConsumer("g")
	// The instance's partitions wait for it: no new epoch.
	if len(d.Members) != 2 || d.Epoch != epoch {
		t.Fatalf("after static leave: %d members, epoch %d; want 2, %d", len(d.Members), d.Epoch, epoch)
	}
	a2 := &cgClient{h: h, group: "g", id: "a2", topics: topics}
	a2.take(h.cgStep("a2", join("a2"), topics))
	if a2.epoch != epoch || !assignmentsEqual(a2.owned, owned) {
		t.Fatalf("restarted static member: epoch %d owned %v; want %d %v", a2.epoch, a2.owned, epoch, owned)
	}
	old := cgBeat("g", "a1", epoch, owned)
	old.InstanceID = kmsg.StringPtr("inst")
	if resp := h.cgStep("a1", old, topics); resp.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("the replaced member id: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func assignmentsEqual(a, b map[[16]byte][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

func TestConsumerRegexPicksUpNewTopic(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	req := cgJoin("g", "a")
	req.SubscribedTopicNames, req.SubscribedTopicRegex = nil, kmsg.StringPtr("foo|ba.*")
	if sub := h.c.ConsumerSubscription(req); len(sub.Regexes) != 1 || !slices.Equal(sub.Matches([]string{"bar", "foo", "foox"}), []string{"bar", "foo"}) {
		t.Fatalf("subscription: %+v", sub)
	}
	a := &cgClient{h: h, group: "g", id: "a", topics: topics}
	a.take(h.cgStep("a", req, topics))
	if a.count() != 6 {
		t.Fatalf("regex member: %d partitions, want 6", a.count())
	}
	a.topics = catalog(map[string]TopicInfo{"foo": topicFoo, "bar": topicBar, "other": {ID: [16]byte{9}, Partitions: 3}})
	a.beat()
	if a.count() != 8 || len(a.owned[topicBar.ID]) != 2 {
		t.Fatalf("after bar appeared: %v", a.owned)
	}
	d := h.c.DescribeConsumer("g")
	if d.Members[0].SubscribedTopicRegex == nil || len(d.Members[0].Assignment.TopicPartitions) != 2 {
		t.Fatalf("describe: %+v", d.Members[0])
	}
	// A topic that goes is revoked.
	a.topics = catalog(map[string]TopicInfo{"foo": topicFoo})
	a.beat()
	a.beat()
	if a.count() != 6 {
		t.Fatalf("after bar went: %v", a.owned)
	}
}

func TestConsumerSessionAndRevocationTimeouts(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	a := h.cgMember("g", "a", topics, "foo")
	b := h.cgMember("g", "b", topics, "foo")
	settle(t, a, b)
	// b falls silent; a keeps heartbeating and gets b's partitions once
	// b's session (45s by default) is over.
	for range 5 {
		h.after(10 * time.Second)
		a.beat()
	}
	a.beat()
	if a.count() != 6 || len(h.c.DescribeConsumer("g").Members) != 1 {
		t.Fatalf("after b's session expired: a owns %d, members %d", a.count(), len(h.c.DescribeConsumer("g").Members))
	}
	// c joins; a does not revoke within its rebalance timeout and is fenced.
	c := h.cgMember("g", "c", topics, "foo")
	h.cgStep("a", cgBeat("g", "a", a.epoch, nil), topics)
	h.after(testRebalance + time.Second)
	c.beat()
	if c.count() != 6 {
		t.Fatalf("after a was fenced: c owns %d", c.count())
	}
	if resp := h.cgStep("a", cgBeat("g", "a", a.epoch, a.owned), topics); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// Everyone gone: the group is Empty and expires.
	h.after(time.Hour)
	if len(h.c.Groups()) != 0 {
		t.Fatalf("groups after everyone left: %v", h.c.Groups())
	}
}

func TestConsumerRangeAssignor(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo, "bar": topicBar})
	var cs []*cgClient
	for _, id := range []string{"a", "b", "c", "d"} {
		req := cgJoin("g", id, "foo", "bar")
		req.ServerAssignor = kmsg.StringPtr("range")
		c := &cgClient{h: h, group: "g", id: id, topics: topics}
		c.take(h.cgStep(id, req, topics))
		cs = append(cs, c)
		settle(t, cs...)
	}
	want := map[string][2][]int32{"a": {{0, 1}, {0}}, "b": {{2, 3}, {1}}, "c": {{4}, nil}, "d": {{5}, nil}}
	for _, c := range cs {
		w := want[c.id]
		if !slices.Equal(c.owned[topicFoo.ID], w[0]) || !slices.Equal(c.owned[topicBar.ID], w[1]) {
			t.Errorf("%s owns foo %v bar %v; want %v %v", c.id, c.owned[topicFoo.ID], c.owned[topicBar.ID], w[0], w[1])
		}
	}
	if d := h.c.DescribeConsumer("g"); d.AssignorName != "range" || d.State != "Stable" {
		t.Fatalf("describe: %s %s", d.AssignorName, d.State)
	}
}

func TestConsumerAndClassicShareNoGroupID(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	h.stableGroup("classic", "c1")
	if resp := h.cgStep("x", cgJoin("classic", "x", "foo"), topics); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a classic group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	h.cgMember("cg", "a", topics, "foo")
	h.wantCode(h.step("c", joinReq("cg", "")), kerr.InconsistentGroupProtocol)
	h.wantCode(h.step("c", heartbeatReq("cg", "a", 1)), kerr.UnknownMemberID)
	if d, ok := h.c.Describe("cg"); !ok || d.State != "Dead" {
		t.Fatalf("DescribeGroups of a consumer group: %v %s", ok, d.State)
	}
	if d := h.c.DescribeConsumer("classic"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	var types []string
	for _, g := range h.c.List() {
		types = append(types, g.Group+":"+g.GroupType)
	}
	if !slices.Equal(types, []string{"cg:consumer", "classic:classic"}) {
		t.Fatalf("List: %v", types)
	}
	// Once empty, a consumer group may become classic again (offline
	// migration), and an empty classic group a consumer group.
	h.cgStep("a", cgBeat("cg", "a", -1, nil), topics)
	h.newMemberID("cg", "c")
	if d, _ := h.c.Describe("cg"); d.State == "Dead" {
		t.Fatalf("empty consumer group did not become classic")
	}
}
