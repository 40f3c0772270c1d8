// Package plog is the partition log: what the gateway holds for each
// partition of a DIS stream, and the reads and writes that go through it
// (docs/design.md §4). For kafka-format streams that is the offset
// bookkeeping (the next offset, a sparse index from offsets to DIS sequence
// numbers, the largest timestamp), the cached batches and the writer that
// gives produced batches their offsets, with the idempotent producers'
// state; for raw-format streams a record reader with its cursor and cache
// and the same writer. Handlers use a small API: Enqueue to append,
// Tenant.Fetch to read, Earliest, Next, MaxTimestamp and ByTimestamp for
// ListOffsets, CheckpointSeq and OffsetOfSeq for committed offsets. What
// the partition log needs of the gateway comes in Deps; docs/design.md §11
// has its locks.
package plog

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/gateway/plog/sharestate"
)

// Config holds the gateway settings the partition log reads; the gateway's
// Config documents each.
type Config struct {
	ReadCacheBytes           int
	ProducerIDExpiration     time.Duration
	MaxProducersPerPartition int
	PutRecordsMaxRecords     int
	PutRecordsMaxBytes       int
	PutRecordsKeepsOrder     bool
	PollInterval             time.Duration
	MaxRecordBytes           int
	MaxDecompressedBytes     int64
	WatermarkInterval        time.Duration
	RequestTimeout           time.Duration
	// ReadBytes is what one GetRecords asks for: more than the largest
	// record the gateway writes, since DIS returns nothing when the next
	// record is larger than asked and a reader would stall in front of it.
	ReadBytes int
}

// Deps is what the partition log of one tenant needs from the gateway: its
// settings, the tenant's DIS client, the budgets and hooks shared by all
// tenants, and nothing of the gateway itself, so that plog never imports
// it. Every field must be set.
type Deps struct {
	Config

	// Ctx ends when the gateway stops; writes and read-aheads run within it.
	Ctx context.Context
	Log zerolog.Logger
	// DIS is the tenant's DIS client: records are written and read with
	// the tenant's own credentials.
	DIS disclient.API
	// Refresh describes the topic's stream again and returns partition's
	// sequence number range [earliest, next); ok is false when the stream
	// has no such partition.
	Refresh func(ctx context.Context, topic string, partition int32) (earliest, next int64, ok bool, err error)
	// RetentionMs is the topic's retention.ms when the gateway honours
	// it (below DIS's shortest retention), 0 when DIS's is the retention.
	RetentionMs func(ctx context.Context, topic string) (int64, error)
	// Kept says whether topic is kept (docs/design.md §12): ok with the
	// policy its rewrites follow and the name of its keep stream, whose
	// partitions match the topic's; ok is false for a topic that is not
	// kept, whose partitions have no generation.
	Kept func(ctx context.Context, topic string) (p keep.Policy, stream string, ok bool, err error)
	// EnsureApp creates the tenant's DIS app on first use; ForgetApp makes
	// the next EnsureApp create it again, after DIS said it is gone.
	EnsureApp func(ctx context.Context, app string) error
	ForgetApp func(app string)
	// KafkaCode maps a failed DIS call to the Kafka error code a produce
	// fails with (docs/errors.md).
	KafkaCode func(err error) int16

	// Queues bounds the records waiting in writers, Cache what readers
	// keep; both are shared by every tenant.
	Queues *Queues
	Cache  *Cache

	// Go runs fn on a new goroutine whose panic is recovered, logged and
	// counted. Recover does that for a goroutine the partition log starts
	// itself, then runs cleanup: the partition log defers it first thing
	// in the goroutine, so it must call recover itself.
	Go      func(what string, fn func())
	Recover func(what string, cleanup func())
	// Owns reports whether this gateway leads a partition now: a state
	// made while another gateway led it (to map a committed offset, say)
	// is borrowed, never written from, and dropped once the partition
	// comes here (Tenant.ReleaseMoved), since its owner wrote on without
	// it knowing. Nil owns everything.
	Owns func(topic string, partition int32) bool
	// TxnsOpen is called when a partition's rebuilt transaction state
	// holds open transactions: their coordinator, which may not have
	// loaded its state since a restart, must finish or time them out, or
	// the last stable offset stays where they began.
	TxnsOpen func()

	// Shares keeps share-partitions durable and ShareLimits bounds them
	// (the gateway's group.share.* flags); ShareBudget bounds how many
	// are held, shared by every tenant.
	Shares      ShareStates
	ShareLimits sharestate.Config
	ShareBudget *ShareBudget

	// Metrics hooks: records and bytes stored for a partition, produces
	// cancelled before they were written, single-record reads of the
	// binary search for an offset, batches written again after someone
	// else wrote first.
	Produced         func(k Key, records, bytes int)
	ProduceCancelled func(n int)
	OffsetProbe      func()
	FencedBatches    func(n int)
	// ShareWritten reports each share-partition state record's write,
	// durable or not.
	ShareWritten func(ok bool)
}
