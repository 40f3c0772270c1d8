package groupcoord

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minRejoinWait bounds how often the join phase restarts while the only
// members left are static ones that have not rejoined: with a zero rebalance
// timeout it would otherwise restart without time passing.
const minRejoinWait = time.Second

// groupState is a classic group's state. Dead is not one: a deleted group
// leaves memory, and the gateway answers for groups it does not hold.
type groupState uint8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
)

// String spells the state as Kafka does in DescribeGroups and ListGroups.
func (s groupState) String() string {
	switch s {
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Empty"
	}
}

// group is one consumer group's live membership.
type group struct {
	c  *Coordinator
	id string

	state        groupState
	generation   int32
	protocolType string
	protocol     string // selected for the current generation
	leader       string

	members []*member          // in join order: leader succession and describe order
	byID    map[string]*member // members by member id
	static  map[string]*member // static members by group.instance.id
	pending []*pendingMember   // told MEMBER_ID_REQUIRED, not yet rejoined
	// supported counts, per protocol name, the members that support it.
	supported map[string]int

	// joinDeadline ends the join phase of PreparingRebalance.
	joinDeadline time.Time
	// initialDelay marks a join phase that started from Empty and waits the
	// configured delay rather than for every member; delayLeft is how much
	// of the rebalance timeout it may still extend by, and newMemberAdded
	// whether a member joined during the current stretch.
	initialDelay   bool
	delayLeft      time.Duration
	newMemberAdded bool
	// syncDeadline is when members that got a JoinGroup answer but have not
	// sent SyncGroup are removed.
	syncDeadline time.Time

	// emptySince is when the group last became Empty (or was made), and
	// lastCommit when a commit was last accepted; committed says whether
	// one ever was. Together they say when an Empty group expires.
	emptySince time.Time
	lastCommit time.Time
	committed  bool
	// commitOnly marks a group made by a simple commit that nobody has
	// joined: it is kept only to expire its offsets, and Describe and List
	// leave it to the gateway, which answers from DIS as before.
	commitOnly bool
	// stamp changes with every generation and incarnation: see CommitFence.
	stamp uint64
	// rebalanceStart is when the rebalance under way began; zero when
	// none is.
	rebalanceStart time.Time
	// cg is set while the group is a consumer-protocol (KIP-848) group;
	// the classic fields then stay empty. A group id is one type at a
	// time, as in Kafka.
	cg *consumerGroup
	// sg is set while the group is a share group (KIP-932); then cg is
	// nil and the classic fields stay empty.
	sg *shareGroup

	next       timer // earliest deadline, as placed in the heap
	timerIndex int   // position in the heap, -1 when not in it
}

// member is one group member.
type member struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string

	protocols        []kmsg.JoinGroupRequestProtocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	lastHeard        time.Time

	join *parked // unanswered JoinGroup
	sync *parked // unanswered SyncGroup

	assignment   []byte
	awaitingSync bool // answered for this generation, SyncGroup not yet seen
}

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED; it blocks
// rebalance completion until it joins or expires, as in Kafka.
type pendingMember struct {
	id      string
	expires time.Time
}

// parked is a request whose answer waits for the rebalance.
type parked struct {
	id      uint64
	version int16
}

// newGroup makes an empty group and remembers it.
func (c *Coordinator) newGroup(now time.Time, id string) *group {
	c.stamps++
	g := &group{
		c:          c,
		id:         id,
		byID:       make(map[string]*member),
		static:     make(map[string]*member),
		supported:  make(map[string]int),
		emptySince: now,
		stamp:      c.stamps,
		timerIndex: -1,
	}
	c.groups[id] = g
	return g
}

// full reports whether a new member would take the group past
// MaxGroupSize. Every member counts, rejoined or not, so a group never
// holds more than the cap.
func (g *group) full() bool { return len(g.members) >= g.c.cfg.MaxGroupSize }

// expiresAt is when an Empty group is forgotten: retention after it became
// empty or after its last commit, whichever is later (KIP-211); a group
// without offsets committed here lingers only emptyGroupLinger.
func (g *group) expiresAt() time.Time {
	base := g.emptySince
	if g.lastCommit.After(base) {
		base = g.lastCommit
	}
	if !g.committed {
		return base.Add(emptyGroupLinger)
	}
	return base.Add(g.c.cfg.OffsetsRetention)
}

// expire forgets an Empty group whose time has passed.
func (g *group) expire() {
	g.c.log.Info().Str("group", g.id).Bool("offsets", g.committed).Msg("empty group expired")
	g.c.forget(g, g.committed)
}

