package plog

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/sharestore"
)

// Share groups (docs/design.md §14): each partition's owner holds the
// share-partitions of the groups that read it, one sharestate.Partition
// per group, and keeps them durable through ShareStates.

// ShareStates is where share-partition state is kept durable: the
// tenant's share state topic, at this gateway or at the peer that owns the
// topic's partition. A holder's writes are fenced by the token Take gave
// it, so after an ownership move the former owner's late writes are
// refused rather than mixed into the new owner's state.
type ShareStates interface {
	// Take loads k's state for this gateway to serve from now on and
	// returns the token its writes must carry; found is false when none
	// was kept (the caller starts one with sharestate.New). Every earlier
	// token of k is fenced from then on.
	Take(ctx context.Context, k sharestore.Key) (p *sharestate.Partition, token uint64, found bool, err error)
	// Persist writes rec, the record k's Ready asked for, and returns nil
	// once it is durable. ErrShareFenced means another holder took k:
	// nothing was written.
	Persist(ctx context.Context, k sharestore.Key, token uint64, rec sharestate.Record) error
	// Start reports k's share-partition start offset as kept, without
	// taking k, for the admin APIs; found is false when none was kept.
	Start(ctx context.Context, k sharestore.Key) (start int64, found bool, err error)
	// Delete removes k's kept state; the next Take finds none.
	Delete(ctx context.Context, k sharestore.Key) error
	// Keys lists the share-partitions of group with kept state, sorted,
	// for the admin APIs that cover a whole group (DescribeShareGroupOffsets
	// without topics, DeleteGroups).
	Keys(ctx context.Context, group string) ([]sharestore.Key, error)
}

// ErrShareFenced is Persist's answer to a token that is no longer k's.
var ErrShareFenced = errors.New("plog: share-partition taken by another holder")

// ShareBudget bounds the share-partitions a gateway holds, over all its
// tenants: a share fetch makes one for any group it names, so without a
// bound clients could grow the gateway's memory (and its state writes)
// with group names. It is safe for concurrent use.
type ShareBudget struct {
	max  int64
	held atomic.Int64
}

// NewShareBudget makes a budget of max share-partitions.
func NewShareBudget(max int) *ShareBudget { return &ShareBudget{max: int64(max)} }

// take counts one more share-partition, or reports false when the budget
// is spent.
func (b *ShareBudget) take() bool {
	if b.held.Add(1) > b.max {
		b.held.Add(-1)
		return false
	}
	return true
}

// release counts one share-partition fewer.
func (b *ShareBudget) release() { b.held.Add(-1) }

// Held is the share-partitions counted now.
func (b *ShareBudget) Held() int64 { return b.held.Load() }

// ShareReset is where a share-partition with no kept state starts:
// share.auto.offset.reset.
type ShareReset int8

// The values of share.auto.offset.reset.
const (
	// ShareResetLatest starts at the high watermark (Kafka's default).
	ShareResetLatest ShareReset = iota
	// ShareResetEarliest starts at the log start offset.
	ShareResetEarliest
	// ShareResetByDuration starts at the first record at or after now
	// minus ShareGroupConfig.ResetDuration.
	ShareResetByDuration
)

// ShareGroupConfig is what a share group's configs (the GROUP resource)
// ask of the partition log.
type ShareGroupConfig struct {
	// Reset and ResetDuration are share.auto.offset.reset.
	Reset         ShareReset
	ResetDuration time.Duration
	// ReadCommitted is share.isolation.level read_committed: records of
	// aborted and open transactions are never delivered.
	ReadCommitted bool
	// LockDuration is share.record.lock.duration.ms; zero is the
	// gateway's default (sharestate.Config.LockDuration).
	LockDuration time.Duration
}
