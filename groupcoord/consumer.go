package groupcoord

import (
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group protocol (KIP-848): members send
// ConsumerGroupHeartbeat, the coordinator runs the assignor and hands each
// member its partitions. A group has an epoch that moves on with every
// change of membership, subscriptions or subscribed topics; the target
// assignment is computed for it at once (so a group here is never seen
// Assigning). Each member then reconciles towards its target: it first gives
// up the partitions it must lose (keeping its epoch), and only once it has
// is it moved to the target's epoch, taking the partitions no one else still
// holds. A partition is therefore never owned by two members at once.

// Kafka's defaults for group.consumer.session.timeout.ms and
// group.consumer.heartbeat.interval.ms.
const (
	defaultConsumerSessionTimeout    = 45 * time.Second
	defaultConsumerHeartbeatInterval = 5 * time.Second
)

// The member epochs a ConsumerGroupHeartbeat uses to join and leave.
const (
	epochJoin        = 0
	epochLeave       = -1
	epochStaticLeave = -2
)

// TopicInfo is a topic as the caller's catalog has it now.
type TopicInfo struct {
	ID [16]byte
	// Partitions is the partition count; 0 means the topic does not exist.
	Partitions int32
}

// Topics is the topic metadata the caller looked up for one heartbeat, for
// the names Subscription asked for.
type Topics struct {
	// Info holds what the caller found per topic name. A name absent is
	// one it did not look up: the coordinator keeps what it knew.
	Info map[string]TopicInfo
	// All, when not nil, is every topic that exists; the caller lists them
	// when a subscription is a regular expression (Subscription.Regexes).
	All []string
}

// Subscription is what a consumer heartbeat needs the caller to look up:
// the topics the group and the request subscribe to by name, and the
// regular expressions whose matches need the list of every topic.
type Subscription struct {
	Names   []string
	Regexes []*regexp.Regexp
}

// Matches lists the topics of all that the subscription's regexes match,
// which the caller looks up beside Names.
func (s Subscription) Matches(all []string) []string {
	var out []string
	for _, t := range all {
		if slices.ContainsFunc(s.Regexes, func(re *regexp.Regexp) bool { return re.MatchString(t) }) {
			out = append(out, t)
		}
	}
	return out
}

// memberState is where a consumer-protocol member is in reconciling towards
// its target assignment.
type memberState uint8

const (
	// memberStable: the member owns its target at the target's epoch.
	memberStable memberState = iota
	// memberUnrevoked: the member must give up partitions first; its
	// epoch stays until it has.
	memberUnrevoked
	// memberUnreleased: the member is at the target's epoch but waits for
	// partitions other members still hold.
	memberUnreleased
)

// topicPartition names one partition by topic id.
type topicPartition struct {
	topic     [16]byte
	partition int32
}

// assignment is a set of partitions by topic id, each list sorted.
type assignment map[[16]byte][]int32

// consumerGroup is the KIP-848 part of a group; a group is of this type
// while group.cg is set.
type consumerGroup struct {
	epoch           int32 // the group epoch
	assignmentEpoch int32 // the epoch the target assignment was computed for
	assignor        string

	members []*consumerMember // in join order
	byID    map[string]*consumerMember
	static  map[string]*consumerMember // by group.instance.id

	// topics are the subscribed topics that exist, as last looked up.
	topics map[string]TopicInfo
	// target is each member's target assignment.
	target map[string]assignment
	// owners says which member holds each partition, assigned or still
	// being revoked: a partition goes to another member only once free.
	owners map[topicPartition]string
}

// consumerMember is one member of a consumer-protocol group.
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch, previousEpoch int32
	state                memberState
	assigned             assignment // what the member may own now
	revoking             assignment // what it must give up first

	names    []string       // subscribed topic names
	regex    string         // subscribed regular expression, "" for none
	re       *regexp.Regexp // regex compiled to match whole names
	assignor string         // preferred server assignor, "" for the group's

	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	lastHeard        time.Time
	revokeDeadline   time.Time // when an unrevoked member is fenced
}

