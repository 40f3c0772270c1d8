package gateway

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/sharestore"
)

// shareCtx is a test's deadline for one share state call.
func shareCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// shareTake takes k through s, failing the test on an error.
func shareTake(t *testing.T, s plog.ShareStates, k sharestore.Key) (*sharestate.Partition, uint64, bool) {
	t.Helper()
	p, token, found, err := s.Take(shareCtx(t), k)
	if err != nil {
		t.Fatalf("Take %+v: %v", k, err)
	}
	return p, token, found
}

// shareFlush persists every record p asks for as token's holder.
func shareFlush(t *testing.T, s plog.ShareStates, k sharestore.Key, token uint64, p *sharestate.Partition) {
	t.Helper()
	for rd := p.Ready(); rd.Record != nil; rd = p.Ready() {
		if err := s.Persist(shareCtx(t), k, token, *rd.Record); err != nil {
			t.Fatalf("Persist %+v: %v", k, err)
		}
		p.Persisted(rd.Record.Seq)
	}
}

// shareStarted takes k, starts it at 0 when nothing is kept, hands member
// a read of n offsets, accepts the first done of them and persists it
// all; it returns the holder's token.
func shareStarted(t *testing.T, s plog.ShareStates, k sharestore.Key, n, done int64) uint64 {
	t.Helper()
	p, token, found := shareTake(t, s, k)
	if !found {
		var err error
		if p, err = sharestate.New(sharestate.Config{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	from, _ := p.FetchOffset()
	if _, err := p.Acquire(now, sharestate.AcquireRequest{Member: "m", From: from, Batches: []sharestate.Range{{First: from, Last: from + n - 1}}}); err != nil {
		t.Fatal(err)
	}
	p.Acknowledge(now, sharestate.AckRequest{ID: 1, Member: "m", Ranges: []sharestate.AckRange{{First: from, Last: from + done - 1, Types: []sharestate.AckType{sharestate.Accept}}}})
	shareFlush(t, s, k, token, p)
	return token
}

// kept is what k's state is as Take loads it, as a snapshot with no
// number, and whether there is one.
func kept(t *testing.T, s plog.ShareStates, k sharestore.Key) (sharestate.Record, bool) {
	t.Helper()
	p, _, found := shareTake(t, s, k)
	if !found {
		return sharestate.Record{}, false
	}
	p.WantSnapshot()
	r := *p.Ready().Record
	r.Seq = 0
	return r, true
}

// checkShareStates runs what every plog.ShareStates must do through
// s, which restart replaces by the same store after a restart.
func checkShareStates(t *testing.T, s plog.ShareStates, restart func() plog.ShareStates) {
	k := sharestore.Key{Group: "g1", Topic: "orders", Stream: "s-orders", Partition: 2}
	if _, token, found := shareTake(t, s, k); found || token == 0 {
		t.Fatalf("an empty store: found %t, token %d", found, token)
	}
	if _, found, err := s.Start(shareCtx(t), k); found || err != nil {
		t.Fatalf("Start of nothing kept: found %t, %v", found, err)
	}
	shareStarted(t, s, k, 10, 4)
	want, found := kept(t, s, k)
	if !found || want.Start != 4 || want.End != 10 {
		t.Fatalf("kept %+v (found %t), want SPSO 4 and SPEO 10", want, found)
	}
	if start, found, err := s.Start(shareCtx(t), k); start != 4 || !found || err != nil {
		t.Fatalf("Start: %d, %t, %v", start, found, err)
	}

	s = restart()
	if got, found := kept(t, s, k); !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart: %+v (found %t), want %+v", got, found, want)
	}

	// A holder whose token another Take replaced writes nothing.
	old, oldToken, _ := shareTake(t, s, k)
	if _, _, found := shareTake(t, s, k); !found {
		t.Fatal("the second holder found nothing")
	}
	from, _ := old.FetchOffset()
	if _, err := old.Acquire(time.Now(), sharestate.AcquireRequest{Member: "m", From: from, Batches: []sharestate.Range{{First: from, Last: from + 4}}}); err != nil {
		t.Fatal(err)
	}
	old.WantSnapshot()
	rec := *old.Ready().Record
	if err := s.Persist(shareCtx(t), k, oldToken, rec); !errors.Is(err, plog.ErrShareFenced) {
		t.Fatalf("a fenced holder's Persist: %v", err)
	}
	if got, _ := kept(t, s, k); !reflect.DeepEqual(got, want) {
		t.Fatalf("a fenced write changed the state: %+v, want %+v", got, want)
	}

	others := []sharestore.Key{{Group: "g1", Topic: "audit", Stream: "s-audit", Partition: 0}, {Group: "g1", Topic: "orders", Stream: "s-orders", Partition: 0}, {Group: "g2", Topic: "orders", Stream: "s-orders", Partition: 2}}
	for _, o := range others {
		shareStarted(t, s, o, 3, 1)
	}
	wantKeys := []sharestore.Key{others[0], others[1], k}
	if got, err := s.Keys(shareCtx(t), "g1"); err != nil || !reflect.DeepEqual(got, wantKeys) {
		t.Fatalf("Keys(g1): %+v, %v; want %+v", got, err, wantKeys)
	}

	_, token, _ := shareTake(t, s, k)
	if err := s.Delete(shareCtx(t), k); err != nil {
		t.Fatal(err)
	}
	if err := s.Persist(shareCtx(t), k, token, rec); !errors.Is(err, plog.ErrShareFenced) {
		t.Fatalf("Persist after Delete: %v", err)
	}
	if _, found := kept(t, s, k); found {
		t.Fatal("a deleted share-partition was found")
	}
	s = restart()
	if _, found := kept(t, s, k); found {
		t.Fatal("a deleted share-partition was found after a restart")
	}
	if got, err := s.Keys(shareCtx(t), "g1"); err != nil || !reflect.DeepEqual(got, wantKeys[:2]) {
		t.Fatalf("Keys(g1) after Delete: %+v, %v", got, err)
	}
	if got, err := s.Keys(shareCtx(t), "g2"); err != nil || !reflect.DeepEqual(got, others[2:]) {
		t.Fatalf("Keys(g2): %+v, %v", got, err)
	}
}

// closeGateway closes gw now, as its test's cleanup would.
func closeGateway(t *testing.T, gw *Gateway) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// A gateway alone keeps share-partitions in its DIS, across restarts, in
// an internal topic clients may not delete or create.
func TestShareStatesAlone(t *testing.T) {
	dis := localDIS(t)
	gw := startGateway(t, Config{}, dis)
	checkShareStates(t, gw.tenant.shares, func() plog.ShareStates {
		closeGateway(t, gw)
		gw = startGateway(t, Config{}, dis)
		return gw.tenant.shares
	})
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(shareStateTopic)}}
	resp := dialTest(t, gw).roundTrip(md).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || !resp.Topics[0].IsInternal || len(resp.Topics[0].Partitions) != 4 {
		t.Fatalf("the state topic in Metadata: %+v", resp.Topics)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TopicNames = 5, []string{shareStateTopic}
	if code := dialTest(t, gw).roundTrip(del).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != kerr.InvalidTopicException.Code {
		t.Fatalf("DeleteTopics of the state topic: %v", kerr.ErrorForCode(code))
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: shareStateTopic, NumPartitions: 1, ReplicationFactor: 1}}
	if code := dialTest(t, gw).roundTrip(create).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("CreateTopics of the state topic: %v", kerr.ErrorForCode(code))
	}
}