// protocolNames lists the distinct protocol names of a JoinGroup, so a
// client that repeats a name is not counted twice.
func protocolNames(protocols []kmsg.JoinGroupRequestProtocol) []string {
	names := make([]string, 0, len(protocols))
	for _, p := range protocols {
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// cloneProtocols copies protocols out of a request, whose bytes may alias a
// buffer the caller reuses.
func cloneProtocols(protocols []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, len(protocols))
	for i, p := range protocols {
		out[i] = kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)}
	}
	return out
}

// matches reports whether a rejoin carries exactly the protocols the member
// has, metadata included; only then may a follower skip a rebalance.
func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// metadata is the member's metadata for protocol.
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// supportsProtocols is Kafka's admission check: the first member of an empty
// group needs a protocol type and protocols; later ones need the group's
// protocol type and one protocol every member supports.
func (g *group) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if g == nil || g.state == stateEmpty {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supported[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol for the next generation as Kafka does:
// among the protocols every member supports, each member votes for the one
// it lists first; most votes wins, ties going to the first member's
// preference.
func (g *group) selectProtocol() string {
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.supported[p.Name] == len(g.members) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", 0
	for _, m := range g.members {
		for _, p := range m.protocols {
			if votes[p.Name] > bestVotes {
				best, bestVotes = p.Name, votes[p.Name]
			}
		}
	}
	return best
}

// claimedGeneration is the newest generation the members of a "consumer"
// group say they last owned partitions in (ConsumerMemberMetadata v2+), 0
// for none. A group that moved to this coordinator starts again in memory,
// while its members still claim what the last coordinator gave them;
// cooperative assignors let the newest claim of a partition win, so the
// next generation must be newer than every claim (docs/design.md §6,
// "Handing groups over"), as Kafka's coordinator, which reloads the
// generation it persisted, guarantees.
func (g *group) claimedGeneration() int32 {
	if g.protocolType != "consumer" {
		return 0
	}
	var claimed int32
	for _, m := range g.members {
		for _, p := range m.protocols {
			meta := kmsg.NewConsumerMemberMetadata()
			if meta.ReadFrom(p.Metadata) == nil && meta.Version >= 2 {
				claimed = max(claimed, meta.Generation)
			}
		}
	}
	return claimed
}

// rebalanceTimeout is the longest rebalance timeout of the members: how long
// the join phase waits for all of them.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// validateMember is Kafka's check that a request comes from a current
// member: a static instance now owned by another member id is fenced, an
// unknown member id is unknown.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		if s := g.static[*instanceID]; s != nil && s.id != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if g.byID[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// pendingIndex is the position of a pending member id, or -1.
func (g *group) pendingIndex(id string) int {
	return slices.IndexFunc(g.pending, func(p *pendingMember) bool { return p.id == id })
}

// removePending forgets a pending member id.
func (g *group) removePending(id string) {
	if i := g.pendingIndex(id); i >= 0 {
		g.pending = slices.Delete(g.pending, i, i+1)
	}
}

// addMember adds a member; the first member of a group leads it and sets
// its protocol type.
func (g *group) addMember(m *member, protocolType string) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	g.members = append(g.members, m)
	g.byID[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m
	}
	g.countProtocols(m, 1)
	g.commitOnly = false
	if g.leader == "" {
		g.leader = m.id
	}
	if g.initialDelay {
		g.newMemberAdded = true
	}
}

// updateMember takes a rejoining member's new protocols and timeouts.
func (g *group) updateMember(m *member, req *kmsg.JoinGroupRequest, session, rebalance time.Duration) {
	g.countProtocols(m, -1)
	m.protocols = cloneProtocols(req.Protocols)
	g.countProtocols(m, 1)
	m.sessionTimeout, m.rebalanceTimeout = session, rebalance
}

// countProtocols adds delta to the support count of each of m's protocols.
func (g *group) countProtocols(m *member, delta int) {
	for _, name := range protocolNames(m.protocols) {
		g.supported[name] += delta
		if g.supported[name] == 0 {
			delete(g.supported, name)
		}
	}
}

// parkJoin makes p the member's waiting JoinGroup; an older one it replaces
// is answered REBALANCE_IN_PROGRESS so that no request goes unanswered.
func (g *group) parkJoin(m *member, p *parked) {
	if m.join != nil {
		g.c.respond(m.join.id, joinError(m.join.version, m.id, kerr.RebalanceInProgress.Code))
	}
	m.join = p
}

// parkSync makes p the member's waiting SyncGroup, answering a replaced one
// with REBALANCE_IN_PROGRESS.
func (g *group) parkSync(m *member, p *parked) {
	if m.sync != nil {
		g.c.respond(m.sync.id, syncError(m.sync.version, kerr.RebalanceInProgress.Code))
	}
	m.sync = p
}

// removeMember takes m out of the group without a rebalance. Its waiting
// JoinGroup is answered UNKNOWN_MEMBER_ID, as Kafka does so that a live
// client rejoins; its waiting SyncGroup REBALANCE_IN_PROGRESS, what the
// rebalance that follows tells every other waiting SyncGroup.
func (g *group) removeMember(m *member) {
	if m.join != nil {
		g.c.respond(m.join.id, joinError(m.join.version, m.id, kerr.UnknownMemberID.Code))
		m.join = nil
	}
	if m.sync != nil {
		g.c.respond(m.sync.id, syncError(m.sync.version, kerr.RebalanceInProgress.Code))
		m.sync = nil
	}
	g.countProtocols(m, -1)
	g.members = slices.DeleteFunc(g.members, func(o *member) bool { return o == m })
	delete(g.byID, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m {
		delete(g.static, *m.instanceID)
	}
	m.awaitingSync = false
	if g.leader == m.id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
	g.clearSyncDeadlineIfDone()
}

// removeMemberAndUpdate removes m and moves the group on: a stable or
// completing group rebalances for the rest, a preparing one may now have
// everyone it waits for.
func (g *group) removeMemberAndUpdate(t time.Time, m *member, reason string) {
	g.removeMember(m)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalance(t, reason)
	case statePreparingRebalance:
		g.tryCompleteJoin(t)
	}
}

// prepareRebalance enters PreparingRebalance: members must rejoin within the
// rebalance timeout. From Empty the join phase instead lasts the initial
// delay, so that a group starting up does not rebalance once per member.
func (g *group) prepareRebalance(t time.Time, reason string) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				g.c.respond(m.sync.id, syncError(m.sync.version, kerr.RebalanceInProgress.Code))
				m.sync = nil
				m.lastHeard = t
			}
		}
	}
	for _, m := range g.members {
		m.awaitingSync = false
	}
	g.syncDeadline = time.Time{}
	timeout := g.rebalanceTimeout()
	delay := g.c.cfg.InitialRebalanceDelay
	g.initialDelay = g.state == stateEmpty && delay > 0
	g.newMemberAdded = false
	if g.initialDelay {
		g.joinDeadline = t.Add(delay)
		g.delayLeft = max(timeout-delay, 0)
	} else {
		g.joinDeadline = t.Add(timeout)
	}
	if g.rebalanceStart.IsZero() {
		g.rebalanceStart = t
	}
	g.state = statePreparingRebalance
	g.c.log.Info().Str("group", g.id).Int32("generation", g.generation).Str("reason", reason).Msg("preparing to rebalance group")
	g.tryCompleteJoin(t)
}

