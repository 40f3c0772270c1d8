// Package groups is the goroutine side of the group coordinator
// (docs/design.md §5): the driver that feeds the groupcoord state machine
// requests and the clock under one lock, answers the requests waiting on
// it, and writes each group's committed offsets one at a time, in the order
// the coordinator accepted them. Handlers use a small API: Step and
// StepConsumer for the membership APIs, Commit to check and queue an
// OffsetCommit, With and WithEach for the coordinator's queries. What the
// driver needs of the gateway comes in Deps, so that groups never imports
// it; docs/design.md §11 has its lock.
package groups

import (
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/groupcoord"
)

// Deps is what the driver needs from the gateway: the coordinators'
// settings, who the tenants are, ownership of groups, and hooks for
// expired groups, metrics and panics. T is the gateway's tenant: groups
// belong to a tenant, and offset writes are queued per tenant value and
// group. Every field must be set.
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
	// Expire deletes the committed offsets of tn's group that expired
	// (Kafka's offsets.retention.minutes); it runs in the group's commit
	// queue, behind the writes accepted before the group went.
	Expire func(tn T, group string)
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
