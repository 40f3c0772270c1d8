package authz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
)

// StreamName is the reserved DIS stream that holds the ACLs
// (docs/security.md, "Where ACLs live"). Its name starts with the prefix
// of encoded names and it has no topic-name tag, so no Kafka topic maps to
// it and no client sees it.
const StreamName = "disgw-acls"

// Retention and refresh: DIS drops records after the stream's retention,
// so a gateway writes the newest version again once it is older than
// refreshAfter, long before it could expire.
const (
	streamRetentionHours = 72
	refreshAfter         = 12 * time.Hour
)

// updateAttempts bounds how often Update retries after losing a race, and
// raceBackoff is the longest it waits before its first retry, doubling for
// each later one: a random part of that, so that two gateways that keep
// appending at the same moment fall out of step. Without the wait two
// stores updating in a loop lost eight races in a row in about one test
// run in seven (TestDISStoreSharesChangesAndLosesNoneUnderRaces).
const (
	updateAttempts = 8
	raceBackoff    = time.Millisecond
)

// DISStore keeps the ACLs as whole-set snapshots in one partition of the
// reserved stream: every change appends the next version, a reader takes
// the newest version in partition order, and of two gateways that append
// the same version at once the first in the partition wins; the other
// reads it and applies its change again on top. Reads poll the partition's
// tail, so a change through one gateway is enforced by the others within
// one poll interval.
type DISStore struct {
	dis      disclient.API
	log      zerolog.Logger
	maxBytes int
	now      func() time.Time

	current atomic.Pointer[Set]

	mu    sync.Mutex // serializes reads and writes of the partition
	chain chain
	// next is the sequence number after the last record read, -1 before
	// the first read.
	next int64
}

// NewDISStore returns a store over dis; records larger than maxBytes (DIS's
// record limit) are refused, which bounds how many ACLs the store holds.
func NewDISStore(dis disclient.API, log zerolog.Logger, maxBytes int) *DISStore {
	s := &DISStore{dis: dis, log: log, maxBytes: maxBytes, now: time.Now, chain: newChain(), next: -1}
	s.current.Store(s.chain.set)
	return s
}

// Current implements Store.
func (s *DISStore) Current() *Set { return s.current.Load() }

// Refresh implements Store.
func (s *DISStore) Refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readLocked(ctx)
}

// Run refreshes every interval until ctx ends, and writes the newest
// version again when it grows old enough for retention to threaten it.
func (s *DISStore) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Refresh(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Warn().Err(err).Str("stream", StreamName).Msg("reading ACL changes failed; the ACLs last read stay in force")
			}
			continue
		}
		s.mu.Lock()
		stale := s.chain.version > 0 && s.now().Sub(time.UnixMilli(s.chain.stamp)) > refreshAfter
		s.mu.Unlock()
		if stale {
			if _, err := s.Update(ctx, func(cur *Set) (*Set, error) { return cur, nil }); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Str("stream", StreamName).Msg("rewriting the ACLs ahead of DIS retention failed; retried at the next poll")
			}
		}
	}
}

