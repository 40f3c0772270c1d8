package groupcoord

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's broker defaults for the session timeouts a member may ask for and
// for offsets.retention.minutes; the other caps have no Kafka default (Kafka
// leaves them unbounded) and are chosen here.
const (
	defaultMinSessionTimeout   = 6 * time.Second
	defaultMaxSessionTimeout   = 30 * time.Minute
	defaultMaxRebalanceTimeout = 30 * time.Minute
	defaultOffsetsRetention    = 7 * 24 * time.Hour
	defaultMaxGroupSize        = 1000
	defaultMaxPendingMembers   = 100
	defaultMaxGroups           = 10000
)

// emptyGroupLinger is how long an empty group with no offsets committed
// through this coordinator stays in memory: Kafka removes such a group at its
// next offsets cleanup, every offsets.retention.check.interval.ms (10
// minutes by default).
const emptyGroupLinger = 10 * time.Minute

// Config tunes the coordinator; zero values get Kafka's defaults.
type Config struct {
	// MinSessionTimeout is group.min.session.timeout.ms (default 6s): a
	// JoinGroup asking for less is refused, so one client cannot make the
	// group churn on every missed heartbeat.
	MinSessionTimeout time.Duration
	// MaxSessionTimeout is group.max.session.timeout.ms (default 30m): a
	// JoinGroup asking for more is refused, so a dead member cannot hold its
	// partitions for longer.
	MaxSessionTimeout time.Duration
	// MaxRebalanceTimeout caps the rebalance timeout a member may ask for:
	// how long a rebalance waits for it to rejoin, and a sync for it to
	// sync. Kafka has no such cap and clients (Streams, Connect) ask for
	// large values, so a larger request is clamped, not refused. Default
	// 30m.
	MaxRebalanceTimeout time.Duration
	// MaxGroupSize is group.max.size: a new member joining a group that
	// already has this many members gets GROUP_MAX_SIZE_REACHED, as in
	// Kafka. Kafka's default is unbounded; here 1000.
	MaxGroupSize int
	// MaxPendingMembers bounds, per group, the member ids handed out with
	// MEMBER_ID_REQUIRED that have not come back yet (they also expire
	// after the session timeout, as in Kafka). Past it the oldest is
	// forgotten: its client gets UNKNOWN_MEMBER_ID on rejoin and starts
	// over, so a client that only ever sends first joins cannot grow the
	// group's memory or lock others out. Default 100.
	MaxPendingMembers int
	// MaxGroups bounds the groups held in memory (Kafka has no such cap).
	// A JoinGroup or simple commit that would create one more is refused
	// with COORDINATOR_NOT_AVAILABLE, which every client retries: slots
	// free up as empty groups expire. Default 10000.
	MaxGroups int
	// OffsetsRetention is offsets.retention.minutes (KIP-211, default 7
	// days): a group that is Empty expires this long after it became
	// empty or after its last commit, whichever is later. The coordinator
	// then forgets it and Ready tells the caller to delete its offsets.
	// An empty group without offsets committed here is forgotten after 10
	// minutes, Kafka's cleanup interval.
	OffsetsRetention time.Duration
	// InitialRebalanceDelay delays the first rebalance of an empty group so
	// that more members can join (group.initial.rebalance.delay.ms, Kafka
	// default 3s). Zero here means 0 (no delay): the gateway chooses.
	InitialRebalanceDelay time.Duration
	// NewMemberID makes a member id for a client id; the default is clientID
	// + "-" + a counter-based suffix unique within this Coordinator
	// (deterministic, so tests can predict it). The gateway passes one that
	// adds randomness. As in Kafka, a static member's id is made from its
	// group.instance.id instead of its client id.
	NewMemberID func(clientID string) string
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms: a
	// consumer-protocol member not heard from for this long is removed.
	// Default 45s.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms,
	// what ConsumerGroupHeartbeat tells members: how soon a member learns
	// of a new assignment. Default 5s.
	ConsumerHeartbeatInterval time.Duration
	// ShareSessionTimeout is group.share.session.timeout.ms: a share group
	// member not heard from for this long is removed, and its acquired
	// records are released (Ready.ShareDepartures). Default 45s.
	ShareSessionTimeout time.Duration
	// ShareHeartbeatInterval is group.share.heartbeat.interval.ms, what
	// ShareGroupHeartbeat tells members: how soon a member learns of a new
	// assignment. Default 5s.
	ShareHeartbeatInterval time.Duration
	// ShareMaxGroupSize is group.share.max.size: a new member joining a
	// share group that already has this many gets GROUP_MAX_SIZE_REACHED.
	// Default 200, Kafka's.
	ShareMaxGroupSize int
	// Logger receives rebalance and membership events; the zero Logger
	// discards them.
	Logger zerolog.Logger
}

