package groupcoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTwoMembersJoinAndSync(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.newMemberID("g", "ca")
	if a != "ca-1" {
		t.Fatalf("default member id %q, want ca-1", a)
	}
	if got := h.state("g"); got != "Empty" {
		t.Fatalf("state with only a pending member %q, want Empty", got)
	}

	// Alone, a completes generation 1 at once, as leader.
	ja := h.step("ca", joinReq("g", a))
	r := h.joinResp(ja)
	if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != a || r.MemberID != a || len(r.Members) != 1 {
		t.Fatalf("first join: %+v", r)
	}
	if *r.ProtocolType != "consumer" || *r.Protocol != "range" || r.SkipAssignment {
		t.Fatalf("first join protocol: type %v name %v skip %v", *r.ProtocolType, *r.Protocol, r.SkipAssignment)
	}
	if got := h.state("g"); got != "CompletingRebalance" {
		t.Fatalf("state %q, want CompletingRebalance", got)
	}

	// b arrives before a synced: a's sync is refused and a rejoins.
	b := h.newMemberID("g", "cb")
	jb := h.step("cb", joinReq("g", b))
	if !h.waiting(jb) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("b's join answered early or state %q", h.state("g"))
	}
	h.wantCode(h.step("ca", syncReq("g", a, 1, map[string]string{a: "x"})), kerr.RebalanceInProgress)
	h.wantCode(h.step("ca", heartbeatReq("g", a, 1)), kerr.RebalanceInProgress)
	ja = h.step("ca", joinReq("g", a))

	ra, rb := h.joinResp(ja), h.joinResp(jb)
	if ra.Generation != 2 || rb.Generation != 2 || ra.LeaderID != a || rb.LeaderID != a {
		t.Fatalf("generation 2: leader view %+v, follower view %+v", ra, rb)
	}
	if len(rb.Members) != 0 {
		t.Fatalf("follower got %d members, want none", len(rb.Members))
	}
	var seen []string
	for _, m := range ra.Members {
		seen = append(seen, m.MemberID)
		if string(m.ProtocolMetadata) != "meta" {
			t.Fatalf("member %s metadata %q", m.MemberID, m.ProtocolMetadata)
		}
	}
	if !slices.Equal(seen, []string{a, b}) {
		t.Fatalf("leader sees %v, want [%s %s]", seen, a, b)
	}

	// The follower's sync waits for the leader's, then both are assigned.
	sb := h.step("cb", syncReq("g", b, 2, nil))
	if !h.waiting(sb) {
		t.Fatal("follower sync answered before the leader's")
	}
	sa := h.step("ca", syncReq("g", a, 2, map[string]string{a: "pa", b: "pb", "ghost": "pg"}))
	if got := string(h.syncResp(sa).MemberAssignment); got != "pa" {
		t.Fatalf("leader assignment %q", got)
	}
	if resp := h.syncResp(sb); string(resp.MemberAssignment) != "pb" || *resp.Protocol != "range" || *resp.ProtocolType != "consumer" {
		t.Fatalf("follower sync %+v", resp)
	}
	if h.state("g") != "Stable" {
		t.Fatalf("state %q, want Stable", h.state("g"))
	}
	// Stable: a sync returns the current assignment; heartbeats are fine.
	if got := string(h.syncResp(h.step("cb", syncReq("g", b, 2, nil))).MemberAssignment); got != "pb" {
		t.Fatalf("stable re-sync %q", got)
	}
	h.wantCode(h.step("cb", heartbeatReq("g", b, 2)), nil)
	h.allAnswered()
}

