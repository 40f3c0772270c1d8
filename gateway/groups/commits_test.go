package groups

import (
	"slices"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/groupcoord"
)

// testTenant is a tenant as the gateway hands it to the driver.
type testTenant struct{ id string }

// testDeps are the deps of a driver that coordinates every group, without
// the initial rebalance delay; they have no DIS side.
func testDeps() Deps[*testTenant] {
	return Deps[*testTenant]{
		Coord:         groupcoord.Config{InitialRebalanceDelay: -1},
		Log:           zerolog.Nop(),
		Tenant:        func(tn *testTenant) (string, string) { return tn.id, "" },
		Coordinates:   func(string) bool { return true },
		Ready:         func(string, string, *groupcoord.Ready) {},
		Go:            func(_ string, fn func()) { go fn() },
		Recover:       func(string, func()) {},
		ShareDeparted: func(*testTenant, string, string) {},
	}
}

// testDriver is a driver of testDeps, closed when the test ends.
func testDriver(t *testing.T) *Driver[*testTenant] {
	d := New(testDeps())
	t.Cleanup(d.Close)
	return d
}

// gatedWrites stands in for DIS behind the commit queue: the first write
// holds until release closes, and each write that is not stale records its
// offset, in the order the writes ran.
type gatedWrites struct {
	entered, release chan struct{}
	once             sync.Once

	mu      sync.Mutex
	written []string
}

func newGatedWrites() *gatedWrites {
	return &gatedWrites{entered: make(chan struct{}), release: make(chan struct{})}
}

// commit commits offset of group "g" through d for member (a simple commit
// for generation -1 and no member) and returns the coordinator's code and
// a channel that tells, once the write ran, whether it was stale.
func (w *gatedWrites) commit(d *Driver[*testTenant], tn *testTenant, member string, generation int32, offset string) (int16, <-chan bool) {
	ran := make(chan bool, 1)
	code := d.Commit(tn, "g", member, nil, generation, func(stale bool) {
		w.once.Do(func() {
			close(w.entered)
			<-w.release
		})
		if !stale {
			w.mu.Lock()
			w.written = append(w.written, offset)
			w.mu.Unlock()
		}
		ran <- stale
	})
	return code, ran
}

// queued is how many commits of tn's group "g" wait behind the one
// running.
func queued(d *Driver[*testTenant], tn *testTenant) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queues[offsetQueueKey[*testTenant]{tn, "g"}])
}

// Two commits of one group: the second, accepted while the first is still
// being written, waits for it, so the later commit is the one that stays.
func TestOffsetCommitsLandInAcceptedOrder(t *testing.T) {
	d, tn, w := testDriver(t), &testTenant{}, newGatedWrites()
	code1, first := w.commit(d, tn, "", -1, "10")
	<-w.entered
	code2, second := w.commit(d, tn, "", -1, "20")
	if code1 != 0 || code2 != 0 {
		t.Fatalf("commits: %v, %v", kerr.ErrorForCode(code1), kerr.ErrorForCode(code2))
	}
	if n := queued(d, tn); n != 1 {
		t.Fatalf("%d commits queued behind the one being written, want 1", n)
	}
	close(w.release)
	if a, b := <-first, <-second; a || b {
		t.Fatalf("stale: %v, %v", a, b)
	}
	if !slices.Equal(w.written, []string{"10", "20"}) {
		t.Fatalf("written %v, want [10 20]", w.written)
	}
}

// A commit of generation 1 still queued when the group reached generation 2
// never lands, even though the coordinator accepted it.
func TestStaleGenerationCommitDoesNotLand(t *testing.T) {
	d, tn, w := testDriver(t), &testTenant{}, newGatedWrites()
	conn := Conn[*testTenant]{Tenant: tn, ClientID: "c", Host: "/127.0.0.1", Refuse: func(code int16) kmsg.Response {
		t.Fatalf("refused: %v", kerr.ErrorForCode(code))
		return nil
	}}
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 5
		req.Group, req.MemberID = "g", member
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		resp := (<-d.Step(conn, req)).(*kmsg.JoinGroupResponse)
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			req.MemberID = resp.MemberID
			resp = (<-d.Step(conn, req)).(*kmsg.JoinGroupResponse)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Version = 3
		sync.Group, sync.MemberID, sync.Generation = "g", resp.MemberID, resp.Generation
		if r := (<-d.Step(conn, sync)).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
			t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		return resp
	}
	g1 := join("")
	member := g1.MemberID
	_, inDIS := w.commit(d, tn, member, g1.Generation, "10")
	<-w.entered
	code, stale := w.commit(d, tn, member, g1.Generation, "15")
	if code != 0 {
		t.Fatalf("a commit of the current generation: %v", kerr.ErrorForCode(code))
	}
	// The leader rejoins: the group moves to the next generation.
	g2 := join(member)
	if g2.Generation != g1.Generation+1 {
		t.Fatalf("generation %d after the rejoin, want %d", g2.Generation, g1.Generation+1)
	}
	_, newer := w.commit(d, tn, member, g2.Generation, "30")
	if n := queued(d, tn); n != 2 {
		t.Fatalf("%d commits queued behind the one being written, want 2", n)
	}
	close(w.release)
	if a, b, c := <-inDIS, <-stale, <-newer; a || !b || c {
		t.Fatalf("stale: %v, %v (want true), %v", a, b, c)
	}
	if !slices.Equal(w.written, []string{"10", "30"}) {
		t.Fatalf("written %v, want [10 30]", w.written)
	}
}
