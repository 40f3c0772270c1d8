package wire

import "testing"

// A notice is given once, and the set stays bounded.
func TestNoticesOnce(t *testing.T) {
	type notice struct {
		partition  int32
		producerID int64
		key        bool
	}
	var s Notices
	n := notice{partition: 1, producerID: 7}
	if !s.First(n) || s.First(n) {
		t.Fatal("the same notice is not first exactly once")
	}
	keys := n
	keys.key = true
	other := n
	other.partition = 2
	if !s.First(keys) || !s.First(other) {
		t.Fatal("keys, or another partition, counted as the same notice")
	}
	for i := range maxNotices + 10 {
		s.First(notice{producerID: int64(i + 100)})
	}
	if len(s.seen) > maxNotices {
		t.Fatalf("the set holds %d notices, more than %d", len(s.seen), maxNotices)
	}
}