func TestThirdMemberDuringStableRebalances(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	a, b := ids[0], ids[1]

	jc := h.step("cc", joinReq("g", h.newMemberID("g", "cc")))
	if h.state("g") != "PreparingRebalance" || !h.waiting(jc) {
		t.Fatalf("state %q after a third member joined", h.state("g"))
	}
	h.wantCode(h.step("ca", heartbeatReq("g", a, 1)), kerr.RebalanceInProgress)
	h.wantCode(h.step("cb", heartbeatReq("g", b, 1)), kerr.RebalanceInProgress)
	ja := h.step("ca", joinReq("g", a))
	if !h.waiting(ja) {
		t.Fatal("join phase completed before b rejoined")
	}
	jb := h.step("cb", joinReq("g", b))
	for _, j := range []uint64{ja, jb, jc} {
		if r := h.joinResp(j); r.Generation != 2 || r.LeaderID != a {
			t.Fatalf("rejoin: %+v", r)
		}
	}
	if n := len(h.joinResp(ja).Members); n != 3 {
		t.Fatalf("leader sees %d members", n)
	}
	h.allAnswered()
}

func TestMemberThatDoesNotRejoinIsRemoved(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	a, b := ids[0], ids[1]
	start := h.now
	jc := h.step("cc", joinReq("g", h.newMemberID("g", "cc")))
	ja := h.step("ca", joinReq("g", a))
	if want := start.Add(testSession); !h.nextTick.Equal(want) {
		t.Fatalf("NextTick %v, want b's session deadline %v", h.nextTick, want)
	}
	// b keeps heartbeating but never rejoins.
	for h.now.Before(start.Add(testRebalance - 5*time.Second)) {
		h.after(5 * time.Second)
		h.wantCode(h.step("cb", heartbeatReq("g", b, 1)), kerr.RebalanceInProgress)
	}
	if !h.waiting(ja) || !h.waiting(jc) {
		t.Fatal("join phase ended before the rebalance timeout")
	}
	if want := start.Add(testRebalance); !h.nextTick.Equal(want) {
		t.Fatalf("NextTick %v, want rebalance deadline %v", h.nextTick, want)
	}
	h.at(start.Add(testRebalance))
	ra := h.joinResp(ja)
	if ra.Generation != 2 || len(ra.Members) != 2 {
		t.Fatalf("after timeout: %+v", ra)
	}
	if got := h.memberIDs("g"); slices.Contains(got, b) {
		t.Fatalf("b still a member: %v", got)
	}
	h.wantCode(h.step("cb", heartbeatReq("g", b, 1)), kerr.UnknownMemberID)
	h.allAnswered()
}

