// Package groups is the goroutine side of the group coordinator
// (docs/design.md §5) and the DIS side of consumer groups: the driver that
// feeds the groupcoord state machine requests and the clock under one lock,
// answers the requests waiting on it, and writes each group's committed
// offsets one at a time, in the order the coordinator accepted them, as
// checkpoints of the group's DIS app (docs/design.md §2). Handlers use a
// small API: Step, StepConsumer and StepShare for the membership APIs, Commit to check
// and queue an OffsetCommit and CommitOffset to write one, With and WithEach
// for the coordinator's queries, ReadCommittedOffsets, CommittedTopics,
// StoredGroups and GroupStored for what DIS holds of groups, DeleteApp and
// DeleteOffset to delete it. What the driver needs of the gateway comes in
// Deps, so that groups never imports it; docs/design.md §11 has its lock.
package groups

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/groupcoord"
)

// Deps is what the driver needs from the gateway: the coordinators'
// settings, who the tenants are, ownership of groups, each tenant's DIS
// client, topics, apps and partitions, and hooks for metrics and panics. T
// is the gateway's tenant: groups belong to a tenant, and offset writes are
// queued per tenant value and group. Every field must be set.
type Deps[T comparable] struct {
	// Coord configures every tenant's coordinator; New sets its
	// NewMemberID and Logger.
	Coord groupcoord.Config
	// Log is the gateway's logger; the coordinators log through it with
	// component=groupcoord.
	Log zerolog.Logger

	// Tenant returns tn's id, by which its coordinator is kept so that it
	// outlives an idle tenant dropped and signed in again ("" is the
	// gateway's own credentials, whose coordinator stays), and the access
	// key its groups' series are labelled with.
	Tenant func(tn T) (id, accessKey string)
	// Coordinates reports whether this gateway coordinates group
	// (docs/design.md §6). It is called under the driver's lock, so it
	// takes no lock of the gateway's.
	Coordinates func(group string) bool
	// Ready hands the metrics what the coordinator of the tenant with this
	// id and access key reported in a Ready; it runs under the driver's
	// lock.
	Ready func(id, accessKey string, rd *groupcoord.Ready)

	// Go runs fn on a new goroutine whose panic is recovered, logged and
	// counted. Recover does that for a goroutine the driver starts itself,
	// then runs cleanup: the driver defers it first thing, so it must call
	// recover itself.
	Go      func(what string, fn func())
	Recover func(what string, cleanup func())

	// Ctx ends when the gateway stops; an expired group's DIS app is
	// deleted within it, in at most RequestTimeout.
	Ctx            context.Context
	RequestTimeout time.Duration
	// MaxCheckpointReads is --max-checkpoint-reads-per-request, which the
	// warning about an OffsetFetch that names more partitions cites.
	MaxCheckpointReads int
	// DIS is tn's DIS client and Catalog its topic catalog: a tenant's
	// groups are apps of its own DIS account, on its own streams.
	DIS     func(tn T) disclient.API
	Catalog func(tn T) *topics.Catalog
	// Apps is the set of DIS apps tn created or saw (name to true), so a
	// commit costs one DIS call, not two. The tenant keeps it, so it goes
	// with an idle tenant, and the partition log's apps share it.
	Apps func(tn T) *sync.Map
	// Partition is partition p of t in tn's partition log, which maps a
	// kafka-format topic's offsets to DIS sequence numbers and back.
	Partition func(tn T, t *topics.Meta, p int32) Partition
	// WatermarkApp is the partition log's own DIS app: an encoded app
	// name that stands for no group.
	WatermarkApp string
	// KafkaCode maps a failed DIS call to the Kafka error code a commit or
	// an offset read fails with (docs/errors.md).
	KafkaCode func(err error) int16
	// Parallel runs fn for i in [0, n), at most
	// topics.DescribeConcurrency at once, and returns when all have.
	Parallel func(n int, fn func(i int))
	// ShareDeparted releases the records a share group member holds on
	// every share-partition of tn's (plog.Tenant.ReleaseShareMember): the
	// member left or its session expired. It runs outside the driver's
	// lock.
	ShareDeparted func(tn T, group, member string)
	// Committed tells the metrics the offset tn's group committed to
	// partition p of t, which its lag is computed against.
	Committed func(tn T, group string, t *topics.Meta, p int32, offset int64)
}

// Partition is what committed offsets need of a partition of the
// partition log (plog.Partition has it): on kafka-format topics a
// checkpoint holds the DIS record an offset is in, so commits and reads
// translate between the two.
type Partition interface {
	// CheckpointSeq is the sequence number the checkpoint of a committed
	// offset holds: the DIS record holding the offset, within the valid
	// range of a partition whose earliest sequence number is earliestSeq.
	CheckpointSeq(ctx context.Context, earliestSeq, offset int64) (int64, error)
	// OffsetOfSeq is the first offset of the DIS record at seq, or the
	// next offset when there is none: a DIS-native consumer's checkpoint
	// read as an offset.
	OffsetOfSeq(ctx context.Context, seq int64) (int64, error)
	// KnownHWM is a raw-format partition's high watermark as the gateway
	// has seen it, or -1: a commit beyond DescribeStream's end up to it is
	// no commit out of range.
	KnownHWM() int64
}

// Conn is the connection a membership request came on: the tenant whose
// coordinator gets it, the client id and host the coordinator records for
// a member, and how the request's API answers an error code, for requests
// the driver refuses without asking the coordinator.
type Conn[T comparable] struct {
	Tenant   T
	ClientID string
	Host     string
	Refuse   func(code int16) kmsg.Response
}
