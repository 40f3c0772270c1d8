package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/sharestore"
	"github.com/disgw/disgw/gateway/topics"
)

// Share-group state (docs/design.md §14, "Persistence"): each tenant's
// share-partitions are kept in its __share_group_state topic through
// sharestore. Log partition i of the topic is served by the gateway that
// owns partition i: it takes the log partition over on first use and
// keeps, per share-partition, the token of its current holder. Another
// gateway's holders reach it with Kafka's share-state APIs (84–87) over a
// peer connection.

// shareStateTopic is the internal topic a tenant's share-group state
// lives in, under Kafka's name.
const shareStateTopic = "__share_group_state"

// shareLimits bounds every share-partition this gateway loads, the same
// for the log partitions it serves and the holders it has: zero is
// sharestate's defaults.
func (gw *Gateway) shareLimits() sharestate.Config { return gw.cfg.ShareLimits }

// shareStates is tenant tn's plog.ShareStates: a share-partition's calls
// go to the log partition sharestore.PartitionOf names, in process when
// this gateway serves it, else to the peer that does.
type shareStates struct {
	gw *Gateway
	tn *tenant

	mu     sync.Mutex
	served map[int32]*shareServed // log partitions taken or being taken here
}

// shareServed is a log partition this gateway serves.
type shareServed struct {
	// ready closes once the log partition is taken (lp) or failed (err).
	ready chan struct{}
	lp    *sharestore.LogPartition
	err   error

	// tokens counts the tokens issued, and holders are the
	// share-partitions a token was issued for; both under
	// shareStates.mu.
	tokens  uint32
	holders map[sharestore.Key]*shareHolder
}

// shareHolder is one share-partition's current holder. lock lets one
// Take, Persist or Delete of it run at a time, so a Persist that passed
// the token check is durable before a Take loads, and a fenced holder's
// write never lands behind the new holder's load.
type shareHolder struct {
	lock  chan struct{}
	token uint64 // under lock; 0 is no holder
}

func newShareStates(gw *Gateway, tn *tenant) *shareStates {
	return &shareStates{gw: gw, tn: tn, served: make(map[int32]*shareServed)}
}

// errShareTenant refuses share-group state of a tenant whose DIS
// credentials stay on the gateway the client signed in to: the gateway
// serving the log partition could not write it.
var errShareTenant = fmt.Errorf("%w: gateways with peers keep share-group state for clients of their own DIS credentials only", kerr.GroupAuthorizationFailed)

// errNotShareServer is a call for a log partition this gateway does not
// serve: its owner is another gateway, or this one just started and its
// peers may not have let go yet. The caller asks again once membership
// settles.
func errNotShareServer(part int32) error {
	return fmt.Errorf("%w: log partition %d of %s is not served here", kerr.NotCoordinator, part, shareStateTopic)
}

// logPartition is where k's state is kept, and the gateway serving it.
func (s *shareStates) logPartition(k sharestore.Key) (int32, bool) {
	part := sharestore.PartitionOf(k, s.gw.cfg.ShareStatePartitions)
	return part, s.gw.partitionOwner(shareStateTopic, part).ID == s.gw.cfg.NodeID
}

// servesShare reports whether this gateway serves log partition part: it
// owns it and, if it just started, its peers have let go (groupHandover),
// as for transaction state.
func (gw *Gateway) servesShare(part int32) bool {
	return gw.ownsPartition(shareStateTopic, part) && gw.handover.over(gw.cfg.NodeID, gw.cfg.Membership.Live())
}