func TestFollowerAndLeaderRejoinInStable(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	a, b := ids[0], ids[1]
	// An unchanged follower gets the current generation back, no rebalance.
	jb := h.step("cb", joinReq("g", b))
	if r := h.joinResp(jb); r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != a || r.MemberID != b || len(r.Members) != 0 {
		t.Fatalf("follower rejoin in Stable: %+v", r)
	}
	if h.state("g") != "Stable" {
		t.Fatalf("state %s", h.state("g"))
	}
	// A follower with new metadata rebalances.
	changed := joinReq("g", b)
	changed.Protocols[0].Metadata = []byte("new")
	jb = h.step("cb", changed)
	if !h.waiting(jb) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("changed follower: state %s", h.state("g"))
	}
	ja := h.step("ca", joinReq("g", a))
	h.syncAll("g", []string{"ca", "cb"}, ids, []uint64{ja, jb})
	// The leader always rebalances.
	ja = h.step("ca", joinReq("g", a))
	if !h.waiting(ja) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("leader rejoin: state %s", h.state("g"))
	}
	jb = h.step("cb", changed)
	if h.joinResp(ja).Generation != 3 || h.joinResp(jb).Generation != 3 {
		t.Fatalf("leader rejoin: %+v", h.joinResp(ja))
	}
	// In CompletingRebalance an unchanged rejoin gets the same answer again,
	// the leader with every member.
	again := h.step("ca", joinReq("g", a))
	if r := h.joinResp(again); r.Generation != 3 || len(r.Members) != 2 || h.state("g") != "CompletingRebalance" {
		t.Fatalf("repeat join in CompletingRebalance: %+v state %s", r, h.state("g"))
	}
	if r := h.joinResp(h.step("cb", changed)); r.Generation != 3 || len(r.Members) != 0 {
		t.Fatalf("follower repeat join: %+v", r)
	}
	// A changed one starts over; a waiting sync is told so.
	sb := h.step("cb", syncReq("g", b, 3, nil))
	h.step("ca", joinReq("g", a)) // protocols "meta" again, after "meta": unchanged
	changedA := joinReq("g", a)
	changedA.Protocols[0].Metadata = []byte("newer")
	ja = h.step("ca", changedA)
	h.wantCode(sb, kerr.RebalanceInProgress)
	if !h.waiting(ja) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("changed join in CompletingRebalance: state %s", h.state("g"))
	}
	jb = h.step("cb", changed)
	if h.joinResp(ja).Generation != 4 || h.joinResp(jb).Generation != 4 {
		t.Fatal("rebalance after a changed join did not complete")
	}
	h.allAnswered()
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	a, b := ids[0], ids[1]
	// Heartbeats keep a alive well past one session timeout.
	for range 4 {
		h.after(testSession - time.Second)
		h.wantCode(h.step("ca", heartbeatReq("g", a, 1)), nil)
		h.wantCode(h.step("cb", heartbeatReq("g", b, 1)), nil)
	}
	// b goes silent; a does not.
	silentFrom := h.now
	h.after(testSession - time.Second)
	h.wantCode(h.step("ca", heartbeatReq("g", a, 1)), nil)
	if !h.nextTick.Equal(silentFrom.Add(testSession)) {
		t.Fatalf("NextTick %v, want b's expiry %v", h.nextTick, silentFrom.Add(testSession))
	}
	h.at(silentFrom.Add(testSession))
	if got := h.memberIDs("g"); !slices.Equal(got, []string{a}) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("after b expired: members %v state %s", got, h.state("g"))
	}
	h.wantCode(h.step("ca", heartbeatReq("g", a, 1)), kerr.RebalanceInProgress)
	ja := h.step("ca", joinReq("g", a))
	if r := h.joinResp(ja); r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin after expiry: %+v", r)
	}
	// a goes silent too (no heartbeat, no sync): the group empties.
	h.after(testRebalance)
	if h.state("g") != "Empty" || len(h.memberIDs("g")) != 0 {
		t.Fatalf("state %s members %v, want Empty", h.state("g"), h.memberIDs("g"))
	}
	// The empty group without offsets waits only to be forgotten.
	h.at(h.nextTick)
	if h.state("g") != "" || !h.nextTick.IsZero() {
		t.Fatalf("after its expiry the group is %q and wants a tick at %v", h.state("g"), h.nextTick)
	}
	h.allAnswered()
}

func TestPendingMemberExpiresAndBlocksJoinUntilThen(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.stableGroup("g", "ca")[0]
	p := h.newMemberID("g", "cp")
	// The leader's rejoin starts a rebalance that waits for the pending id.
	ja := h.step("ca", joinReq("g", a))
	if !h.waiting(ja) {
		t.Fatal("join completed while a member id was pending")
	}
	h.after(testSession - time.Millisecond)
	if !h.waiting(ja) {
		t.Fatal("pending id expired early")
	}
	h.after(time.Millisecond)
	if r := h.joinResp(ja); r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("join after pending expired: %+v", r)
	}
	h.wantCode(h.step("cp", joinReq("g", p)), kerr.UnknownMemberID)
	h.allAnswered()
}

func TestMemberIDRequiredDuringRebalance(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	jc := h.step("cc", joinReq("g", h.newMemberID("g", "cc")))
	d := h.newMemberID("g", "cd")
	ja := h.step("ca", joinReq("g", ids[0]))
	jb := h.step("cb", joinReq("g", ids[1]))
	if !h.waiting(ja) || !h.waiting(jb) || !h.waiting(jc) {
		t.Fatal("join phase ended while a member id was pending")
	}
	jd := h.step("cd", joinReq("g", d))
	for _, j := range []uint64{ja, jb, jc, jd} {
		if r := h.joinResp(j); r.ErrorCode != 0 || r.Generation != 2 {
			t.Fatalf("join: %+v", r)
		}
	}
	if n := len(h.joinResp(ja).Members); n != 4 {
		t.Fatalf("leader sees %d members, want 4", n)
	}
	h.allAnswered()
}