// maybePrepareRebalance starts a rebalance unless one is already waiting for
// joins.
func (g *group) maybePrepareRebalance(t time.Time, reason string) {
	if g.state != statePreparingRebalance {
		g.prepareRebalance(t, reason)
	}
}

// tryCompleteJoin ends the join phase early once every member has rejoined
// and no member id handed out is outstanding; the initial delay is always
// waited out.
func (g *group) tryCompleteJoin(t time.Time) {
	if g.state != statePreparingRebalance || g.initialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	g.completeJoin(t)
}

// joinPhaseEnded handles the join deadline: the initial delay extends while
// members keep arriving (never past the rebalance timeout); otherwise the
// join phase is over.
func (g *group) joinPhaseEnded(t time.Time) {
	if g.initialDelay && g.newMemberAdded && g.delayLeft > 0 {
		d := min(g.c.cfg.InitialRebalanceDelay, g.delayLeft)
		g.delayLeft -= d
		g.newMemberAdded = false
		g.joinDeadline = t.Add(d)
		return
	}
	g.completeJoin(t)
}

// completeJoin ends the join phase: dynamic members that did not rejoin are
// removed (static ones keep their place until their session expires, as in
// Kafka), the generation advances, and every rejoined member gets its
// JoinGroup answer — the leader with everyone's metadata.
func (g *group) completeJoin(t time.Time) {
	g.initialDelay = false
	for _, m := range slices.Clone(g.members) {
		if m.join == nil && m.instanceID == nil {
			g.c.log.Info().Str("group", g.id).Str("member", m.id).Msg("removing member that did not rejoin")
			g.removeMember(m)
		}
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that have not rejoined remain: keep waiting
		// until they rejoin or their sessions expire.
		g.joinDeadline = t.Add(max(g.rebalanceTimeout(), minRejoinWait))
		return
	}
	g.joinDeadline = time.Time{}
	g.generation = max(g.generation, g.claimedGeneration()) + 1
	rb := Rebalance{Group: g.id, Generation: g.generation}
	if !g.rebalanceStart.IsZero() {
		rb.Took = t.Sub(g.rebalanceStart)
	}
	g.c.rebalances = append(g.c.rebalances, rb)
	g.rebalanceStart = time.Time{}
	g.c.stamps++
	g.stamp = g.c.stamps
	if len(g.members) == 0 {
		g.state = stateEmpty
		g.emptySince = t
		g.protocol = ""
		g.c.log.Info().Str("group", g.id).Int32("generation", g.generation).Msg("group is empty")
		return
	}
	g.protocol = g.selectProtocol()
	g.state = stateCompletingRebalance
	for _, m := range g.members {
		if m.join != nil {
			var view []kmsg.JoinGroupResponseMember
			if m.id == g.leader {
				view = g.memberMetadata(m.join.version)
			}
			g.c.respond(m.join.id, g.joinResponse(m.join.version, m.id, g.leader, view))
			m.join = nil
		}
		m.lastHeard = t
		m.awaitingSync = true
	}
	g.syncDeadline = t.Add(g.rebalanceTimeout())
	g.c.log.Info().Str("group", g.id).Int32("generation", g.generation).Str("protocol", g.protocol).
		Int("members", len(g.members)).Str("leader", g.leader).Msg("rebalance joined, waiting for leader's assignment")
}