// makeConsumer makes g a consumer group. Only an empty group may
// change type (Kafka's offline migration): its committed offsets stay.
func (g *group) makeConsumer() {
	g.cg = &consumerGroup{
		byID:   make(map[string]*consumerMember),
		static: make(map[string]*consumerMember),
		topics: make(map[string]TopicInfo),
		target: make(map[string]assignment),
		owners: make(map[topicPartition]string),
	}
	g.commitOnly = false
	g.protocolType, g.protocol, g.leader = "", "", ""
}

// empty reports whether a group of any type has no members (and, for a
// classic group, no pending member ids).
func (g *group) empty() bool {
	switch {
	case g.cg != nil:
		return len(g.cg.members) == 0
	case g.sg != nil:
		return len(g.sg.members) == 0
	}
	return g.state == stateEmpty && len(g.pending) == 0
}

// compileSubscription compiles a subscribed regex as Kafka applies it: to
// the whole topic name.
func compileSubscription(regex string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + regex + ")$")
}

// ConsumerSubscription is what the caller must look up before stepping
// req: the topic names the group's members and req subscribe to, and their
// regexes (a regex req carries that does not compile is left out; the
// heartbeat will refuse it).
func (c *Coordinator) ConsumerSubscription(req *kmsg.ConsumerGroupHeartbeatRequest) Subscription {
	var s Subscription
	seen := map[string]bool{}
	add := func(re *regexp.Regexp) {
		if re != nil && !seen[re.String()] {
			seen[re.String()] = true
			s.Regexes = append(s.Regexes, re)
		}
	}
	s.Names = append(s.Names, req.SubscribedTopicNames...)
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		re, err := compileSubscription(*req.SubscribedTopicRegex)
		if err == nil {
			add(re)
		}
	}
	if g := c.groups[req.Group]; g != nil && g.cg != nil {
		for _, m := range g.cg.members {
			s.Names = append(s.Names, m.names...)
			add(m.re)
		}
	}
	slices.Sort(s.Names)
	s.Names = slices.Compact(s.Names)
	return s
}

// StepConsumer feeds one ConsumerGroupHeartbeat (v0–v1) at time now, with
// the topic metadata the caller looked up for ConsumerSubscription. It is
// answered in the next Ready under id, at once: the consumer protocol never
// holds a request back. clientID and clientHost are reported by
// ConsumerGroupDescribe.
func (c *Coordinator) StepConsumer(now time.Time, id uint64, clientID, clientHost string, req *kmsg.ConsumerGroupHeartbeatRequest, topics Topics) {
	c.advance(now)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	code, msg := c.consumerHeartbeat(now, clientID, clientHost, req, topics, resp)
	if code != 0 {
		resp = req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
	}
	c.respond(id, resp)
	if g := c.groups[req.Group]; g != nil {
		c.schedule(g)
	}
	c.advance(now)
}

// validateConsumerHeartbeat is Kafka's check of the request's shape, before
// the group is looked at.
func validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	switch {
	case req.Group == "":
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != epochJoin):
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return kerr.InvalidRequest.Code, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest.Code, "RackId can't be empty."
	case req.MemberEpoch < epochStaticLeave:
		return kerr.InvalidRequest.Code, "MemberEpoch is invalid."
	case req.MemberEpoch == epochStaticLeave && req.InstanceID == nil:
		return kerr.InvalidRequest.Code, "InstanceId can't be null when leaving as a static member."
	case req.SubscribedTopicNames != nil && req.SubscribedTopicRegex != nil:
		return kerr.InvalidRequest.Code, "SubscribedTopicNames and SubscribedTopicRegex can't both be set."
	}
	if req.MemberEpoch == epochJoin {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return kerr.InvalidRequest.Code, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(assignorNames, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor.Code, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: uniform, range."
	}
	return 0, ""
}