// Coordinator is the classic Kafka group coordinator as a deterministic state
// machine: it never reads a clock, starts a goroutine or touches the network,
// so every rebalance path can be driven by a test. It is not safe for
// concurrent use; the gateway serializes calls.
type Coordinator struct {
	cfg        Config
	log        zerolog.Logger
	groups     map[string]*group
	timers     timerHeap
	out        []Response
	removed    []Removed
	rebalances []Rebalance
	departures []ShareDeparture
	nextID     uint64 // suffix of the default member ids
	// stamps numbers group incarnations and generations, so a fence taken
	// at commit time tells whether the group moved on.
	stamps uint64
}

// Ready is what the coordinator needs the caller to do after a call.
type Ready struct {
	// Responses are answers to earlier Step calls, in the order they became
	// ready.
	Responses []Response
	// NextTick is the earliest deadline the coordinator waits for; zero when
	// it waits for none.
	NextTick time.Time
	// Removed are the groups the coordinator forgot (expired or deleted),
	// so the caller can drop what it keeps per group.
	Removed []Removed
	// Rebalances are the rebalances completed since the last Ready, for
	// the caller's metrics: the coordinator keeps no counters itself.
	Rebalances []Rebalance
	// ShareDepartures are the share group members that left or were
	// removed since the last Ready: the partition logs release what they
	// hold (sharestate.Partition.ReleaseMember), so their records are
	// delivered again without waiting for the locks to expire.
	ShareDepartures []ShareDeparture
}

// Rebalance is one completed rebalance: a classic group's join phase
// ending in a new generation, or a consumer or share group's new epoch.
type Rebalance struct {
	Group      string
	Generation int32
	// Took is how long the classic group's join phase lasted, from the
	// rebalance starting to the new generation; zero for a consumer or
	// share group, whose members keep consuming while their epoch moves.
	Took time.Duration
}

// Removed is a group the coordinator forgot.
type Removed struct {
	Group string
	// ExpireOffsets is set when the group expired with offsets committed
	// through this coordinator: their retention passed (Kafka's
	// offsets.retention.minutes), and the caller deletes them.
	ExpireOffsets bool
}

// Response answers the Step call that passed ID. Msg has the request's
// version set.
type Response struct {
	ID  uint64
	Msg kmsg.Response
}

// New returns a coordinator with no groups.
func New(cfg Config) *Coordinator {
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = defaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout == 0 {
		cfg.MaxSessionTimeout = defaultMaxSessionTimeout
	}
	if cfg.MaxRebalanceTimeout <= 0 {
		cfg.MaxRebalanceTimeout = defaultMaxRebalanceTimeout
	}
	if cfg.MaxGroupSize <= 0 {
		cfg.MaxGroupSize = defaultMaxGroupSize
	}
	if cfg.MaxPendingMembers <= 0 {
		cfg.MaxPendingMembers = defaultMaxPendingMembers
	}
	if cfg.MaxGroups <= 0 {
		cfg.MaxGroups = defaultMaxGroups
	}
	if cfg.OffsetsRetention <= 0 {
		cfg.OffsetsRetention = defaultOffsetsRetention
	}
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = defaultConsumerSessionTimeout
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = defaultConsumerHeartbeatInterval
	}
	if cfg.ShareSessionTimeout <= 0 {
		cfg.ShareSessionTimeout = defaultShareSessionTimeout
	}
	if cfg.ShareHeartbeatInterval <= 0 {
		cfg.ShareHeartbeatInterval = defaultShareHeartbeatInterval
	}
	if cfg.ShareMaxGroupSize <= 0 {
		cfg.ShareMaxGroupSize = defaultShareMaxGroupSize
	}
	c := &Coordinator{cfg: cfg, log: cfg.Logger, groups: make(map[string]*group)}
	if c.cfg.NewMemberID == nil {
		c.cfg.NewMemberID = c.counterMemberID
	}
	return c
}