// electJoinedLeader keeps the leader if it rejoined, else hands leadership
// to the first member that did; false when none did.
func (g *group) electJoinedLeader() bool {
	if l := g.byID[g.leader]; l != nil && l.join != nil {
		return true
	}
	for _, m := range g.members {
		if m.join != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// syncDeadlinePassed removes the members that got their JoinGroup answer but
// never sent SyncGroup, and rebalances for the rest.
func (g *group) syncDeadlinePassed(t time.Time) {
	g.syncDeadline = time.Time{}
	// The deadline is cleared once no member owes a SyncGroup, so some do.
	var late []*member
	for _, m := range g.members {
		if m.awaitingSync {
			late = append(late, m)
		}
	}
	for _, m := range late {
		g.c.log.Info().Str("group", g.id).Str("member", m.id).Msg("removing member that did not sync")
		g.removeMember(m)
	}
	g.prepareRebalance(t, "members did not sync in time")
}

// synced notes that m sent SyncGroup for this generation.
func (g *group) synced(m *member) {
	m.awaitingSync = false
	g.clearSyncDeadlineIfDone()
}

// clearSyncDeadlineIfDone drops the sync deadline once no member owes a
// SyncGroup.
func (g *group) clearSyncDeadlineIfDone() {
	if !slices.ContainsFunc(g.members, func(m *member) bool { return m.awaitingSync }) {
		g.syncDeadline = time.Time{}
	}
}

// memberMetadata is the leader's view of the group: every member with its
// metadata for the selected protocol, and its instance id from v5.
func (g *group) memberMetadata(version int16) []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		if version >= 5 {
			jm.InstanceID = m.instanceID
		}
		jm.ProtocolMetadata = m.metadata(g.protocol)
		out = append(out, jm)
	}
	return out
}

// joinResponse is a successful JoinGroup answer for the current generation.
func (g *group) joinResponse(version int16, memberID, leaderID string, members []kmsg.JoinGroupResponseMember) *kmsg.JoinGroupResponse {
	resp := &kmsg.JoinGroupResponse{Version: version}
	resp.Default()
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = leaderID
	resp.MemberID = memberID
	resp.Members = members
	return resp
}

// joinError is a failed JoinGroup answer: no generation, protocol or leader.
func joinError(version int16, memberID string, code int16) *kmsg.JoinGroupResponse {
	resp := &kmsg.JoinGroupResponse{Version: version}
	resp.Default()
	resp.ErrorCode = code
	resp.MemberID = memberID
	return resp
}

// syncError is a failed SyncGroup answer.
func syncError(version int16, code int16) *kmsg.SyncGroupResponse {
	resp := &kmsg.SyncGroupResponse{Version: version}
	resp.Default()
	resp.ErrorCode = code
	return resp
}
