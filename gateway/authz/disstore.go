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
// refreshAfter, long before it could expire. A newest version written
// longer ago than replayAfter (the retention and a margin for clocks that
// disagree) would have expired: it can only be an old record appended
// again.
const (
	streamRetentionHours = 72
	refreshAfter         = 12 * time.Hour
	replayAfter          = streamRetentionHours*time.Hour + time.Hour
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
// one poll interval. Records are signed with a key only the gateways
// hold, and a reader takes none it cannot verify (docs/security.md, "Where
// ACLs live"): whoever else can write the stream cannot grant anything.
type DISStore struct {
	dis      disclient.API
	log      zerolog.Logger
	maxBytes int
	key      []byte
	now      func() time.Time

	current atomic.Pointer[Set]

	mu    sync.Mutex // serializes reads and writes of the partition
	chain chain
	// next is the sequence number after the last record read, -1 before
	// the first read.
	next int64
}

// NewDISStore returns a store over dis whose records are signed with key,
// which every gateway sharing the DIS project must hold; records larger
// than maxBytes (DIS's record limit) are refused, which bounds how many
// ACLs the store holds.
func NewDISStore(dis disclient.API, log zerolog.Logger, maxBytes int, key []byte) (*DISStore, error) {
	if len(key) == 0 {
		return nil, errors.New("authz: the ACL store needs a key to sign and verify its records")
	}
	s := &DISStore{dis: dis, log: log, maxBytes: maxBytes, key: key, now: time.Now, chain: newChain(key), next: -1}
	s.current.Store(s.chain.set)
	return s, nil
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
		// Lost ACLs are not written again: only a super user's change
		// ends the loss.
		s.mu.Lock()
		stale := !s.Current().Lost() && s.chain.version > 0 && s.now().Sub(time.UnixMilli(s.chain.stamp)) > refreshAfter
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
		// Lost ACLs are not built on: the first change after the loss
		// starts a new set.
		base := s.chain.set
		if s.Current().Lost() {
			base = NewSet(nil)
		}
		next, err := change(base)
		if err != nil {
			return nil, err
		}
		// feed takes no version from maxVersion on, so this cannot
		// overflow.
		version := s.chain.version + 1
		stamp := s.now().UnixMilli()
		data, err := encodeSnapshot(s.key, version, stamp, next)
		if err != nil {
			return nil, err
		}
		if len(data) > s.maxBytes {
			return nil, fmt.Errorf("authz: %d ACLs take %d bytes, more than a DIS record holds (%d)", next.Len(), len(data), s.maxBytes)
		}
		at, err := s.append(ctx, data, stamp)
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
func (s *DISStore) append(ctx context.Context, data []byte, stamp int64) (int64, error) {
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

// errNoStream and errMoved are what scan found instead of records: no
// stream, or not the position asked for (retention dropped it, or the
// stream was made anew).
var (
	errNoStream = errors.New("authz: no ACL stream")
	errMoved    = errors.New("authz: the ACL stream moved on")
)

// readLocked brings the chain up to date with the stream and publishes
// the newest set, or the loss of the ACLs. It follows the stream from the
// last record read while the snapshot taken last is still in place, and
// reads it all again otherwise.
func (s *DISStore) readLocked(ctx context.Context) error {
	err := errMoved
	if s.next >= 0 {
		err = s.follow(ctx)
	}
	if errors.Is(err, errMoved) {
		err = s.reread(ctx)
	}
	if errors.Is(err, errNoStream) {
		// Never made, the ACLs are not set yet; deleted after this store
		// took a version, they are lost.
		if s.chain.version > 0 {
			s.chain, s.next = newChain(s.key), -1
			s.lose("the ACL stream was deleted")
		}
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case s.chain.version == 0:
		// The stream is made by the first change, so a stream without a
		// snapshot lost its ACLs: DIS retention dropped them while no
		// gateway ran to write them again, or someone replaced them.
		s.lose("the ACL stream holds no valid snapshot: DIS retention dropped the ACLs, or someone replaced them")
	case s.now().Sub(time.UnixMilli(s.chain.stamp)) > replayAfter:
		s.lose("the newest ACL snapshot was written longer ago than the stream keeps records, so it was appended again: a replay")
	default:
		s.current.Store(s.chain.set)
	}
	return nil
}

// lose publishes the loss of the ACLs, logging why when it is news.
func (s *DISStore) lose(why string) {
	if !s.Current().Lost() {
		s.log.Error().Str("stream", StreamName).Int64("version", s.chain.version).
			Msg(why + ": only super users are allowed until a super user creates ACLs again")
	}
	s.current.Store(lostSet())
}

// follow feeds the chain the records after the last one read. It reads
// from the snapshot taken last and returns errMoved when that is no
// longer there.
func (s *DISStore) follow(ctx context.Context) error {
	from, checked := s.next, s.chain.version == 0
	if !checked {
		from = s.chain.at
	}
	err := s.scan(ctx, from, func(seq int64, data []byte) error {
		if !checked {
			if seq != s.chain.at || !s.chain.holds(data) {
				return errMoved
			}
			checked = true
		}
		if seq >= s.next {
			s.next = seq + 1
			s.feedLogged(&s.chain, seq, data)
		}
		return nil
	})
	if err == nil && !checked {
		err = errMoved
	}
	return err
}

// reread builds the chain anew from the oldest record in the stream.
// Records refused before are not logged again.
func (s *DISStore) reread(ctx context.Context) error {
	ch, next, logged := newChain(s.key), int64(0), s.next
	err := s.scan(ctx, -1, func(seq int64, data []byte) error {
		if seq < next {
			return nil
		}
		next = seq + 1
		if seq >= logged {
			s.feedLogged(&ch, seq, data)
		} else {
			_, _ = ch.feed(seq, data)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.chain, s.next = ch, next
	return nil
}

// feedLogged feeds ch the record at seq, logging it when it is refused.
func (s *DISStore) feedLogged(ch *chain, seq int64, data []byte) {
	if _, err := ch.feed(seq, data); err != nil {
		s.log.Error().Err(err).Str("stream", StreamName).Int64("sequence_number", seq).Msg("refusing an ACL record; the ACLs in force stay")
	}
}

// scan calls visit with every record of the partition from sequence
// number from on (-1: from the oldest), until visit returns an error,
// which scan returns.
func (s *DISStore) scan(ctx context.Context, from int64, visit func(seq int64, data []byte) error) error {
	cur := &disclient.GetCursorRequest{StreamName: StreamName, PartitionID: disclient.PartitionID(0), CursorType: disclient.CursorTrimHorizon}
	if from >= 0 {
		cur.CursorType, cur.StartingSequenceNumber = disclient.CursorAtSequenceNumber, strconv.FormatInt(from, 10)
	}
	c, err := s.dis.GetCursor(ctx, cur)
	switch {
	case disclient.IsCode(err, disclient.CodeStreamNotFound):
		return errNoStream
	case disclient.IsCode(err, disclient.CodeSequenceOutOfRange) || disclient.IsCode(err, disclient.CodeInvalidSequence):
		return errMoved
	case err != nil:
		return err
	}
	cursor := c.PartitionCursor
	for cursor != "" {
		resp, err := s.dis.GetRecords(ctx, cursor, 0)
		if disclient.IsCode(err, disclient.CodeStreamNotFound) {
			return errNoStream
		}
		if err != nil {
			return err
		}
		for _, rec := range resp.Records {
			seq, err := strconv.ParseInt(rec.SequenceNumber, 10, 64)
			if err != nil {
				continue
			}
			if err := visit(seq, rec.Data); err != nil {
				return err
			}
		}
		if len(resp.Records) == 0 {
			break
		}
		cursor = resp.NextPartitionCursor
	}
	return nil
}
