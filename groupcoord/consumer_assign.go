package groupcoord

import (
	"slices"
	"strconv"
	"strings"
)

// assignorNames are the server-side assignors, the default first, as
// Kafka's group.consumer.assignors lists them.
var assignorNames = []string{"uniform", "range"}

// chooseAssignor picks the assignor the members ask for most, ties going
// to the order of assignorNames; with no preference, the default.
func (cg *consumerGroup) chooseAssignor() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := ""
	for _, name := range assignorNames {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// assignorName is the assignor the group uses.
func (cg *consumerGroup) assignorName() string {
	if cg.assignor == "" {
		return assignorNames[0]
	}
	return cg.assignor
}

// assign computes every member's target assignment over the subscribed
// topics with the group's assignor.
func (cg *consumerGroup) assign() map[string]assignment {
	out := make(map[string]assignment, len(cg.members))
	for _, m := range cg.members {
		out[m.id] = assignment{}
	}
	names := cg.topicNames()
	if cg.assignorName() == "range" {
		cg.assignRange(names, out)
	} else {
		cg.assignUniform(names, out)
	}
	return out
}

// topicNames lists the subscribed topics that exist, in order.
func (cg *consumerGroup) topicNames() []string {
	names := make([]string, 0, len(cg.topics))
	for n := range cg.topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// subscribers lists the members subscribed to topic, by member id.
func (cg *consumerGroup) subscribers(topic string) []*consumerMember {
	var out []*consumerMember
	for _, m := range cg.members {
		if m.subscribes(topic) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *consumerMember) int { return strings.Compare(a.id, b.id) })
	return out
}

// assignRange gives each subscriber of a topic a contiguous range of its
// partitions, the first ones (by member id) one more when they do not
// divide evenly, as Kafka's range assignor does.
func (cg *consumerGroup) assignRange(names []string, out map[string]assignment) {
	for _, name := range names {
		info := cg.topics[name]
		subs := cg.subscribers(name)
		if len(subs) == 0 {
			continue
		}
		per, extra := int(info.Partitions)/len(subs), int(info.Partitions)%len(subs)
		p := int32(0)
		for i, m := range subs {
			n := per
			if i < extra {
				n++
			}
			for range n {
				out[m.id].add(topicPartition{info.ID, p})
				p++
			}
		}
	}
}

// assignUniform spreads the partitions evenly over their subscribers and
// keeps each where the previous target had it when it can: a member keeps
// its partitions that it still subscribes to, the rest go to the
// subscriber with fewest, then partitions move from the member with most to
// a subscriber with at least two fewer until none can.
func (cg *consumerGroup) assignUniform(names []string, out map[string]assignment) {
	count := map[string]int{}
	owner := map[topicPartition]string{}
	var free []topicPartition
	subs := map[string][]*consumerMember{}
	for _, name := range names {
		info := cg.topics[name]
		subs[name] = cg.subscribers(name)
		for p := range info.Partitions {
			tp := topicPartition{info.ID, p}
			prev := ""
			for _, m := range subs[name] {
				if cg.target[m.id].has(tp) {
					prev = m.id
					break
				}
			}
			if prev == "" {
				if len(subs[name]) > 0 {
					free = append(free, tp)
				}
				continue
			}
			owner[tp] = prev
			count[prev]++
		}
	}
	topicOf := map[[16]byte]string{}
	for _, name := range names {
		topicOf[cg.topics[name].ID] = name
	}
	fewest := func(ms []*consumerMember) *consumerMember {
		var best *consumerMember
		for _, m := range ms {
			if best == nil || count[m.id] < count[best.id] {
				best = m
			}
		}
		return best
	}
	for _, tp := range free {
		m := fewest(subs[topicOf[tp.topic]])
		owner[tp] = m.id
		count[m.id]++
	}
	// Balance: at most one move per partition per pass, and each move
	// narrows the spread, so this ends.
	tps := make([]topicPartition, 0, len(owner))
	for tp := range owner {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b topicPartition) int {
		if c := compareIDs(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	for moved := true; moved; {
		moved = false
		for _, tp := range tps {
			to := fewest(subs[topicOf[tp.topic]])
			if from := owner[tp]; count[from] > count[to.id]+1 {
				owner[tp] = to.id
				count[from]--
				count[to.id]++
				moved = true
			}
		}
	}
	for tp, id := range owner {
		out[id].add(tp)
	}
}

// itoa formats an int32 for messages.
func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }
