package sharestate

import "time"

// State is a record's delivery state, numbered as Kafka numbers it in its
// share-group state records, so the persisted values read the same.
type State int8

// The delivery states. Only Available, Acknowledged and Archived are ever
// persisted: a lock does not survive a restart, so an Acquired record is
// persisted as Available with its delivery count and redelivered after one.
const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

// AckType is what a member says of a record, numbered as ShareAcknowledge
// and ShareFetch carry it, so the driver passes the wire values through.
type AckType int8

// The acknowledgement types of KIP-932, and RENEW of KIP-1222.
const (
	// Gap marks an offset the member found no record at (compacted away,
	// a control record): archived like a rejection.
	Gap AckType = 0
	// Accept: processed; never delivered again.
	Accept AckType = 1
	// Release: not processed; available again, or archived once delivered
	// DeliveryCountLimit times.
	Release AckType = 2
	// Reject: unprocessable; archived, never delivered again.
	Reject AckType = 3
	// Renew: still being processed; the lock starts over, nothing else
	// changes.
	Renew AckType = 4
)

// Range is the offsets First to Last, both included.
type Range struct {
	First, Last int64
}

// AcquireRequest is what a member's share fetch read from the log.
type AcquireRequest struct {
	Member string
	// From is the offset the read started at, normally FetchOffset.
	// Offsets from there to the end of the last batch that no batch covers
	// hold no record (compaction, control batches, the log start moving)
	// and are never delivered.
	From int64
	// Batches are the record batches read, in order, not overlapping; the
	// first may begin before From.
	Batches []Range
	// MaxRecords caps the records acquired (ShareFetch's MaxRecords); zero
	// or less is no cap but the in-flight one.
	MaxRecords int
	// Lock is the lock duration the group asks for; zero or less is
	// Config.LockDuration, and it is at most Config.MaxLockDuration.
	Lock time.Duration
}

// AcquiredRecords is a run of offsets handed to the member, with how many
// times each was delivered, this delivery included: ShareFetch's field of
// the same name.
type AcquiredRecords struct {
	First, Last   int64
	DeliveryCount int16
}

// AckRange is one acknowledgement batch: one type for the whole range, or
// one type per offset.
type AckRange struct {
	First, Last int64
	Types       []AckType
}

// AckRequest is one member's acknowledgements of the partition, from a
// ShareAcknowledge or a ShareFetch that carries them.
type AckRequest struct {
	// ID names the request in its Answer; the driver picks it.
	ID     uint64
	Member string
	Ranges []AckRange
	// Lock is the duration a Renew restarts the lock with, as in
	// AcquireRequest.
	Lock time.Duration
}

// Answer is the outcome of the acknowledgement request ID: a Kafka error
// code per range, in the request's order. It is released only once the
// state it reports is durable, so an acknowledgement answered 0 survives
// any crash after.
type Answer struct {
	ID    uint64
	Codes []int16
}

// StateRange is a run of offsets in one persisted state.
type StateRange struct {
	First, Last   int64
	State         State
	DeliveryCount int16
}

// Record is what Ready asks the driver to persist, in order, after the
// records before it. A snapshot holds the whole state and makes every
// record before it unnecessary; an update holds SPSO, SPEO and the current
// state of the offsets that changed since the record before it.
type Record struct {
	Seq      uint64
	Snapshot bool
	// Start and End are SPSO and SPEO.
	Start, End int64
	// States are sorted and within [Start, End); a snapshot's cover it.
	States []StateRange
}

// Ready is what the partition needs the driver to do after a call.
type Ready struct {
	// Record, when not nil, is to be written after every record before it,
	// then reported with Persisted(Record.Seq). No other record comes
	// until then: changes made meanwhile go into the next one, so a busy
	// partition costs one write per write latency, not one per request.
	Record *Record
	// Answers are the acknowledgements whose effect is now durable, in the
	// order they were made.
	Answers []Answer
}
