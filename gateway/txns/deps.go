// Package txns is the goroutine side of the transaction coordinator
// (docs/design.md §13): the driver that feeds each tenant's txncoord state
// machine requests and the clock under one lock, loads its state
// partitions from DIS on first use, writes the state records it asks for
// one partition at a time and in order, sends its markers to the data
// partitions' owners and commits its offsets to the groups, and answers the
// requests waiting on it. What it needs of the gateway comes in Deps, so
// that txns never imports the gateway.
package txns

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/txncoord"
)

// Deps is what the driver needs from the gateway. T is the gateway's
// tenant: transactional ids belong to a tenant, as groups do. Every field
// must be set.
type Deps[T comparable] struct {
	// Coord configures every tenant's coordinator; New sets its
	// PartitionOf and Logger.
	Coord txncoord.Config
	// Partitions is the number of state partitions of every tenant
	// (--transaction-state-partitions).
	Partitions int32
	// Owns reports whether this gateway coordinates the ids of state
	// partition p (the partition's owner among the live gateways): the
	// driver loads only those, answers NOT_COORDINATOR for the others, and
	// lets go of the ones that moved away (UnloadMoved).
	Owns func(p int32) bool
	// Log is the gateway's logger; the coordinators log through it with
	// component=txncoord.
	Log zerolog.Logger
	// Tenant returns tn's id, by which its coordinator is kept so that it
	// outlives an idle tenant dropped and signed in again.
	Tenant func(tn T) string
	// Go runs fn on a new goroutine whose panic is recovered, logged and
	// counted.
	Go func(what string, fn func())
	// Ctx ends when the gateway stops; every DIS call of the driver is
	// bounded by it and by RequestTimeout.
	Ctx            context.Context
	RequestTimeout time.Duration
	// State is where tenants' transaction state is kept.
	State StateLog[T]
	// WriteMarker writes a transaction's marker into one data partition
	// and returns a Kafka error code, 0 when written.
	WriteMarker func(ctx context.Context, tn T, tp txncoord.TopicPartition, m plog.Marker) int16
	// Ended counts a completed transaction and Marker a marker's answer,
	// for the metrics; both run under the driver's lock or on its
	// goroutines and must not block.
	Ended  func(commit bool)
	Marker func(code int16)
	// CommitOffsets commits a committed transaction's offsets to its group.
	CommitOffsets func(ctx context.Context, tn T, c txncoord.CommitOffsets) error
}

// StateLog is a tenant's transaction state log: the partitions of its
// internal state topic, each record the whole state of one transactional
// id, keyed by it (docs/design.md §13).
type StateLog[T comparable] interface {
	// Exists reports whether tn has a state log yet: queries over all of
	// a tenant's transactions must not create one.
	Exists(ctx context.Context, tn T) (bool, error)
	// Read returns every record of the partition, oldest first.
	Read(ctx context.Context, tn T, partition int32) ([]Entry, error)
	// Append writes one record to the partition and returns once DIS
	// holds it; a nil value is a tombstone.
	Append(ctx context.Context, tn T, partition int32, key, value []byte) error
}

// Entry is one record of a state partition.
type Entry struct {
	Key, Value []byte
}
