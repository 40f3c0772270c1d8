package plog

import (
	"testing"

	"github.com/disgw/disgw/protocol"
)

func recsAt(from, to int64) []protocol.Record {
	var out []protocol.Record
	for o := from; o < to; o++ {
		out = append(out, protocol.Record{Offset: o, Value: make([]byte, 100)})
	}
	return out
}

func testReader(t *testing.T, cacheBytes int) *partitionReader {
	t.Helper()
	return testTenant(t, testSettings{Config: Config{ReadCacheBytes: cacheBytes}}, nil).Partition(testKey("t", 0)).reader
}

func cacheRange(pr *partitionReader) [2]int64 {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if len(pr.cache) == 0 {
		return [2]int64{-1, -1}
	}
	return [2]int64{pr.cache[0].Offset, pr.cacheEnd()}
}

func TestReadCacheWindow(t *testing.T) {
	pr := testReader(t, 1<<20)
	steps := []struct {
		name   string
		add    func()
		window [2]int64
		hwm    int64
	}{
		{"writes start the cache", func() { pr.appended(recsAt(0, 10)) }, [2]int64{0, 10}, 10},
		{"writes extend it", func() { pr.appended(recsAt(10, 20)) }, [2]int64{0, 20}, 20},
		{"an overlapping read adds only what is new", func() { pr.mu.Lock(); pr.addLocked(recsAt(15, 25)); pr.mu.Unlock() }, [2]int64{0, 25}, 25},
		{"someone else's records leave a gap: start over", func() { pr.appended(recsAt(30, 35)) }, [2]int64{30, 35}, 35},
		{"a lagging reader's window replaces the tail", func() { pr.mu.Lock(); pr.addLocked(recsAt(5, 8)); pr.mu.Unlock() }, [2]int64{5, 8}, 35},
		{"writes do not evict a lagging reader's window", func() { pr.appended(recsAt(35, 40)) }, [2]int64{5, 8}, 40},
		{"a read before and into the window rebuilds it", func() { pr.mu.Lock(); pr.addLocked(recsAt(3, 6)); pr.mu.Unlock() }, [2]int64{3, 6}, 40},
	}
	for _, s := range steps {
		s.add()
		if got := cacheRange(pr); got != s.window || pr.knownHWM() != s.hwm {
			t.Fatalf("%s: window %v, high watermark %d; want %v, %d", s.name, got, pr.knownHWM(), s.window, s.hwm)
		}
	}
}

func TestReadCacheEvictsOldestPastItsSize(t *testing.T) {
	pr := testReader(t, 10*recordSize(&recsAt(0, 1)[0]))
	pr.appended(recsAt(0, 25))
	if got := cacheRange(pr); got != [2]int64{15, 25} {
		t.Fatalf("window %v, want the newest 10 records", got)
	}
	pr.mu.Lock()
	recs := pr.cachedLocked(20, 1)
	pr.mu.Unlock()
	if len(recs) != 1 || recs[0].Offset != 20 {
		t.Fatalf("a read smaller than one record got %d records", len(recs))
	}
}

// Records cached from a produce are copies: the request frame they were
// decoded from can be reused or freed, and nil stays apart from empty.
func TestAppendedRecordsDoNotAliasTheFrame(t *testing.T) {
	pr := testReader(t, 1<<20)
	frame := []byte("keyvaluehdr")
	recs := []protocol.Record{
		{Offset: 0, Key: frame[0:3], Value: frame[3:8], Headers: []protocol.Header{{Key: "h", Value: frame[8:11]}}},
		{Offset: 1, Key: nil, Value: frame[0:0]},
	}
	pr.appended(recs)
	for i := range frame {
		frame[i] = 'x'
	}
	pr.mu.Lock()
	got := pr.cachedLocked(0, 1<<20)
	pr.mu.Unlock()
	if len(got) != 2 || string(got[0].Key) != "key" || string(got[0].Value) != "value" || string(got[0].Headers[0].Value) != "hdr" {
		t.Fatalf("cached records changed with the frame: %+v", got)
	}
	if got[1].Key != nil || got[1].Value == nil || got[1].Headers != nil {
		t.Fatalf("nil and empty not kept apart: %+v", got[1])
	}
}
