package txncoord

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MarkersWritten reports the partitions' answers to the Markers with seq
// (0 when written). A partition that is gone (UNKNOWN_TOPIC_OR_PARTITION)
// counts as written, as in Kafka; one that refuses the marker as fenced
// (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED) stops the
// transaction's markers, leaving it in Prepare* until its partition is
// loaded again; any other answer, or none, is retried after a backoff.
// Once every marker is written a commit's offsets go to their groups, and
// then Complete* is persisted.
func (c *Coordinator) MarkersWritten(now time.Time, seq uint64, results []MarkerResult) {
	c.advance(now)
	t := c.seqs[seq]
	if t == nil || t.end == nil || t.end.markerSeq != seq {
		return
	}
	delete(c.seqs, seq)
	e := t.end
	e.markerSeq = 0
	for _, r := range results {
		if _, ok := e.left[r.TopicPartition]; !ok {
			continue
		}
		switch r.ErrorCode {
		case 0, kerr.UnknownTopicOrPartition.Code:
			delete(e.left, r.TopicPartition)
		case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
			e.stopped = true
			c.log.Error().Str("txn", t.rec.TxnID).Str("topic", r.Topic).Int32("partition", r.Partition).
				Int16("error", r.ErrorCode).Msg("a marker was refused as fenced; the transaction stays prepared until its state partition is loaded again")
		default:
			if !retriableMarkerError(r.ErrorCode) {
				c.log.Warn().Str("txn", t.rec.TxnID).Str("topic", r.Topic).Int32("partition", r.Partition).
					Int16("error", r.ErrorCode).Msg("unexpected marker error, retrying")
			}
		}
	}
	switch {
	case e.stopped:
	case len(e.left) > 0:
		t.nextBackoff(now)
	default:
		t.backoff = 0
	}
	c.drive(now, t)
	c.advance(now)
}

// retriableMarkerError lists the answers that say "not now" rather than
// something to look into.
func retriableMarkerError(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code, kerr.RequestTimedOut.Code,
		kerr.CoordinatorNotAvailable.Code:
		return true
	}
	return kerr.IsRetriable(kerr.ErrorForCode(code))
}

// OffsetsCommitted reports whether the CommitOffsets with seq reached its
// group; a failure is retried after a backoff.
func (c *Coordinator) OffsetsCommitted(now time.Time, seq uint64, ok bool) {
	c.advance(now)
	t := c.seqs[seq]
	if t == nil || t.end == nil {
		return
	}
	g, found := t.end.commitSeqs[seq]
	if !found {
		return
	}
	delete(c.seqs, seq)
	delete(t.end.commitSeqs, seq)
	if ok {
		delete(t.end.groups, g)
	} else {
		t.end.groups[g] = 0
		c.log.Warn().Str("txn", t.rec.TxnID).Str("group", g).Msg("committing a transaction's offsets failed, retrying")
		t.nextBackoff(now)
	}
	c.drive(now, t)
	c.advance(now)
}