// ownerMembership is a membership of fixed peers where peer owner owns
// everything.
type ownerMembership struct {
	mu    sync.Mutex
	owner cluster.Peer
	peers []cluster.Peer
}

func (m *ownerMembership) Live() []cluster.Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peers
}

func (m *ownerMembership) Owner(string) cluster.Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owner
}

func (m *ownerMembership) Changed() <-chan struct{} { return make(chan struct{}) }

// peerOf is gw as its peers reach it, under id.
func peerOf(t *testing.T, id int32, gw *Gateway) cluster.Peer {
	host, port, err := net.SplitHostPort(gw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return cluster.Peer{ID: id, Host: host, Port: int32(p)}
}

var shareTestSecret = []byte("0123456789abcdef-share-peers")

// startPeer starts gateway id of a cluster over dis whose members m
// lists, with calls to the others.
func startPeer(t *testing.T, id int32, m *ownerMembership, dis disclient.API) *Gateway {
	pc := &cluster.PeerClients{Secret: shareTestSecret, From: id}
	t.Cleanup(pc.Close)
	return startGateway(t, Config{NodeID: id, PeerSecret: shareTestSecret, Peers: pc, Membership: m}, dis)
}

// A holder on one gateway keeps share-partitions through the peer that
// serves their log partitions, with the same guarantees; a gateway asked
// for a log partition it does not serve answers NOT_COORDINATOR.
func TestShareStatesThroughPeer(t *testing.T) {
	dis := localDIS(t)
	m := &ownerMembership{}
	server := startPeer(t, 1, m, dis)
	holder := startPeer(t, 0, m, dis)
	m.mu.Lock()
	m.owner = peerOf(t, 1, server)
	m.peers = []cluster.Peer{peerOf(t, 0, holder), m.owner}
	m.mu.Unlock()

	checkShareStates(t, holder.tenant.shares, func() plog.ShareStates {
		closeGateway(t, server)
		server = startPeer(t, 1, m, dis)
		m.mu.Lock()
		m.owner = peerOf(t, 1, server)
		m.peers[1] = m.owner
		m.mu.Unlock()
		return holder.tenant.shares
	})
	server.tenant.shares.mu.Lock()
	servedThere := len(server.tenant.shares.served)
	server.tenant.shares.mu.Unlock()
	holder.tenant.shares.mu.Lock()
	servedHere := len(holder.tenant.shares.served)
	holder.tenant.shares.mu.Unlock()
	if servedThere == 0 || servedHere != 0 {
		t.Fatalf("log partitions served: %d by their owner, %d by the holder's gateway", servedThere, servedHere)
	}

	pc := &cluster.PeerClients{Secret: shareTestSecret, From: 1}
	defer pc.Close()
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = "g1"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.UnknownTags = topicTags(sharestore.Key{Group: "g1", Topic: "orders", Stream: "s-orders", Partition: 2})
	rt.Partitions = []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 2}}
	req.Topics = []kmsg.ReadShareGroupStateRequestTopic{rt}
	resp, err := pc.Request(shareCtx(t), peerOf(t, 0, holder), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("a gateway that does not serve the log partition: %v", kerr.ErrorForCode(code))
	}
}

