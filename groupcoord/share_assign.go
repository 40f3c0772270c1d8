package groupcoord

import (
	"slices"
	"strings"
)

// The simple share assignor, as Kafka's (SimpleAssignor and its
// homogeneous and heterogeneous builders) behaves: every subscribed
// partition goes to desiredSharing = ceil(members/partitions) members, so
// each is covered and, with more members than partitions, shared; members
// get within one of each other's count; and what a member had in the
// previous target it keeps where balance allows. When every member
// subscribes to the same topics their partitions are balanced as one pool,
// else each topic is balanced over its own subscribers.

// assign computes every member's target assignment over the subscribed
// topics that exist.
func (sg *shareGroup) assign() map[string]assignment {
	out := make(map[string]assignment, len(sg.members))
	for _, m := range sg.members {
		out[m.id] = assignment{}
	}
	names := sg.topicNames()
	if sg.homogeneous(names) {
		var parts []topicPartition
		for _, n := range names {
			if sg.members[0].subscribes(n) {
				parts = append(parts, partitionsOf(sg.topics[n])...)
			}
		}
		members := slices.Clone(sg.members)
		slices.SortFunc(members, func(a, b *consumerMember) int { return strings.Compare(a.id, b.id) })
		sg.assignPool(parts, members, out)
		return out
	}
	for _, n := range names {
		sg.assignPool(partitionsOf(sg.topics[n]), sg.subscribers(n), out)
	}
	return out
}

// homogeneous reports whether the group has members and each subscribes to
// the same of the topics names.
func (sg *shareGroup) homogeneous(names []string) bool {
	if len(sg.members) == 0 {
		return false
	}
	for _, n := range names {
		first := sg.members[0].subscribes(n)
		for _, m := range sg.members[1:] {
			if m.subscribes(n) != first {
				return false
			}
		}
	}
	return true
}

// partitionsOf lists a topic's partitions in order.
func partitionsOf(info TopicInfo) []topicPartition {
	out := make([]topicPartition, info.Partitions)
	for p := range info.Partitions {
		out[p] = topicPartition{info.ID, p}
	}
	return out
}

// sharePool is one balancing of parts over members, by index into both.
type sharePool struct {
	sharing int
	desired []int          // per member, what it should end with
	held    []map[int]bool // per member, the partitions it has
	holders [][]int        // per partition, the members that have it
}

// assignPool balances parts over members, starting from the previous
// target, and adds the result to out.
func (sg *shareGroup) assignPool(parts []topicPartition, members []*consumerMember, out map[string]assignment) {
	if len(parts) == 0 || len(members) == 0 {
		return
	}
	p := newSharePool(parts, members, sg.target)
	p.trimOvershared()
	p.trimOverfilled()
	p.fill()
	for mi, held := range p.held {
		for pi := range held {
			out[members[mi].id].add(parts[pi])
		}
	}
}

// newSharePool starts from what each member had of parts in prev and
// decides how many each should end with: the sharing spread as evenly as
// possible, the members that already have more getting the odd ones, so a
// balanced target stays as it is.
func newSharePool(parts []topicPartition, members []*consumerMember, prev map[string]assignment) *sharePool {
	nm, np := len(members), len(parts)
	p := &sharePool{
		sharing: (nm + np - 1) / np,
		desired: make([]int, nm),
		held:    make([]map[int]bool, nm),
		holders: make([][]int, np),
	}
	index := make(map[topicPartition]int, np)
	for pi, tp := range parts {
		index[tp] = pi
	}
	for mi, m := range members {
		p.held[mi] = map[int]bool{}
		for _, tp := range prev[m.id].list() {
			if pi, ok := index[tp]; ok {
				p.add(mi, pi)
			}
		}
	}
	total := p.sharing * np
	order := make([]int, nm)
	for mi := range order {
		order[mi] = mi
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(p.held[b]) - len(p.held[a]) })
	for i, mi := range order {
		p.desired[mi] = total / nm
		if i < total%nm {
			p.desired[mi]++
		}
	}
	return p
}

// add gives partition pi to member mi.
func (p *sharePool) add(mi, pi int) {
	p.held[mi][pi] = true
	p.holders[pi] = append(p.holders[pi], mi)
}

// drop takes partition pi from member mi.
func (p *sharePool) drop(mi, pi int) {
	delete(p.held[mi], pi)
	p.holders[pi] = slices.DeleteFunc(p.holders[pi], func(o int) bool { return o == mi })
}

// deficit is how many more partitions member mi should have.
func (p *sharePool) deficit(mi int) int { return p.desired[mi] - len(p.held[mi]) }

// trimOvershared takes a partition shared by more members than desired
// from those furthest over their desired count.
func (p *sharePool) trimOvershared() {
	for pi := range p.holders {
		for len(p.holders[pi]) > p.sharing {
			worst := p.holders[pi][0]
			for _, mi := range p.holders[pi][1:] {
				if p.deficit(mi) < p.deficit(worst) {
					worst = mi
				}
			}
			p.drop(worst, pi)
		}
	}
}

// trimOverfilled takes from a member with more than desired the
// partitions most shared (the last of them first), so as few as possible
// are left uncovered.
func (p *sharePool) trimOverfilled() {
	for mi, held := range p.held {
		for len(held) > p.desired[mi] {
			best := -1
			for pi := range held {
				if best < 0 || len(p.holders[pi]) > len(p.holders[best]) ||
					len(p.holders[pi]) == len(p.holders[best]) && pi > best {
					best = pi
				}
			}
			p.drop(mi, best)
		}
	}
}

// fill brings every partition up to the desired sharing, the least shared
// first, each going to the member lacking most that does not have it. A
// partition every lacking member already has is given by a swap instead:
// a member without it hands one of its partitions to a lacking member and
// takes this one. Such a member and partition always exist: the lacking
// member has at most the base count, the other at least that and not this
// partition, so it has one the lacking member lacks. Every step adds one
// assignment, and when none is missing every member has its desired count.
func (p *sharePool) fill() {
	order := make([]int, len(p.holders))
	for pi := range order {
		order[pi] = pi
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(p.holders[a]) - len(p.holders[b]) })
	for _, pi := range order {
		for len(p.holders[pi]) < p.sharing {
			taker := -1
			for mi := range p.held {
				if p.deficit(mi) > 0 && !p.held[mi][pi] && (taker < 0 || p.deficit(mi) > p.deficit(taker)) {
					taker = mi
				}
			}
			if taker < 0 {
				break
			}
			p.add(taker, pi)
		}
	}
	for pi := range p.holders {
		for len(p.holders[pi]) < p.sharing && p.swapInto(pi) {
		}
	}
}

// swapInto gives partition pi one more member by a swap (see fill) and
// reports whether it found one.
func (p *sharePool) swapInto(pi int) bool {
	lacking := -1
	for mi := range p.held {
		if p.deficit(mi) > 0 && (lacking < 0 || p.deficit(mi) > p.deficit(lacking)) {
			lacking = mi
		}
	}
	if lacking < 0 {
		return false
	}
	for mi, held := range p.held {
		if held[pi] {
			continue
		}
		give := -1
		for q := range held {
			if !p.held[lacking][q] && (give < 0 || q < give) {
				give = q
			}
		}
		if give >= 0 {
			p.drop(mi, give)
			p.add(lacking, give)
			p.add(mi, pi)
			return true
		}
	}
	return false
}