// Update implements Store.
func (s *DISStore) Update(ctx context.Context, change func(*Set) (*Set, error)) (*Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := range updateAttempts {
		if attempt > 0 {
			select {
			case <-time.After(rand.N(raceBackoff << (attempt - 1))):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err := s.readLocked(ctx); err != nil {
			return nil, err
		}
		next, err := change(s.chain.set)
		if err != nil {
			return nil, err
		}
		version := s.chain.version + 1
		data, err := encodeSnapshot(version, next)
		if err != nil {
			return nil, err
		}
		if len(data) > s.maxBytes {
			return nil, fmt.Errorf("authz: %d ACLs take %d bytes, more than a DIS record holds (%d)", next.Len(), len(data), s.maxBytes)
		}
		at, err := s.append(ctx, data)
		if err != nil {
			return nil, err
		}
		if err := s.readLocked(ctx); err != nil {
			return nil, err
		}
		if s.chain.at == at && s.chain.version == version {
			return s.chain.set, nil
		}
		s.log.Info().Int64("version", version).Msg("another gateway changed the ACLs at the same time; applying this change again on top")
	}
	return nil, errors.New("authz: the ACLs kept changing under this update; try again")
}

// append writes data to the stream, creating the stream first when it
// does not exist, and returns its sequence number.
func (s *DISStore) append(ctx context.Context, data []byte) (int64, error) {
	stamp := s.now().UnixMilli()
	req := &disclient.PutRecordsRequest{StreamName: StreamName, Records: []disclient.PutRecordsEntry{{
		Data: data, PartitionID: disclient.PartitionID(0), Timestamp: &stamp,
	}}}
	for {
		resp, err := s.dis.PutRecords(ctx, req)
		if disclient.IsCode(err, disclient.CodeStreamNotFound) {
			if err = s.createStream(ctx); err == nil {
				continue
			}
		}
		if err == nil && (len(resp.Records) != 1 || resp.Records[0].ErrorCode != "") {
			err = fmt.Errorf("authz: writing the ACLs: DIS refused the record: %+v", resp.Records)
		}
		if disclient.IsCode(err, disclient.CodeStreamNotRunning) {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Second):
				continue
			}
		}
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(resp.Records[0].SequenceNumber, 10, 64)
	}
}

func (s *DISStore) createStream(ctx context.Context) error {
	hours := int32(streamRetentionHours)
	err := s.dis.CreateStream(ctx, &disclient.CreateStreamRequest{
		StreamName: StreamName, PartitionCount: 1, StreamType: disclient.StreamTypeCommon,
		DataType: disclient.DataTypeBlob, DataDuration: &hours,
	})
	if disclient.IsCode(err, disclient.CodeStreamExists) {
		return nil
	}
	if err == nil {
		s.log.Info().Str("stream", StreamName).Msg("created the DIS stream that holds the ACLs")
	}
	return err
}

// readLocked feeds every record after the last one read to the chain and
// publishes the newest set.
func (s *DISStore) readLocked(ctx context.Context) error {
	cur := &disclient.GetCursorRequest{StreamName: StreamName, PartitionID: disclient.PartitionID(0), CursorType: disclient.CursorTrimHorizon}
	if s.next >= 0 {
		cur.CursorType, cur.StartingSequenceNumber = disclient.CursorAtSequenceNumber, strconv.FormatInt(s.next, 10)
	}
	c, err := s.dis.GetCursor(ctx, cur)
	if disclient.IsCode(err, disclient.CodeSequenceOutOfRange) || disclient.IsCode(err, disclient.CodeInvalidSequence) {
		// Retention dropped what was read already, or nothing new was
		// written: read from the oldest record still there.
		cur.CursorType, cur.StartingSequenceNumber = disclient.CursorTrimHorizon, ""
		c, err = s.dis.GetCursor(ctx, cur)
	}
	if disclient.IsCode(err, disclient.CodeStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cursor := c.PartitionCursor
	for cursor != "" {
		resp, err := s.dis.GetRecords(ctx, cursor, 0)
		if err != nil {
			return err
		}
		for _, rec := range resp.Records {
			seq, err := strconv.ParseInt(rec.SequenceNumber, 10, 64)
			if err != nil || seq < s.next {
				continue
			}
			s.next = seq + 1
			if _, err := s.chain.feed(seq, rec.Timestamp, rec.Data); err != nil {
				s.log.Error().Err(err).Str("stream", StreamName).Msg("skipping an ACL record that is no snapshot")
			}
		}
		if len(resp.Records) == 0 {
			break
		}
		cursor = resp.NextPartitionCursor
	}
	if s.chain.version == 0 {
		// The stream is made by the first change, so a stream without a
		// snapshot lost its ACLs: DIS retention dropped them while no
		// gateway ran to write them again.
		if !s.Current().Lost() {
			s.log.Error().Str("stream", StreamName).Msg("the ACL stream holds no ACLs, so DIS retention dropped them: only super users are allowed until a super user creates ACLs again")
		}
		s.current.Store(lostSet())
		return nil
	}
	s.current.Store(s.chain.set)
	return nil
}
