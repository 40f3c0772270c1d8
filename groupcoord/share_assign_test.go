package groupcoord

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkShareTarget checks the simple assignor's promises on a share
// group's target: only existing partitions of subscribed topics; each
// partition of a pool held by exactly ceil(members/partitions) of its
// members, so each is covered; members of a pool within one of each
// other; and the same target when computed again from itself.
func checkShareTarget(t *testing.T, sg *shareGroup) {
	t.Helper()
	if len(sg.target) != len(sg.members) || sg.assignmentEpoch != sg.epoch {
		t.Fatalf("%d targets for %d members; epochs %d/%d", len(sg.target), len(sg.members), sg.assignmentEpoch, sg.epoch)
	}
	topicOf := map[[16]byte]string{}
	var names []string
	for n, info := range sg.topics {
		topicOf[info.ID] = n
		names = append(names, n)
	}
	slices.Sort(names)
	holders := map[topicPartition]int{}
	for _, m := range sg.members {
		for _, tp := range sg.target[m.id].list() {
			n, ok := topicOf[tp.topic]
			if !ok || tp.partition >= sg.topics[n].Partitions || !m.subscribes(n) {
				t.Fatalf("%s is assigned %v (topic %q), which it may not have", m.id, tp, n)
			}
			holders[tp]++
		}
	}
	type pool struct {
		parts   []topicPartition
		members []*consumerMember
	}
	var pools []pool
	same := len(sg.members) > 0
	for _, n := range names {
		for _, m := range sg.members {
			same = same && m.subscribes(n) == sg.members[0].subscribes(n)
		}
	}
	if same {
		var all pool
		for _, n := range names {
			if sg.members[0].subscribes(n) {
				all.parts = append(all.parts, partitionsOf(sg.topics[n])...)
			}
		}
		all.members = sg.members
		pools = append(pools, all)
	} else {
		for _, n := range names {
			pools = append(pools, pool{partitionsOf(sg.topics[n]), sg.subscribers(n)})
		}
	}
	for _, p := range pools {
		if len(p.parts) == 0 || len(p.members) == 0 {
			continue
		}
		want := (len(p.members) + len(p.parts) - 1) / len(p.parts)
		for _, tp := range p.parts {
			if holders[tp] != want {
				t.Fatalf("%v is held by %d members, want %d", tp, holders[tp], want)
			}
		}
		lo, hi := len(p.parts)*want, 0
		for _, m := range p.members {
			n := 0
			for _, tp := range p.parts {
				if sg.target[m.id].has(tp) {
					n++
				}
			}
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > 1 {
			t.Fatalf("members hold %d to %d partitions of a pool of %d", lo, hi, len(p.parts))
		}
	}
	again := sg.assign()
	for id, a := range sg.target {
		if !a.equal(again[id]) {
			t.Fatalf("assigning again moves %s from %v to %v", id, a.list(), again[id].list())
		}
	}
}

// poolGroup is a share group of n members all subscribed to topic t of
// parts partitions, assigned.
func poolGroup(n int, parts int32) *shareGroup {
	g := &group{}
	g.makeShare()
	g.sg.topics["t"] = TopicInfo{ID: [16]byte{1}, Partitions: parts}
	for i := range n {
		addPoolMember(g.sg, "m"+strconv.Itoa(i))
	}
	g.sg.target = g.sg.assign()
	return g.sg
}

func addPoolMember(sg *shareGroup, id string) {
	m := &consumerMember{id: id, names: []string{"t"}}
	sg.members = append(sg.members, m)
	sg.byID[id] = m
}

func TestShareAssignGrid(t *testing.T) {
	for n := 1; n <= 13; n++ {
		for parts := int32(1); parts <= 13; parts++ {
			sg := poolGroup(n, parts)
			checkShareTarget(t, sg)
			// One more member: with no more members than partitions,
			// everyone keeps part of what it had and gets nothing new.
			old := sg.target
			addPoolMember(sg, "new")
			sg.target = sg.assign()
			checkShareTarget(t, sg)
			if n+1 <= int(parts) {
				for _, m := range sg.members[:n] {
					if !sg.target[m.id].subsetOf(old[m.id]) {
						t.Fatalf("%d members, %d partitions: %s went from %v to %v", n, parts, m.id, old[m.id].list(), sg.target[m.id].list())
					}
				}
			}
			// One member fewer: with no more members than partitions,
			// before and after, the rest only gain.
			old = sg.target
			sg.members = sg.members[1:]
			delete(sg.target, "m0")
			sg.target = sg.assign()
			checkShareTarget(t, sg)
			if n+1 <= int(parts) {
				for _, m := range sg.members {
					if !old[m.id].subsetOf(sg.target[m.id]) {
						t.Fatalf("%d members, %d partitions: %s went from %v to %v", n, parts, m.id, old[m.id].list(), sg.target[m.id].list())
					}
				}
			}
		}
	}
}

func TestShareAssignLarge(t *testing.T) {
	start := time.Now()
	sg := poolGroup(200, 1000)
	addPoolMember(sg, "new")
	sg.target = sg.assign()
	checkShareTarget(t, sg)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("assigning 1000 partitions to 200 members took %v", d)
	}
}