// consumerHeartbeat handles one heartbeat, filling resp on success.
func (c *Coordinator) consumerHeartbeat(now time.Time, clientID, clientHost string, req *kmsg.ConsumerGroupHeartbeatRequest, topics Topics, resp *kmsg.ConsumerGroupHeartbeatResponse) (int16, string) {
	if code, msg := validateConsumerHeartbeat(req); code != 0 {
		return code, msg
	}
	var re *regexp.Regexp
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		var err error
		if re, err = compileSubscription(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex " + *req.SubscribedTopicRegex + " is not a valid regular expression: " + err.Error()
		}
	}
	g := c.groups[req.Group]
	switch {
	case g != nil && g.sg != nil, g != nil && g.cg == nil && !g.empty():
		return kerr.GroupIDNotFound.Code, "Group " + req.Group + " is not a consumer group."
	case req.MemberEpoch < 0 && (g == nil || g.cg == nil):
		return kerr.GroupIDNotFound.Code, "Consumer group " + req.Group + " not found."
	case g == nil && req.MemberEpoch != epochJoin, g != nil && g.cg == nil && req.MemberEpoch != epochJoin:
		// Kafka keeps groups across restarts and answers GROUP_ID_NOT_FOUND;
		// here a group is lost when its coordinator moves or restarts, so
		// its members are told they are unknown, which makes them rejoin.
		return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + req.Group + "."
	case g == nil && len(c.groups) >= c.cfg.MaxGroups:
		c.log.Warn().Str("group", req.Group).Int("max_groups", c.cfg.MaxGroups).Msg("refusing a consumer join that would make one group too many")
		return kerr.CoordinatorNotAvailable.Code, ""
	case g == nil:
		g = c.newGroup(now, req.Group)
		g.makeConsumer()
		c.log.Info().Str("group", req.Group).Msg("created consumer group")
	case g.cg == nil:
		g.makeConsumer()
		c.log.Info().Str("group", req.Group).Msg("empty classic group converted to a consumer group")
	}
	switch req.MemberEpoch {
	case epochLeave, epochStaticLeave:
		return g.consumerLeave(now, req, resp)
	}
	m, code, msg := g.consumerMemberFor(now, clientID, clientHost, req)
	if code != 0 {
		return code, msg
	}
	cg := g.cg
	joined := req.MemberEpoch == epochJoin
	if !joined {
		if code := m.checkEpoch(req); code != 0 {
			return code, "The consumer group member has a greater member epoch (" + itoa(m.epoch) +
				") than the one known by the client (" + itoa(req.MemberEpoch) + ")."
		}
	}
	m.lastHeard = now
	m.clientID, m.clientHost = clientID, clientHost
	if req.RackID != nil {
		m.rackID = kmsg.StringPtr(*req.RackID)
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalanceTimeout = min(millis(req.RebalanceTimeoutMillis), c.cfg.MaxRebalanceTimeout)
	}
	changed := m.updateSubscription(req, re)
	if changed {
		cg.assignor = cg.chooseAssignor()
	}
	if cg.refreshTopics(topics) || changed {
		g.bumpEpoch(now, "member "+m.id+" joined or changed its subscription")
	}
	oldEpoch, oldAssigned := m.epoch, m.assigned
	g.reconcile(now, m, ownedPartitions(req.Topics))
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.ConsumerHeartbeatInterval / time.Millisecond)
	full := req.Topics != nil && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil)
	if joined || full || m.epoch != oldEpoch || !m.assigned.equal(oldAssigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, tp := range m.assigned.sorted() {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = tp.id, slices.Clone(tp.partitions)
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return 0, ""
}

// consumerMemberFor finds the member a heartbeat is from, or adds the one
// joining: a static member whose instance left with epoch -2 is taken over
// by the new member id, assignment and epoch included; an instance still in
// use by another member id is UNRELEASED_INSTANCE_ID on join and
// FENCED_INSTANCE_ID after.
func (g *group) consumerMemberFor(now time.Time, clientID, clientHost string, req *kmsg.ConsumerGroupHeartbeatRequest) (*consumerMember, int16, string) {
	cg := g.cg
	memberID := req.MemberID
	if memberID == "" {
		// v0: the coordinator names the member.
		memberID = g.c.newMemberID(clientID, req.InstanceID)
	}
	if req.InstanceID != nil {
		old := cg.static[*req.InstanceID]
		switch {
		case old != nil && old.id == memberID:
			if old.epoch == epochStaticLeave && req.MemberEpoch == epochJoin {
				old.epoch = old.previousEpoch
			}
			return old, 0, ""
		case old != nil && req.MemberEpoch != epochJoin:
			return nil, kerr.FencedInstanceID.Code, "Static member " + memberID + " with instance id " + *req.InstanceID + " was fenced by member " + old.id + "."
		case old != nil && old.epoch != epochStaticLeave:
			return nil, kerr.UnreleasedInstanceID.Code, "Static member with instance id " + *req.InstanceID + " is still in use by member " + old.id + "."
		case old != nil:
			g.replaceConsumerStatic(old, memberID)
			return old, 0, ""
		}
	}
	if m := cg.byID[memberID]; m != nil {
		return m, 0, ""
	}
	if req.MemberEpoch != epochJoin {
		return nil, kerr.UnknownMemberID.Code, "Member " + memberID + " is not a member of group " + g.id + "."
	}
	if len(cg.members) >= g.c.cfg.MaxGroupSize {
		g.c.log.Warn().Str("group", g.id).Int("max_size", g.c.cfg.MaxGroupSize).Msg("refusing a new member of a full consumer group")
		return nil, kerr.GroupMaxSizeReached.Code, "The consumer group has reached its maximum capacity of " + itoa(int32(g.c.cfg.MaxGroupSize)) + " members."
	}
	m := &consumerMember{
		id:             memberID,
		clientID:       clientID,
		clientHost:     clientHost,
		sessionTimeout: g.c.cfg.ConsumerSessionTimeout,
		lastHeard:      now,
		assigned:       assignment{},
	}
	if req.InstanceID != nil {
		m.instanceID = kmsg.StringPtr(*req.InstanceID)
		cg.static[*req.InstanceID] = m
	}
	cg.members = append(cg.members, m)
	cg.byID[m.id] = m
	cg.target[m.id] = assignment{}
	g.c.log.Info().Str("group", g.id).Str("member", m.id).Msg("consumer group member joined")
	return m, 0, ""
}

// replaceConsumerStatic hands a static member that left with epoch -2 to
// the member id that rejoins its instance, with its epoch and partitions.
func (g *group) replaceConsumerStatic(m *consumerMember, newID string) {
	cg := g.cg
	g.c.log.Info().Str("group", g.id).Str("instance", *m.instanceID).Str("old_member", m.id).Str("member", newID).
		Msg("static member rejoined with a new member id")
	delete(cg.byID, m.id)
	cg.target[newID] = cg.target[m.id]
	delete(cg.target, m.id)
	for tp, owner := range cg.owners {
		if owner == m.id {
			cg.owners[tp] = newID
		}
	}
	m.id = newID
	m.epoch = m.previousEpoch
	cg.byID[newID] = m
}

// checkEpoch is Kafka's fencing of a heartbeat's member epoch: a greater
// epoch than the member's, or a smaller one that is not the previous epoch
// sent with partitions the member still owns (a lost response), is
// FENCED_MEMBER_EPOCH.
func (m *consumerMember) checkEpoch(req *kmsg.ConsumerGroupHeartbeatRequest) int16 {
	switch {
	case req.MemberEpoch > m.epoch:
		return kerr.FencedMemberEpoch.Code
	case req.MemberEpoch < m.epoch:
		owned := ownedPartitions(req.Topics)
		if req.MemberEpoch != m.previousEpoch || owned == nil || !owned.subsetOf(m.assigned) {
			return kerr.FencedMemberEpoch.Code
		}
	}
	return 0
}

// updateSubscription takes the fields of req that are set (a null field
// means unchanged) and reports whether the assignment may change.
func (m *consumerMember) updateSubscription(req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp) bool {
	changed := false
	if req.SubscribedTopicNames != nil {
		if m.setNames(req.SubscribedTopicNames) || m.regex != "" {
			changed = true
		}
		m.regex, m.re = "", nil
	}
	if req.SubscribedTopicRegex != nil {
		if *req.SubscribedTopicRegex != m.regex || len(m.names) > 0 {
			changed = true
		}
		m.names, m.regex, m.re = nil, *req.SubscribedTopicRegex, re
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor = *req.ServerAssignor
		changed = true
	}
	return changed
}

// subscribes reports whether m subscribes to topic.
func (m *consumerMember) subscribes(topic string) bool {
	if m.re != nil {
		return m.re.MatchString(topic)
	}
	_, ok := slices.BinarySearch(m.names, topic)
	return ok
}

// refreshTopics recomputes the subscribed topics from the members'
// subscriptions and the caller's lookup, and reports whether they changed:
// a topic subscribed or unsubscribed, created, deleted or grown.
func (cg *consumerGroup) refreshTopics(topics Topics) bool {
	next := make(map[string]TopicInfo)
	consider := func(name string) {
		if _, done := next[name]; done {
			return
		}
		info, looked := topics.Info[name]
		if !looked {
			info, looked = cg.topics[name]
			if topics.All != nil {
				if _, listed := slices.BinarySearch(topics.All, name); !listed {
					looked = false
				}
			}
		}
		if looked && info.Partitions > 0 {
			next[name] = info
		}
	}
	for _, m := range cg.members {
		for _, n := range m.names {
			consider(n)
		}
		if m.re == nil {
			continue
		}
		known := topics.All
		if known == nil {
			// Not listed this time: keep the matches known before.
			for n := range cg.topics {
				known = append(known, n)
			}
		}
		for _, n := range known {
			if m.re.MatchString(n) {
				consider(n)
			}
		}
	}
	if len(next) == len(cg.topics) {
		same := true
		for n, info := range next {
			if cg.topics[n] != info {
				same = false
				break
			}
		}
		if same {
			return false
		}
	}
	cg.topics = next
	return true
}

// bumpEpoch moves the group to a new epoch and computes its target
// assignment.
func (g *group) bumpEpoch(now time.Time, reason string) {
	cg := g.cg
	cg.epoch++
	g.c.rebalances = append(g.c.rebalances, Rebalance{Group: g.id, Generation: cg.epoch})
	cg.target = cg.assign()
	cg.assignmentEpoch = cg.epoch
	g.c.log.Info().Str("group", g.id).Int32("epoch", cg.epoch).Str("assignor", cg.assignorName()).
		Int("members", len(cg.members)).Str("reason", reason).Msg("consumer group target assignment computed")
}

// reconcile moves m towards its target assignment. owned is what the
// member says it owns (nil when the request did not say).
func (g *group) reconcile(now time.Time, m *consumerMember, owned assignment) {
	cg := g.cg
	switch m.state {
	case memberUnrevoked:
		if owned == nil || owned.overlaps(m.revoking) {
			return
		}
		for _, tp := range m.revoking.list() {
			if cg.owners[tp] == m.id {
				delete(cg.owners, tp)
			}
		}
		m.revoking = nil
		m.revokeDeadline = time.Time{}
		g.towardsTarget(now, m)
	case memberUnreleased:
		g.towardsTarget(now, m)
	default:
		if m.epoch != cg.assignmentEpoch {
			g.towardsTarget(now, m)
		}
	}
}

// towardsTarget is one reconciliation step: partitions the target no
// longer gives m are revoked first, at m's current epoch; with none to
// revoke m moves to the target's epoch and takes the partitions that are
// free.
func (g *group) towardsTarget(now time.Time, m *consumerMember) {
	cg := g.cg
	target := cg.target[m.id]
	kept, revoke := assignment{}, assignment{}
	for _, tp := range m.assigned.list() {
		if target.has(tp) {
			kept.add(tp)
		} else {
			revoke.add(tp)
		}
	}
	if len(revoke) > 0 {
		m.assigned, m.revoking = kept, revoke
		m.state = memberUnrevoked
		m.revokeDeadline = now.Add(m.rebalanceTimeout)
		return
	}
	if m.epoch != cg.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, cg.assignmentEpoch
	}
	m.state = memberStable
	for _, tp := range target.list() {
		switch owner := cg.owners[tp]; owner {
		case "", m.id:
			cg.owners[tp] = m.id
			kept.add(tp)
		default:
			m.state = memberUnreleased
		}
	}
	m.assigned = kept
}