func TestInitialRebalanceDelay(t *testing.T) {
	const delay = 3 * time.Second
	h := newHarness(t, Config{InitialRebalanceDelay: delay})
	join := func(client string) uint64 {
		r := joinReq("g", "")
		r.Version = 3 // no MEMBER_ID_REQUIRED round trip
		r.RebalanceTimeoutMillis = 10000
		return h.step(client, r)
	}
	ja := join("ca")
	if !h.waiting(ja) || !h.nextTick.Equal(t0.Add(delay)) {
		t.Fatalf("first join: waiting %v NextTick %v", h.waiting(ja), h.nextTick.Sub(t0))
	}
	// Members arriving during the delay extend it, one delay at a time, up
	// to the rebalance timeout of 10s: joins at 2, 4, 6, 8s; deadlines at
	// 3, 6, 9 and, capped, 10s.
	var joins []uint64
	for _, c := range []string{"cb", "cc", "cd", "ce"} {
		h.after(2 * time.Second)
		joins = append(joins, join(c))
	}
	if !h.waiting(ja) || !h.nextTick.Equal(t0.Add(9*time.Second)) {
		t.Fatalf("at 8s: waiting %v NextTick %v, want 9s", h.waiting(ja), h.nextTick.Sub(t0))
	}
	h.at(t0.Add(9 * time.Second))
	if !h.waiting(ja) || !h.nextTick.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("at 9s: waiting %v NextTick %v, want 10s", h.waiting(ja), h.nextTick.Sub(t0))
	}
	h.at(t0.Add(10 * time.Second))
	if r := h.joinResp(ja); r.Generation != 1 || len(r.Members) != 5 {
		t.Fatalf("after delay: generation %d, %d members", r.Generation, len(r.Members))
	}
	for _, j := range joins {
		h.wantCode(j, nil)
	}
	h.allAnswered()
}

func TestInitialDelayWithoutNewMembers(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: 3 * time.Second})
	a := h.newMemberID("g", "ca")
	ja := h.step("ca", joinReq("g", a))
	h.after(3*time.Second - time.Millisecond)
	if !h.waiting(ja) {
		t.Fatal("answered before the initial delay")
	}
	h.after(time.Millisecond)
	if r := h.joinResp(ja); r.Generation != 1 {
		t.Fatalf("after delay: %+v", r)
	}
	// Once the group has run, a new member rebalances without the delay
	// (it is not Empty) — and waits only for a to rejoin.
	h.syncAll("g", []string{"ca"}, []string{a}, []uint64{ja})
	jb := h.step("cb", joinReq("g", h.newMemberID("g", "cb")))
	ja = h.step("ca", joinReq("g", a))
	if h.joinResp(jb).Generation != 2 || h.joinResp(ja).Generation != 2 {
		t.Fatal("second rebalance did not complete once everyone rejoined")
	}
	h.allAnswered()
}

func TestMemberThatDoesNotSyncIsRemoved(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.newMemberID("g", "ca")
	b := h.newMemberID("g", "cb")
	ja := h.step("ca", joinReq("g", a))
	jb := h.step("cb", joinReq("g", b))
	h.wantCode(ja, nil)
	h.wantCode(jb, nil)
	joined := h.now
	// Only the leader syncs; b heartbeats but never syncs.
	h.step("ca", syncReq("g", a, 1, map[string]string{a: "pa", b: "pb"}))
	if h.state("g") != "Stable" || !h.nextTick.Equal(joined.Add(testSession)) {
		t.Fatalf("state %s NextTick %v", h.state("g"), h.nextTick)
	}
	for range 5 {
		h.after(5 * time.Second)
		h.step("ca", heartbeatReq("g", a, 1))
		h.step("cb", heartbeatReq("g", b, 1))
	}
	h.at(joined.Add(testRebalance))
	if got := h.memberIDs("g"); !slices.Equal(got, []string{a}) || h.state("g") != "PreparingRebalance" {
		t.Fatalf("members %v state %s after sync deadline", got, h.state("g"))
	}
	h.allAnswered()
}