// The share state APIs answer other gateways only: a client is refused
// CLUSTER_AUTHORIZATION_FAILED and nothing is written.
func TestShareStateAPIsRefuseClients(t *testing.T) {
	gw := startGateway(t, Config{}, localDIS(t))
	k := sharestore.Key{Group: "g", Topic: "t", Partition: 0}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.UnknownTags = topicTags(k)
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p, err := sharestate.New(sharestate.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rp.UnknownTags.Set(peerShareTokenTag, make([]byte, 8))
	rp.UnknownTags.Set(peerShareRecordsTag, encodeShareRecords([]sharestate.Record{*p.Ready().Record}))
	rt.Partitions = []kmsg.WriteShareGroupStateRequestTopicPartition{rp}
	req.Topics = []kmsg.WriteShareGroupStateRequestTopic{rt}
	resp := dialTest(t, gw).roundTrip(req).(*kmsg.WriteShareGroupStateResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("WriteShareGroupState from a client: %v", kerr.ErrorForCode(code))
	}
	if _, found := kept(t, gw.tenant.shares, k); found {
		t.Fatal("a client's write was kept")
	}
}

// A log partition that moves away is forgotten with its holders' tokens;
// when it comes back it is taken over again under a higher epoch, so a
// token from before is fenced.
func TestShareStatesUnloadMoved(t *testing.T) {
	self, other := cluster.Peer{ID: 0}, cluster.Peer{ID: 1}
	m := &switchableOwner{owner: self, peers: []cluster.Peer{self, other}}
	gw := startGateway(t, Config{Membership: m}, localDIS(t))
	s := gw.tenant.shares
	k := sharestore.Key{Group: "g", Topic: "t", Partition: 0}
	token := shareStarted(t, s, k, 4, 2)
	served := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.served)
	}
	gw.unloadMovedShareState()
	if served() != 1 {
		t.Fatal("a log partition still owned was forgotten")
	}
	m.set(other)
	gw.unloadMovedShareState()
	if served() != 0 {
		t.Fatal("a log partition that moved away is still served")
	}
	if _, _, _, err := s.Take(shareCtx(t), k); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("Take with the log partition at an unreachable peer: %v", err)
	}
	m.set(self)
	p, newToken, found := shareTake(t, s, k)
	if !found || p.StartOffset() != 2 || newToken>>32 <= token>>32 {
		t.Fatalf("taken again: found %t, SPSO %d, token %x after %x", found, p.StartOffset(), newToken, token)
	}
	p.WantSnapshot()
	if err := s.Persist(shareCtx(t), k, token, *p.Ready().Record); !errors.Is(err, plog.ErrShareFenced) {
		t.Fatalf("a token from before the move: %v", err)
	}
}