// serve returns log partition part taken over here, taking it on first
// use; one take runs at a time, on its own deadline, so that a caller
// giving up does not fail the others.
func (s *shareStates) serve(ctx context.Context, part int32) (*shareServed, error) {
	if !s.gw.servesShare(part) {
		return nil, errNotShareServer(part)
	}
	s.mu.Lock()
	sv := s.served[part]
	if sv == nil {
		sv = &shareServed{ready: make(chan struct{}), holders: make(map[sharestore.Key]*shareHolder)}
		s.served[part] = sv
		s.gw.panics.Go("share state takeover", func() { s.take(part, sv) })
	}
	s.mu.Unlock()
	select {
	case <-sv.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if sv.err != nil {
		return nil, sv.err
	}
	return sv, nil
}

// errShareTakeover is a take over that panicked.
var errShareTakeover = errors.New("taking a share state log partition over failed")

// take takes log partition part over for sv; on failure, a panic
// included, sv is forgotten, so the next call tries again.
func (s *shareStates) take(part int32, sv *shareServed) {
	defer func() {
		if sv.lp == nil {
			sv.err = cmp.Or(sv.err, errShareTakeover)
			s.mu.Lock()
			if s.served[part] == sv {
				delete(s.served, part)
			}
			s.mu.Unlock()
		}
		close(sv.ready)
	}()
	ctx, cancel := context.WithTimeout(s.gw.ctx, s.gw.cfg.RequestTimeout)
	defer cancel()
	logf := func(err error) {
		s.gw.log.Warn().Int32("partition", part).Err(err).Msg("a share state record was skipped")
	}
	sv.lp, sv.err = sharestore.Take(ctx, newShareLog(s.gw.shareState(), s.tn), part, s.gw.shareLimits(), logf)
}

// unloadMoved forgets the log partitions another gateway serves now, and
// with them their holders' tokens: if one comes back, it is taken over
// again, under a new epoch.
func (s *shareStates) unloadMoved() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for part := range s.served {
		if !s.gw.ownsPartition(shareStateTopic, part) {
			delete(s.served, part)
		}
	}
}

// unloadMovedShareState forgets, for every tenant, the share state log
// partitions that moved away.
func (gw *Gateway) unloadMovedShareState() {
	gw.forEachTenant(func(tn *tenant) { tn.shares.unloadMoved() })
}

// holder is k's holder on sv, locked; the caller unlocks it.
func (s *shareStates) holder(ctx context.Context, sv *shareServed, k sharestore.Key) (*shareHolder, error) {
	s.mu.Lock()
	h := sv.holders[k]
	if h == nil {
		h = &shareHolder{lock: make(chan struct{}, 1)}
		sv.holders[k] = h
	}
	s.mu.Unlock()
	select {
	case h.lock <- struct{}{}:
		return h, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *shareHolder) unlock() { <-h.lock }

// issue is a token for a new holder on sv: the log partition's epoch
// above a count, so that no token of a later take over, whose epoch is
// higher, equals one of an earlier.
func (s *shareStates) issue(sv *shareServed) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv.tokens++
	return uint64(sv.lp.Epoch())<<32 | uint64(sv.tokens)
}

// takeServed makes a new holder of k on sv, fencing the one before, and
// returns the records k's state loads from (none when nothing is kept).
func (s *shareStates) takeServed(ctx context.Context, sv *shareServed, k sharestore.Key) (recs []sharestate.Record, token uint64, err error) {
	h, err := s.holder(ctx, sv, k)
	if err != nil {
		return nil, 0, err
	}
	defer h.unlock()
	if snap, updates, ok := sv.lp.Records(k); ok {
		recs = append([]sharestate.Record{snap}, updates...)
	}
	h.token = s.issue(sv)
	return recs, h.token, nil
}

// persistServed writes rec for k's holder of token on sv.
func (s *shareStates) persistServed(ctx context.Context, sv *shareServed, k sharestore.Key, token uint64, rec sharestate.Record) error {
	h, err := s.holder(ctx, sv, k)
	if err != nil {
		return err
	}
	defer h.unlock()
	if token == 0 || token != h.token {
		return plog.ErrShareFenced
	}
	return sv.lp.Persist(ctx, k, rec)
}

