package cluster

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestOwnerPinned pins a few owners: a change of hash would move every
// partition of a running cluster whose gateways do not all upgrade at
// once, so it must be deliberate.
func TestOwnerPinned(t *testing.T) {
	live := peerList(0, 1, 2)
	for key, want := range map[string]int32{
		PartitionKey("orders", 0): 1,
		PartitionKey("orders", 1): 1,
		PartitionKey("orders", 2): 2,
		PartitionKey("clicks", 7): 2,
		GroupKey("billing"):       0,
		"":                        2,
	} {
		if got := Owner(key, live).ID; got != want {
			t.Errorf("Owner(%q) = %d, want %d", key, got, want)
		}
	}
	if w := weight(7, keyHash("g/billing")); w != 0xd835858d4e9f3209 {
		t.Errorf("weight(7, g/billing) = %#x", w)
	}
}

// keyHash must be FNV-1a exactly: it is spelled out only so that nothing
// outside this package decides ownership.
func TestKeyHashIsFNV1a(t *testing.T) {
	for _, key := range []string{"", "a", "p/0/orders", "g/some group"} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(key))
		if got, want := keyHash(key), h.Sum64(); got != want {
			t.Errorf("keyHash(%q) = %#x, FNV-1a %#x", key, got, want)
		}
	}
}

// TestOwnerSpread checks that 10 000 partitions spread evenly over three
// gateways: each owns a third, give or take 10 %.
func TestOwnerSpread(t *testing.T) {
	live := peerList(0, 1, 2)
	count := map[int32]int{}
	const keys = 10000
	for i := range keys {
		count[Owner(PartitionKey("topic", int32(i)), live).ID]++
	}
	for _, p := range live {
		if n := count[p.ID]; n < keys/3*9/10 || n > keys/3*11/10 {
			t.Errorf("peer %d owns %d of %d keys, want %d ± 10 %%: %v", p.ID, n, keys, keys/3, count)
		}
	}
	groups := map[int32]int{}
	for i := range keys {
		groups[Owner(GroupKey("group-"+strconv.Itoa(i)), live).ID]++
	}
	for _, p := range live {
		if n := groups[p.ID]; n < keys/3*9/10 || n > keys/3*11/10 {
			t.Errorf("peer %d coordinates %d of %d groups: %v", p.ID, n, keys, groups)
		}
	}
}

// TestOwnerRemovalMovesOnlyItsKeys checks the point of rendezvous hashing:
// when a peer leaves, only its keys move, and they spread over the rest.
func TestOwnerRemovalMovesOnlyItsKeys(t *testing.T) {
	all := peerList(0, 1, 2, 3)
	without := peerList(0, 1, 3)
	moved := map[int32]int{}
	for i := range 10000 {
		key := PartitionKey("t", int32(i))
		before, after := Owner(key, all), Owner(key, without)
		if before.ID != 2 && after != before {
			t.Fatalf("%s moved from %d to %d though %d is still live", key, before.ID, after.ID, before.ID)
		}
		if before.ID == 2 {
			moved[after.ID]++
		}
	}
	if len(moved) != 3 {
		t.Fatalf("peer 2's keys went to %v, want all three others", moved)
	}
}

// TestOwnerOrder checks that the owner does not depend on the order of the
// live list, and that nobody owns anything in an empty cluster.
func TestOwnerOrder(t *testing.T) {
	live := peerList(0, 1, 2, 3, 4)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		key := PartitionKey("t", int32(i))
		want := Owner(key, live)
		shuffled := slices.Clone(live)
		r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		if got := Owner(key, shuffled); got != want {
			t.Fatalf("%s: owner %d in %v, %d in %v", key, got.ID, ids(shuffled), want.ID, ids(live))
		}
	}
	if got := Owner("k", nil); got != (Peer{}) {
		t.Fatalf("owner in an empty cluster: %+v", got)
	}
}