func TestLeaderThatDoesNotSyncReleasesWaitingFollowers(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.newMemberID("g", "ca")
	b := h.newMemberID("g", "cb")
	h.step("ca", joinReq("g", a))
	h.step("cb", joinReq("g", b))
	sb := h.step("cb", syncReq("g", b, 1, nil))
	h.after(testSession) // a's session runs out first: it never heartbeats or syncs
	h.wantCode(sb, kerr.RebalanceInProgress)
	if got := h.memberIDs("g"); !slices.Equal(got, []string{b}) {
		t.Fatalf("members %v", got)
	}
	h.allAnswered()
}

func TestCooperativeStyleConsecutiveRebalances(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", "ca", "cb")
	clients := []string{"ca", "cb"}
	// Incremental cooperative rebalancing: every member rejoins with its
	// owned partitions in its metadata, twice per change, and the leader's
	// assignor moves partitions in steps. The coordinator only has to carry
	// each round cleanly.
	for round := range 4 {
		gen := int32(2 + round)
		joins := make([]uint64, len(ids))
		for i, id := range ids {
			r := joinReq("g", id)
			r.Protocols = []kmsg.JoinGroupRequestProtocol{
				{Name: "cooperative-sticky", Metadata: []byte{byte(round), byte(i)}},
				{Name: "range", Metadata: []byte("meta")},
			}
			joins[i] = h.step(clients[i], r)
		}
		assign := map[string]string{}
		for i, j := range joins {
			r := h.joinResp(j)
			if r.ErrorCode != 0 || r.Generation != gen || *r.Protocol != "cooperative-sticky" {
				t.Fatalf("round %d member %d: %+v", round, i, r)
			}
			if r.LeaderID == r.MemberID {
				for k, m := range r.Members {
					if m.ProtocolMetadata[0] != byte(round) || m.ProtocolMetadata[1] != byte(k) {
						t.Fatalf("round %d: leader sees stale metadata %v", round, m.ProtocolMetadata)
					}
					assign[m.MemberID] = string(rune('p' + round + k))
				}
			}
		}
		var syncs []uint64
		for i := len(ids) - 1; i >= 0; i-- { // leader last
			s := syncReq("g", ids[i], gen, nil)
			s.Protocol = kmsg.StringPtr("cooperative-sticky")
			if i == 0 {
				for id, a := range assign {
					s.GroupAssignment = append(s.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
				}
			}
			syncs = append(syncs, h.step(clients[i], s))
		}
		for k, s := range syncs {
			i := len(ids) - 1 - k
			if got := string(h.syncResp(s).MemberAssignment); got != assign[ids[i]] {
				t.Fatalf("round %d: %s assigned %q, want %q", round, ids[i], got, assign[ids[i]])
			}
		}
		if h.state("g") != "Stable" {
			t.Fatalf("round %d ended %s", round, h.state("g"))
		}
	}
	h.allAnswered()
}

// TestLateTickEqualsPunctualTicks checks that deadlines run as of their own
// time: one late Tick ends where many small ones do.
func TestLateTickEqualsPunctualTicks(t *testing.T) {
	// a, b and c fall silent while d joins: their sessions end at 10s, the
	// join phase completes with d alone, whose session (it never syncs)
	// ends at 20s and empties the group.
	run := func(end, step time.Duration) (string, []string, *kmsg.JoinGroupResponse, []uint64) {
		h := newHarness(t, Config{})
		h.stableGroup("g", "ca", "cb", "cc")
		jd := h.step("cd", joinReq("g", h.newMemberID("g", "cd")))
		for h.now.Before(t0.Add(end)) {
			h.at(t0.Add(min(h.now.Add(step).Sub(t0), end)))
		}
		jr, _ := h.got[jd].(*kmsg.JoinGroupResponse)
		return h.state("g"), h.memberIDs("g"), jr, h.order
	}
	for _, tc := range []struct {
		end     time.Duration
		state   string
		members int
	}{
		{15 * time.Second, "CompletingRebalance", 1},
		{time.Minute, "Empty", 0},
	} {
		lateState, lateMembers, lateJoin, lateOrder := run(tc.end, time.Hour)
		state, members, join, order := run(tc.end, 100*time.Millisecond)
		if state != tc.state || len(members) != tc.members || join == nil || join.Generation != 2 || join.LeaderID != join.MemberID {
			t.Fatalf("at %v: state %s members %v join %+v", tc.end, state, members, join)
		}
		if lateState != state || !slices.Equal(lateMembers, members) || lateJoin.Generation != join.Generation || lateJoin.MemberID != join.MemberID || !slices.Equal(lateOrder, order) {
			t.Fatalf("at %v: one late tick gave %s %v %v, punctual ticks %s %v %v", tc.end, lateState, lateMembers, lateOrder, state, members, order)
		}
	}
}

// TestManyGroupsTimersInterleave checks that deadlines of many groups fire
// each at its own time, whatever order they were set in.
func TestManyGroupsTimersInterleave(t *testing.T) {
	h := newHarness(t, Config{})
	// Group i's member has a session of 6+i seconds; groups are made in an
	// order unrelated to their deadlines.
	order := []int{3, 0, 4, 1, 2}
	members := map[int]string{}
	for _, i := range order {
		r := joinReq(string(rune('a'+i)), "")
		r.Version = 3
		r.SessionTimeoutMillis = int32(6000 + 1000*i)
		j := h.step("c", r)
		members[i] = h.joinResp(j).MemberID
		h.syncAll(string(rune('a'+i)), []string{"c"}, []string{members[i]}, []uint64{j})
	}
	for i := range 5 {
		if !h.nextTick.Equal(t0.Add(time.Duration(6+i) * time.Second)) {
			t.Fatalf("NextTick %v, want group %d's expiry", h.nextTick.Sub(t0), i)
		}
		h.at(h.nextTick)
		for k := range 5 {
			want := "Stable"
			if k <= i {
				want = "Empty"
			}
			if got := h.state(string(rune('a' + k))); got != want {
				t.Fatalf("after %d expiries group %d is %s, want %s", i+1, k, got, want)
			}
		}
	}
	if want := t0.Add(6*time.Second + emptyGroupLinger); !h.nextTick.Equal(want) {
		t.Fatalf("NextTick %v with every group empty, want the first one's expiry %v", h.nextTick, want)
	}
}

// A group that moved here starts again in memory while its members still
// claim partitions in the last coordinator's generation: each generation
// this coordinator makes is newer than every claim, so a cooperative
// assignor never prefers a stale claim to the partitions' new owners.
func TestGenerationPassesClaims(t *testing.T) {
	h := newHarness(t, Config{})
	claiming := func(r *kmsg.JoinGroupRequest, generation int32) *kmsg.JoinGroupRequest {
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Version = 3
		meta.Topics = []string{"t"}
		meta.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: []int32{0}}}
		meta.Generation = generation
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
		return r
	}
	a := h.newMemberID("g", "ca")
	r := h.joinResp(h.step("ca", claiming(joinReq("g", a), 7)))
	if r.ErrorCode != 0 || r.Generation != 8 {
		t.Fatalf("first join claiming generation 7: code %d generation %d, want generation 8", r.ErrorCode, r.Generation)
	}
	h.wantCode(h.step("ca", syncReq("g", a, 8, map[string]string{a: "x"})), nil)

	// A claim no newer than the group's own changes nothing; an old
	// metadata version (no generation) claims none.
	b := h.newMemberID("g", "cb")
	jb := h.step("cb", claiming(joinReq("g", b), 3))
	ja := h.step("ca", claiming(joinReq("g", a), 8))
	if ra, rb := h.joinResp(ja), h.joinResp(jb); ra.Generation != 9 || rb.Generation != 9 {
		t.Fatalf("generations %d and %d, want 9", ra.Generation, rb.Generation)
	}
	h2 := newHarness(t, Config{})
	c := h2.newMemberID("g", "cc")
	if r := h2.joinResp(h2.step("cc", joinReq("g", c))); r.Generation != 1 {
		t.Fatalf("metadata without a generation: generation %d, want 1", r.Generation)
	}
}
