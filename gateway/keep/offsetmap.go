package keep

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
)

// slotBytes is one slot of an OffsetMap: 16 bytes of the key's SHA-256 and
// its offset plus one (0 marks an empty slot).
const slotBytes = 24

// maxLoad is the share of slots an OffsetMap fills before it counts as
// full, which keeps linear probing short.
const maxLoad = 0.9

// OffsetMap maps a key to the latest offset seen for it, in a fixed amount
// of memory, as Kafka's cleaner does: keys are known by 16 bytes of their
// SHA-256 (two keys sharing them would lose the older's record; at 2^-128
// per pair that is never), and when it is full a rewrite compacts what it
// mapped and leaves the rest for the next (docs/design.md §12).
type OffsetMap struct {
	slots []byte
	n     int // slots in use
	limit int // slots in use at which it is full
}

// NewOffsetMap makes a map in about size bytes (at least two slots, so
// that one is always empty and probing ends).
func NewOffsetMap(size int) *OffsetMap {
	nslots := max(size/slotBytes, 2)
	limit := min(max(int(float64(nslots)*maxLoad), 1), nslots-1)
	return &OffsetMap{slots: make([]byte, nslots*slotBytes), limit: limit}
}

// Len is the number of keys mapped.
func (m *OffsetMap) Len() int { return m.n }

// Full reports whether a new key would no longer fit.
func (m *OffsetMap) Full() bool { return m.n >= m.limit }

// Reset empties the map for the next rewrite, keeping its memory.
func (m *OffsetMap) Reset() {
	clear(m.slots)
	m.n = 0
}

// Put records offset as key's latest; it reports false, changing nothing,
// when key is new and the map is full.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	h := sha256.Sum256(key)
	i, found := m.find(h[:16])
	if !found {
		if m.Full() {
			return false
		}
		copy(m.slots[i:], h[:16])
		m.n++
	}
	binary.BigEndian.PutUint64(m.slots[i+16:], uint64(offset)+1)
	return true
}

// Get is the latest offset recorded for key.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	h := sha256.Sum256(key)
	i, found := m.find(h[:16])
	if !found {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(m.slots[i+16:])) - 1, true
}

// find is the byte index of hash's slot, or of the empty slot where it
// would go.
func (m *OffsetMap) find(hash []byte) (int, bool) {
	nslots := len(m.slots) / slotBytes
	s := int(binary.BigEndian.Uint64(hash) % uint64(nslots))
	for {
		i := s * slotBytes
		if binary.BigEndian.Uint64(m.slots[i+16:]) == 0 {
			return i, false
		}
		if bytes.Equal(m.slots[i:i+16], hash) {
			return i, true
		}
		s++
		if s == nslots {
			s = 0
		}
	}
}