// TestShareRandomHistory drives share groups through random joins,
// heartbeats, subscription changes, leaves, silences and topic changes,
// checking after every step the assignment's promises, that every member
// that went was reported once, and that a member that heartbeats holds
// its target.
func TestShareRandomHistory(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 1))
		h := newHarness(t, Config{ShareSessionTimeout: 30 * time.Second})
		names := []string{"t0", "t1", "t2"}
		infos := map[string]TopicInfo{}
		nextID := byte(1)
		setTopic := func(n string, parts int32) {
			info, ok := infos[n]
			switch {
			case parts == 0:
				delete(infos, n)
				return
			case !ok:
				info.ID = [16]byte{nextID}
				nextID++
			}
			info.Partitions = parts
			infos[n] = info
		}
		for _, n := range names {
			setTopic(n, rng.Int32N(6)+1)
		}
		topics := func() Topics {
			t := Topics{Info: map[string]TopicInfo{}, All: []string{}}
			for n, info := range infos {
				t.Info[n] = info
				t.All = append(t.All, n)
			}
			slices.Sort(t.All)
			return t
		}
		pick := func() []string {
			var out []string
			for _, n := range names {
				if rng.IntN(2) == 0 {
					out = append(out, n)
				}
			}
			if len(out) == 0 {
				out = names[rng.IntN(len(names)):][:1]
			}
			return out
		}
		epochs := map[string]int32{} // what each live client last heard
		joined := 0
		for step := range 300 {
			var before []string
			if g := h.c.groups["g"]; g != nil {
				for _, m := range g.sg.members {
					before = append(before, m.id)
				}
			}
			departed := len(h.departures)
			var ids []string
			for id := range epochs {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			var beat string
			switch op := rng.IntN(10); {
			case op < 2 || len(ids) == 0:
				id := "m" + strconv.Itoa(joined)
				joined++
				resp := h.shStep(id, shJoin("g", id, pick()...), topics())
				if resp.ErrorCode != 0 {
					t.Fatalf("seed %d step %d: join: %d", seed, step, resp.ErrorCode)
				}
				epochs[id], beat = resp.MemberEpoch, id
			case op < 6:
				id := ids[rng.IntN(len(ids))]
				req := shBeat("g", id, epochs[id])
				if rng.IntN(4) == 0 {
					req.SubscribedTopicNames = pick()
				}
				resp := h.shStep(id, req, topics())
				if resp.ErrorCode != 0 {
					// Its session ended: it rejoins, as a share consumer does.
					delete(epochs, id)
					break
				}
				epochs[id], beat = resp.MemberEpoch, id
			case op < 7:
				id := ids[rng.IntN(len(ids))]
				h.shStep(id, shBeat("g", id, -1), topics())
				delete(epochs, id)
			case op < 9:
				h.after(time.Duration(rng.IntN(15)+1) * time.Second)
			default:
				setTopic(names[rng.IntN(len(names))], rng.Int32N(7))
			}
			g := h.c.groups["g"]
			var after []string
			if g != nil {
				for _, m := range g.sg.members {
					after = append(after, m.id)
				}
				checkShareTarget(t, g.sg)
				if m := g.sg.byID[beat]; beat != "" && (m.epoch != g.sg.assignmentEpoch || !m.assigned.equal(g.sg.target[beat])) {
					t.Fatalf("seed %d step %d: %s heartbeat but is at epoch %d of %d", seed, step, beat, m.epoch, g.sg.assignmentEpoch)
				}
			}
			var gone []string
			for _, d := range h.departures[departed:] {
				gone = append(gone, d.Member)
			}
			for _, id := range before {
				if !slices.Contains(after, id) != slices.Contains(gone, id) {
					t.Fatalf("seed %d step %d: %s went %v, departures %v", seed, step, id, !slices.Contains(after, id), gone)
				}
			}
			for i, id := range gone {
				if !slices.Contains(before, id) || slices.Contains(gone[:i], id) {
					t.Fatalf("seed %d step %d: departures %v for members %v → %v", seed, step, gone, before, after)
				}
			}
		}
		// Once every member has heartbeat, describe and ShareAssignees
		// agree with the target.
		for id, epoch := range epochs {
			if resp := h.shStep(id, shBeat("g", id, epoch), topics()); resp.ErrorCode != 0 {
				delete(epochs, id)
			}
		}
		g := h.c.groups["g"]
		if g == nil {
			continue
		}
		for _, m := range h.c.DescribeShare("g").Members {
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					if !slices.Contains(h.c.ShareAssignees("g", tp.TopicID, p), m.MemberID) {
						t.Fatalf("seed %d: %s holds %s-%d but is not among its assignees", seed, m.MemberID, tp.Topic, p)
					}
				}
			}
		}
		h.allAnswered()
	}
}

// TestShareHeartbeatVersions checks that every version kmsg has is
// answered at that version.
func TestShareHeartbeatVersions(t *testing.T) {
	h := newHarness(t, Config{})
	topics := catalog(map[string]TopicInfo{"foo": topicFoo})
	for v := int16(0); v <= (&kmsg.ShareGroupHeartbeatRequest{}).MaxVersion(); v++ {
		req := shJoin("g", "m"+strconv.Itoa(int(v)), "foo")
		req.Version = v
		if resp := h.shStep("c", req, topics); resp.ErrorCode != 0 || resp.GetVersion() != v {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
}
