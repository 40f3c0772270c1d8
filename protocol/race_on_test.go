//go:build race

package protocol

// raceEnabled: the race detector drops sync.Pool entries at random, so
// tests that bound allocations through pooled decoders do not hold there.
const raceEnabled = true
