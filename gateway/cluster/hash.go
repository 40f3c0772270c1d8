package cluster

// Owner is the owner of key among live by rendezvous (highest random
// weight) hashing: the peer whose weight for the key is highest. Every
// gateway with the same live set names the same owner, and removing a peer
// moves only the keys it owned. The zero Peer when live is empty.
func Owner(key string, live []Peer) Peer {
	var best Peer
	var bestW uint64
	h := keyHash(key)
	for i, p := range live {
		w := weight(p.ID, h)
		// Ties, vanishingly rare, go to the higher id so the answer
		// does not depend on the order of live.
		if i == 0 || w > bestW || (w == bestW && p.ID > best.ID) {
			best, bestW = p, w
		}
	}
	return best
}

// keyHash is 64-bit FNV-1a of key. It is spelled out, not taken from
// hash/fnv, so that nothing but this code decides ownership: every
// gateway, on every machine and Go version, must compute the same.
func keyHash(key string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime
	}
	return h
}

// weight is peer id's weight for a key of hash h: the id and the key hash
// are combined and put through a 64-bit finalizer so that every bit of
// both moves every bit of the weight.
func weight(id int32, h uint64) uint64 {
	return mix64(h ^ mix64(uint64(uint32(id))+0x9e3779b97f4a7c15))
}

// mix64 is the finalizer of MurmurHash3's 64-bit variant.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
