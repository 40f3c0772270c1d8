package plog

import (
	"testing"
	"time"
)

// Idle partition states are dropped; one whose writer has a queue or a
// call in flight, whose reader reads ahead, or that was used recently stays.
func TestIdleWritersAndReadersEvicted(t *testing.T) {
	tn := testTenant(t, testSettings{}, nil)
	key := func(p int32) Key { return testKey("t", p) }
	idle, busy := tn.Partition(key(0)).writer, tn.Partition(key(1)).writer
	busy.running = true
	tn.Partition(key(2)).reader.reads.loading.Store(true)
	held := func(p int32) bool {
		_, ok := tn.Peek(key(p))
		return ok
	}

	tn.EvictIdle(time.Now().Add(-time.Minute))
	if len(tn.All()) != 3 {
		t.Fatal("eviction dropped partition state used just now")
	}
	tn.EvictIdle(time.Now().Add(time.Minute))
	if held(0) || !idle.evicted {
		t.Fatal("an idle partition was not evicted")
	}
	if !held(1) || busy.evicted {
		t.Fatal("a partition with a call in flight was evicted")
	}
	if !held(2) {
		t.Fatal("a partition reading ahead was evicted")
	}
	if tn.Partition(key(0)).writer == idle {
		t.Fatal("the evicted writer was handed out again")
	}
}

// A partition that moves away goes once idle; one that moved away while
// busy and came back before it was idle goes too, so that its stale next
// offset and producer state are recovered from DIS again.
func TestReleaseMoved(t *testing.T) {
	tn := testTenant(t, testSettings{}, nil)
	owned := true
	owns := func(string, int32) bool { return owned }
	key := testKey("t", 0)
	held := func() bool {
		_, ok := tn.Peek(key)
		return ok
	}

	ps := tn.Partition(key)
	if !tn.ReleaseMoved(owns) || !held() {
		t.Fatal("an owned partition's state was released")
	}

	ps.busy.Add(1) // a read in progress
	owned = false
	if tn.ReleaseMoved(owns) {
		t.Fatal("release reported done while a moved partition was busy")
	}
	owned = true // back before the read finished
	if tn.ReleaseMoved(owns) || !held() {
		t.Fatal("a busy partition was dropped, or reported done")
	}
	ps.busy.Add(-1)
	if !tn.ReleaseMoved(owns) {
		t.Fatal("release not done once the partition was idle")
	}
	if held() {
		t.Fatal("the state of a partition that moved away and back while busy was kept")
	}
	if fresh := tn.Partition(key); fresh == ps || fresh.moved.Load() {
		t.Fatal("the partition's next use got the stale state")
	}

	owned = false
	if !tn.ReleaseMoved(owns) || held() {
		t.Fatal("an idle partition that moved away was kept")
	}
}
