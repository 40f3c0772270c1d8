package gateway

import "testing"

// A warning is given once per notice, and the set stays bounded.
func TestRawNoticesOnce(t *testing.T) {
	var s rawNotices
	n := rawNotice{part: partitionKey{topic: "t", partition: 1}, producerID: 7}
	if !s.first(n) || s.first(n) {
		t.Fatal("the same notice is not first exactly once")
	}
	keys := n
	keys.key = true
	other := n
	other.part.partition = 2
	if !s.first(keys) || !s.first(other) {
		t.Fatal("keys, or another partition, counted as the same notice")
	}
	for i := range maxRawNotices + 10 {
		s.first(rawNotice{producerID: int64(i + 100)})
	}
	if len(s.seen) > maxRawNotices {
		t.Fatalf("the set holds %d notices, more than %d", len(s.seen), maxRawNotices)
	}
}