// consumerLeave handles epochs -1 (leave) and -2 (a static member that
// will be back: it keeps its partitions until its session expires).
func (g *group) consumerLeave(now time.Time, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) (int16, string) {
	cg := g.cg
	var m *consumerMember
	if req.InstanceID != nil {
		m = cg.static[*req.InstanceID]
		if m != nil && m.id != req.MemberID {
			return kerr.FencedInstanceID.Code, "Static member " + req.MemberID + " with instance id " + *req.InstanceID + " was fenced by member " + m.id + "."
		}
	} else {
		m = cg.byID[req.MemberID]
	}
	if m == nil {
		return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of group " + g.id + "."
	}
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == epochStaticLeave {
		g.c.log.Info().Str("group", g.id).Str("member", m.id).Str("instance", *m.instanceID).Msg("static consumer group member left temporarily")
		if m.epoch != epochStaticLeave {
			m.previousEpoch = m.epoch
		}
		m.epoch = epochStaticLeave
		m.lastHeard = now
		return 0, ""
	}
	g.removeConsumerMember(now, m, "member "+m.id+" left")
	return 0, ""
}

// removeConsumerMember takes m out, frees its partitions and assigns the
// group anew.
func (g *group) removeConsumerMember(now time.Time, m *consumerMember, reason string) {
	cg := g.cg
	cg.members = slices.DeleteFunc(cg.members, func(o *consumerMember) bool { return o == m })
	delete(cg.byID, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m {
		delete(cg.static, *m.instanceID)
	}
	for tp, owner := range cg.owners {
		if owner == m.id {
			delete(cg.owners, tp)
		}
	}
	cg.assignor = cg.chooseAssignor()
	g.c.log.Info().Str("group", g.id).Str("member", m.id).Str("reason", reason).Msg("consumer group member removed")
	if len(cg.members) == 0 {
		g.emptySince = now
	}
	cg.refreshTopics(Topics{})
	g.bumpEpoch(now, reason)
}

// ownedPartitions is the request's owned partitions, nil when unchanged.
func ownedPartitions(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) assignment {
	if topics == nil {
		return nil
	}
	a := assignment{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			a.add(topicPartition{t.TopicID, p})
		}
	}
	return a
}