// ConsumerTimings are the session timeout and heartbeat interval of
// consumer-protocol groups, defaults filled in, for the gateway to report
// as group configs. The configuration never changes after New, so any
// goroutine may ask.
func (c *Coordinator) ConsumerTimings() (session, heartbeat time.Duration) {
	return c.cfg.ConsumerSessionTimeout, c.cfg.ConsumerHeartbeatInterval
}

// counterMemberID is the default, predictable member id.
func (c *Coordinator) counterMemberID(clientID string) string {
	c.nextID++
	return clientID + "-" + strconv.FormatUint(c.nextID, 10)
}

// Step feeds one client request at time now. id is the caller's handle: the
// response to it appears in a later Ready with the same id (JoinGroup and
// SyncGroup answers may be delayed until a rebalance completes;
// Heartbeat/LeaveGroup are answered at once). req is one of
// *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest, *kmsg.HeartbeatRequest,
// *kmsg.LeaveGroupRequest, with its Version set; clientID and clientHost are
// from the request header and connection (DescribeGroups reports them). Any
// other request type gets no response and is a programming error → return an
// error.
//
// Deadlines that fall at or before now are carried out first, so the outcome
// does not depend on whether the caller ticked in between.
func (c *Coordinator) Step(now time.Time, id uint64, clientID, clientHost string, req kmsg.Request) error {
	var (
		group  string
		handle func()
	)
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		if r != nil {
			group, handle = r.Group, func() { c.join(now, id, clientID, clientHost, r) }
		}
	case *kmsg.SyncGroupRequest:
		if r != nil {
			group, handle = r.Group, func() { c.sync(now, id, r) }
		}
	case *kmsg.HeartbeatRequest:
		if r != nil {
			group, handle = r.Group, func() { c.heartbeat(now, id, r) }
		}
	case *kmsg.LeaveGroupRequest:
		if r != nil {
			group, handle = r.Group, func() { c.leave(now, id, r) }
		}
	}
	if handle == nil {
		return fmt.Errorf("groupcoord: cannot step a %T", req)
	}
	c.advance(now)
	handle()
	if g := c.groups[group]; g != nil {
		c.schedule(g)
	}
	// A deadline the request itself set at or before now (a zero rebalance
	// timeout) is due at once.
	c.advance(now)
	return nil
}

// Tick advances time: expires sessions, rebalance timeouts, the initial
// delay and empty groups. Each deadline is carried out as of its own time, so one late Tick
// ends in the same state as many punctual ones.
func (c *Coordinator) Tick(now time.Time) { c.advance(now) }

// Ready returns and clears everything to do: responses (in the order they
// became ready), groups forgotten, share group members gone, and when to
// call Tick next.
func (c *Coordinator) Ready() Ready {
	rd := Ready{Responses: c.out, Removed: c.removed, Rebalances: c.rebalances, ShareDepartures: c.departures}
	c.out, c.removed, c.rebalances, c.departures = nil, nil, nil, nil
	if len(c.timers) > 0 {
		rd.NextTick = c.timers[0].next.at
	}
	return rd
}

// respond queues msg as the answer to the request with handle id.
func (c *Coordinator) respond(id uint64, msg kmsg.Response) {
	c.out = append(c.out, Response{ID: id, Msg: msg})
}

// newMemberID names a new member as Kafka does: after its group.instance.id
// when it is static, else after its client id.
func (c *Coordinator) newMemberID(clientID string, instanceID *string) string {
	if instanceID != nil {
		return c.cfg.NewMemberID(*instanceID)
	}
	return c.cfg.NewMemberID(clientID)
}