// deleteServed deletes k on sv and fences its holder.
func (s *shareStates) deleteServed(ctx context.Context, sv *shareServed, k sharestore.Key) error {
	h, err := s.holder(ctx, sv, k)
	if err != nil {
		return err
	}
	defer h.unlock()
	if err := sv.lp.Delete(ctx, k); err != nil {
		return err
	}
	h.token = 0
	return nil
}

// startServed is k's kept share-partition start offset on sv.
func startServed(sv *shareServed, k sharestore.Key) (int64, bool, error) {
	p, ok, err := sv.lp.Load(k)
	if err != nil || !ok {
		return 0, false, err
	}
	return p.StartOffset(), true, nil
}

// keysServed lists group's share-partitions on sv.
func keysServed(sv *shareServed, group string) []sharestore.Key {
	var out []sharestore.Key
	for _, k := range sv.lp.Keys() {
		if k.Group == group {
			out = append(out, k)
		}
	}
	return out
}

// kept reports whether the state topic exists, asking DIS when the
// catalog does not know it: another gateway may have created it since.
// The queries that only read (Start, Keys, Delete) do not create it.
func (s *shareStates) kept(ctx context.Context) (bool, error) {
	if ok, err := s.gw.shareState().Exists(ctx, s.tn); ok || err != nil {
		return ok, err
	}
	_, err := s.tn.catalog.Refresh(ctx, shareStateTopic)
	if errors.Is(err, topics.ErrUnknownTopic) {
		return false, nil
	}
	return err == nil, err
}

// serveKept is serve for the queries that only read: nil, without an
// error, when the state topic does not exist yet.
func (s *shareStates) serveKept(ctx context.Context, part int32) (*shareServed, error) {
	if !s.gw.servesShare(part) {
		return nil, errNotShareServer(part)
	}
	s.mu.Lock()
	_, held := s.served[part]
	s.mu.Unlock()
	if !held {
		if ok, err := s.kept(ctx); err != nil || !ok {
			return nil, err
		}
	}
	return s.serve(ctx, part)
}

// usable refuses a tenant whose state another gateway could not write.
func (s *shareStates) usable() error {
	if !s.gw.transactional(s.tn) { // the same rule as transactions'
		return errShareTenant
	}
	return nil
}