// add puts tp in the set.
func (a assignment) add(tp topicPartition) {
	ps := a[tp.topic]
	i, found := slices.BinarySearch(ps, tp.partition)
	if !found {
		a[tp.topic] = slices.Insert(ps, i, tp.partition)
	}
}

// has reports whether tp is in the set.
func (a assignment) has(tp topicPartition) bool {
	_, found := slices.BinarySearch(a[tp.topic], tp.partition)
	return found
}

// list is every partition of the set, by topic id then partition.
func (a assignment) list() []topicPartition {
	var out []topicPartition
	for _, t := range a.sorted() {
		for _, p := range t.partitions {
			out = append(out, topicPartition{t.id, p})
		}
	}
	return out
}

// topicPartitions is one topic's partitions of an assignment.
type topicPartitions struct {
	id         [16]byte
	partitions []int32
}

// sorted lists the set's topics in id order, leaving out empty ones.
func (a assignment) sorted() []topicPartitions {
	out := make([]topicPartitions, 0, len(a))
	for id, ps := range a {
		if len(ps) > 0 {
			out = append(out, topicPartitions{id, ps})
		}
	}
	slices.SortFunc(out, func(x, y topicPartitions) int { return compareIDs(x.id, y.id) })
	return out
}

// equal reports whether both sets hold the same partitions.
func (a assignment) equal(b assignment) bool {
	return a.subsetOf(b) && b.subsetOf(a)
}

// subsetOf reports whether every partition of a is in b.
func (a assignment) subsetOf(b assignment) bool {
	for _, tp := range a.list() {
		if !b.has(tp) {
			return false
		}
	}
	return true
}

// overlaps reports whether a and b share a partition.
func (a assignment) overlaps(b assignment) bool {
	for _, tp := range a.list() {
		if b.has(tp) {
			return true
		}
	}
	return false
}

// compareIDs orders topic ids bytewise.
func compareIDs(a, b [16]byte) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}
