package txncoord

import (
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config tunes the coordinator; zero values get Kafka's defaults.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms (default 15 minutes): an
	// InitProducerId asking for a longer transaction.timeout.ms is refused
	// with INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms (default 7 days): an
	// id with no transaction open and no request for this long is
	// forgotten, and Ready asks for its tombstone.
	IDExpiration time.Duration
	// NewProducerID returns a producer id never handed out before; called
	// for an id's first InitProducerId and when its epoch runs out. Nil
	// counts up from 1, which only tests should rely on.
	NewProducerID func() int64
	// PartitionOf maps a transactional id to its state partition, the unit
	// of loading, unloading and coordinator epochs. Nil puts every id in
	// partition 0.
	PartitionOf func(txnID string) int32
	// MaxPartitions caps the data partitions of one transaction (default
	// 10000; Kafka has no cap): an add past it is refused with
	// INVALID_REQUEST, so one producer cannot grow a state record, and the
	// memory holding it, without bound.
	MaxPartitions int
	// MaxPendingOffsets caps the offsets one transaction holds for its
	// groups (default 10000), for the same reason; a TxnOffsetCommit past
	// it is refused with INVALID_REQUEST.
	MaxPendingOffsets int
	// MaxIDs caps the transactional ids held (default 100000; Kafka has
	// no cap), as groups are capped: an InitProducerId for a new id past
	// it is refused with COORDINATOR_NOT_AVAILABLE, which clients retry,
	// and slots free up as idle ids expire, so clients making up ids
	// cannot grow the coordinator's memory without bound.
	MaxIDs int
	// Logger receives state changes and abort reasons; zero discards.
	Logger zerolog.Logger
}

// State is a transactional id's state as Kafka names it.
type State int8

// The states of a transactional id, with Kafka's names (DescribeTransactions
// and ListTransactions report State.String()).
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
)

// TopicPartition names a data partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is one partition's offset committed in a transaction.
type Offset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
}

// Record is one transactional id's whole state as persisted: the value of
// the id's latest record in its state partition (Encode, Decode). A nil
// Record value (tombstone) forgets the id; Load takes a tombstone as a
// Record with State Dead and the id's TxnID.
type Record struct {
	TxnID          string
	ProducerID     int64
	Epoch          int16
	LastProducerID int64 // before the last epoch overflow, -1 when none
	LastEpoch      int16 // the epoch before the last bump, -1 when none
	// NextProducerID is the producer id a version 2 transaction moves to
	// when it completes, set when its EndTxn exhausted the epoch, else -1:
	// persisted with Prepare*, so a new coordinator finishing the
	// transaction hands out the id the client was already given.
	NextProducerID   int64
	TimeoutMillis    int32
	State            State
	Partitions       []TopicPartition    // sorted
	Groups           []string            // groups added with AddOffsetsToTxn or implicitly
	PendingOffsets   map[string][]Offset // by group, not yet committed to the group
	StartMillis      int64               // when the open transaction began, -1 none
	UpdateMillis     int64               // last change
	Version2         bool                // the transaction runs under transaction version 2
	CoordinatorEpoch int32               // the epoch of the coordinator that wrote it
}

// Persist asks the caller to write rec as the latest state of its id in
// its state partition (a tombstone when Tombstone) and then to call
// Persisted(Seq, ok).
type Persist struct {
	Seq       uint64
	Partition int32
	Record    Record
	Tombstone bool
}

// Markers asks the caller to write one marker into each partition, with
// the producer id and epoch given (under version 2 the bumped epoch), and
// the coordinator epoch of the state partition, then to call
// MarkersWritten(Seq, results).
type Markers struct {
	Seq              uint64
	TxnID            string
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// CommitOffsets asks the caller to commit a committed transaction's
// offsets to the group, then to call OffsetsCommitted(Seq, ok). It comes
// after the transaction's markers are all written.
type CommitOffsets struct {
	Seq        uint64
	TxnID      string
	ProducerID int64
	Epoch      int16
	Group      string
	Offsets    []Offset
}

// Response answers the Step call that passed ID; Msg has the request's
// version set.
type Response struct {
	ID  uint64
	Msg kmsg.Response
}

// Ready is what the coordinator needs the caller to do after a call.
type Ready struct {
	Persist   []Persist
	Markers   []Markers
	Commits   []CommitOffsets
	Responses []Response
	// Ended are the transactions completed since the last Ready (their
	// Complete* record persisted), for the caller's metrics: the
	// coordinator keeps no counters itself.
	Ended []Ended
	// NextTick is the earliest deadline the coordinator waits for
	// (a transaction timeout, a marker retry, an id expiring); zero when
	// none.
	NextTick time.Time
}

// Ended is one transaction completed: committed, or aborted (by its
// producer, by a newer one, or at its timeout).
type Ended struct {
	TxnID  string
	Commit bool
}

// MarkerResult is one partition's answer to a marker, as the partition's
// owner gave it (a Kafka error code, 0 for written).
type MarkerResult struct {
	TopicPartition
	ErrorCode int16
}

// Describe is a transactional id as DescribeTransactions reports it.
type Describe struct {
	State         State
	ProducerID    int64
	Epoch         int16
	TimeoutMillis int32
	StartMillis   int64
	Partitions    []TopicPartition
}