// Take implements plog.ShareStates.
func (s *shareStates) Take(ctx context.Context, k sharestore.Key) (*sharestate.Partition, uint64, bool, error) {
	if err := s.usable(); err != nil {
		return nil, 0, false, err
	}
	var recs []sharestate.Record
	var token uint64
	part, here := s.logPartition(k)
	if here {
		sv, err := s.serve(ctx, part)
		if err != nil {
			return nil, 0, false, err
		}
		if recs, token, err = s.takeServed(ctx, sv, k); err != nil {
			return nil, 0, false, err
		}
	} else {
		var err error
		if recs, token, err = s.gw.peerShareTake(ctx, part, k); err != nil {
			return nil, 0, false, err
		}
	}
	if len(recs) == 0 {
		return nil, token, false, nil
	}
	p, err := sharestate.Load(s.gw.shareLimits(), recs[0], recs[1:]...)
	if err != nil {
		return nil, 0, false, fmt.Errorf("loading share-partition %q/%q/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	return p, token, true, nil
}

// Persist implements plog.ShareStates.
func (s *shareStates) Persist(ctx context.Context, k sharestore.Key, token uint64, rec sharestate.Record) error {
	if err := s.usable(); err != nil {
		return err
	}
	part, here := s.logPartition(k)
	if !here {
		return s.gw.peerSharePersist(ctx, part, k, token, rec)
	}
	sv, err := s.serve(ctx, part)
	if err != nil {
		return err
	}
	return s.persistServed(ctx, sv, k, token, rec)
}

// Start implements plog.ShareStates.
func (s *shareStates) Start(ctx context.Context, k sharestore.Key) (int64, bool, error) {
	if err := s.usable(); err != nil {
		return 0, false, err
	}
	part, here := s.logPartition(k)
	if !here {
		return s.gw.peerShareStart(ctx, part, k)
	}
	sv, err := s.serveKept(ctx, part)
	if sv == nil || err != nil {
		return 0, false, err
	}
	return startServed(sv, k)
}

// Delete implements plog.ShareStates.
func (s *shareStates) Delete(ctx context.Context, k sharestore.Key) error {
	if err := s.usable(); err != nil {
		return err
	}
	part, here := s.logPartition(k)
	if !here {
		return s.gw.peerShareDelete(ctx, part, k)
	}
	sv, err := s.serveKept(ctx, part)
	if sv == nil || err != nil {
		return err
	}
	return s.deleteServed(ctx, sv, k)
}

// Keys implements plog.ShareStates: the log partitions served here are
// read in process, and every other gateway serving some is asked once
// for all of them.
func (s *shareStates) Keys(ctx context.Context, group string) ([]sharestore.Key, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var out []sharestore.Key
	peers := make(map[int32]cluster.Peer)
	atPeers := make(map[int32][]int32) // peer id → its log partitions
	for part := range s.gw.cfg.ShareStatePartitions {
		if owner := s.gw.partitionOwner(shareStateTopic, part); owner.ID != s.gw.cfg.NodeID {
			peers[owner.ID] = owner
			atPeers[owner.ID] = append(atPeers[owner.ID], part)
			continue
		}
		ks, err := s.keysHere(ctx, part, group)
		if err != nil {
			return nil, err
		}
		out = append(out, ks...)
	}
	for _, id := range slices.Sorted(maps.Keys(atPeers)) {
		ks, err := s.gw.peerShareKeys(ctx, peers[id], atPeers[id], group)
		if err != nil {
			return nil, err
		}
		out = append(out, ks...)
	}
	slices.SortFunc(out, sharestore.CompareKeys)
	return out, nil
}

// keysHere lists group's share-partitions in log partition part, which
// this gateway serves.
func (s *shareStates) keysHere(ctx context.Context, part int32, group string) ([]sharestore.Key, error) {
	sv, err := s.serveKept(ctx, part)
	if sv == nil || err != nil {
		return nil, err
	}
	return keysServed(sv, group), nil
}

// shareLog is the sharestore.Log of one tenant's state topic. Tenants
// that sign in with different keys of one DIS project share its streams,
// the state topic among them, yet keep their own groups: each one's keys
// begin with its namespace (shareSpace), and it reads only its own, so
// neither one's records nor its takeovers fence the other's.
type shareLog struct {
	st    stateTopic
	tn    *tenant
	space []byte
}

// newShareLog is tn's share state log.
func newShareLog(st stateTopic, tn *tenant) shareLog {
	return shareLog{st: st, tn: tn, space: shareSpace(tn.id)}
}

// shareSpace is the namespace of tenant id's keys: its length, then the
// first 16 bytes of its SHA-256 (an access key is not written out for the
// project's other users to read), or nothing for the gateway's own
// credentials, whose id is empty. The length makes it prefix-free.
func shareSpace(id string) []byte {
	if id == "" {
		return []byte{0}
	}
	sum := sha256.Sum256([]byte(id))
	return append([]byte{16}, sum[:16]...)
}

// Append writes through the log partition's writer, which refuses it
// once another gateway owns the partition.
func (l shareLog) Append(ctx context.Context, part int32, key, value []byte) error {
	return l.st.Append(ctx, l.tn, part, append(slices.Clip(l.space), key...), value)
}

// Read reads the whole log partition, as a takeover must, and returns
// the tenant's records with their keys out of its namespace.
func (l shareLog) Read(ctx context.Context, part int32) ([]sharestore.Entry, error) {
	var out []sharestore.Entry
	err := l.st.read(ctx, l.tn, part, func(key, value []byte) {
		if own, ok := bytes.CutPrefix(key, l.space); ok {
			out = append(out, sharestore.Entry{Key: own, Value: value})
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
