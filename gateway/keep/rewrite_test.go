package keep

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/disgw/disgw/protocol"
)

// history is a model partition of a compacted topic: every record produced,
// in batches, and what the current generation and the stream hold.
type history struct {
	t        *testing.T
	rng      *rand.Rand
	p        Policy
	now      int64
	next     int64
	produced []protocol.Record // every record, by offset
	gen      []protocol.Batch  // the current generation's batches
	stream   []protocol.Batch  // every batch produced (DIS keeps them in this model)
	commit   *Commit
	seq      int64 // the keep partition's next sequence number
	logStart int64
}

// produce writes a batch of 1–5 records with keys from nkeys, some of them
// tombstones, at the model's clock.
func (h *history) produce(nkeys int) {
	n := 1 + h.rng.IntN(5)
	recs := make([]protocol.Record, n)
	for i := range recs {
		r := protocol.Record{Offset: h.next, Timestamp: h.now, Key: fmt.Appendf(nil, "k%d", h.rng.IntN(nkeys))}
		if h.rng.IntN(8) > 0 {
			r.Value = fmt.Appendf(nil, "v%d", h.next)
		}
		recs[i] = r
		h.next++
	}
	raw, err := protocol.AppendBatch(nil, recs, protocol.CodecNone, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	bs, err := protocol.DecodeBatches(raw, protocol.NewDecompressBudget(1<<20))
	if err != nil {
		h.t.Fatal(err)
	}
	h.stream = append(h.stream, bs[0])
	h.produced = append(h.produced, recs...)
}

func info(b *protocol.Batch) protocol.BatchInfo {
	return protocol.BatchInfo{BaseOffset: b.BaseOffset, LastOffsetDelta: b.LastOffsetDelta, MaxTimestamp: b.MaxTimestamp, NumRecords: int32(len(b.Records))}
}

// rewrite runs one rewrite as the partition log will: map from MapFrom,
// then decide on the generation's batches and the stream's up to the cut.
func (h *history) rewrite(mapBytes int) {
	var prevSeq int64 = -1
	if h.commit != nil {
		prevSeq = h.seq - 1
	}
	var keys *OffsetMap
	if h.p.Compact {
		keys = NewOffsetMap(mapBytes)
	}
	w := NewRewrite(h.p, h.commit, prevSeq, h.logStart, h.next, h.now, keys)
	var old []protocol.Batch
	old = append(old, h.gen...)
	cutFrom := int64(0)
	if h.commit != nil {
		cutFrom = h.commit.Cut
	}
	for i := range h.stream {
		if b := h.stream[i]; b.BaseOffset >= cutFrom && b.BaseOffset < w.Cut() {
			old = append(old, b)
		}
	}
	var total int64
	for i := range old {
		total += int64(len(old[i].Records))
	}
	w.Sized(total)
	for i := range old {
		if old[i].BaseOffset+int64(old[i].LastOffsetDelta) < w.MapFrom() {
			continue
		}
		if !w.Map(&old[i]) {
			break
		}
	}
	var gen []protocol.Batch
	first := h.seq
	for i := range old {
		b := old[i]
		switch w.Decide(info(&b), len(b.Records)) {
		case Drop:
			continue
		case Filter:
			var kept []protocol.Record
			for _, r := range b.Records {
				if w.Keep(&r) {
					kept = append(kept, r)
				}
			}
			if len(kept) == 0 {
				continue
			}
			b.Records = kept
		}
		gen = append(gen, b)
		w.Wrote(len(b.Records), len(b.Records), 1)
		h.seq++
	}
	c := w.Commit(first, h.now, "test")
	if err := c.check(h.seq); err != nil {
		h.t.Fatalf("commit %+v: %v", c, err)
	}
	h.seq++
	h.gen, h.commit = gen, c
	h.check()
}

// visible is what a reader from the log start sees: the generation, then
// the stream from the cut.
func (h *history) visible() []protocol.Record {
	var out []protocol.Record
	start := h.logStart
	cut := int64(0)
	if h.commit != nil {
		start, cut = max(start, h.commit.LogStart), h.commit.Cut
		for _, b := range h.gen {
			out = append(out, b.Records...)
		}
	}
	for _, r := range h.produced {
		if r.Offset >= cut {
			out = append(out, r)
		}
	}
	var kept []protocol.Record
	for _, r := range out {
		if r.Offset >= start {
			kept = append(kept, r)
		}
	}
	return kept
}

// check asserts what a compacted topic promises after a rewrite.
func (h *history) check() {
	h.t.Helper()
	c := h.commit
	vis := h.visible()
	seen := map[string]int64{}
	for i, r := range vis {
		if i > 0 && r.Offset <= vis[i-1].Offset {
			h.t.Fatalf("offsets out of order: %d after %d", r.Offset, vis[i-1].Offset)
		}
		orig := h.produced[r.Offset]
		if string(orig.Key) != string(r.Key) || string(orig.Value) != string(r.Value) || (orig.Value == nil) != (r.Value == nil) {
			h.t.Fatalf("offset %d changed: %q=%q, produced %q=%q", r.Offset, r.Key, r.Value, orig.Key, orig.Value)
		}
		if !h.p.Compact {
			continue
		}
		if r.Offset < c.Clean {
			if prev, dup := seen[string(r.Key)]; dup {
				h.t.Fatalf("key %s twice below the clean offset %d: at %d and %d", r.Key, c.Clean, prev, r.Offset)
			}
			seen[string(r.Key)] = r.Offset
		}
		if r.Value == nil && r.Offset < c.Clean {
			at, ok := c.CompactedAt(r.Offset)
			if !ok || h.now-at > h.p.DeleteRetentionMs {
				h.t.Fatalf("tombstone at %d kept past delete.retention.ms (compacted at %d, now %d)", r.Offset, at, h.now)
			}
		}
	}
	start := max(h.logStart, c.LogStart)
	if !h.p.Compact {
		// Every record from the log start on is there.
		if want := h.next - start; int64(len(vis)) != want {
			h.t.Fatalf("%d records from the log start %d on, want %d", len(vis), start, want)
		}
		return
	}
	// Every key's latest record is there, unless it is a tombstone that
	// went, or it lies below the log start.
	latest := map[string]protocol.Record{}
	for _, r := range h.produced {
		latest[string(r.Key)] = r
	}
	present := map[int64]bool{}
	for _, r := range vis {
		present[r.Offset] = true
	}
	for k, r := range latest {
		if r.Offset < start || present[r.Offset] {
			continue
		}
		if r.Value == nil {
			if at, ok := c.CompactedAt(r.Offset); ok && h.now-at > h.p.DeleteRetentionMs {
				continue
			}
		}
		h.t.Fatalf("key %s: its latest record, offset %d, is gone (commit %+v)", k, r.Offset, c)
	}
}

// TestRewriteRandomHistories runs many random histories of a compacted
// topic: produce, rewrites with key maps from tiny to ample, DeleteRecords
// and time passing beyond delete.retention.ms; after each rewrite every
// key's latest record is readable, offsets are unchanged and in order, no
// key repeats in the compacted part, and tombstones go when they should.
func TestRewriteRandomHistories(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 37))
			h := &history{t: t, rng: rng, now: 1_000_000,
				p: Policy{Compact: true, DeleteRetentionMs: 5_000, MinCompactionLagMs: int64(rng.IntN(2)) * 2_000}}
			nkeys := 1 + rng.IntN(40)
			for step := 0; step < 200; step++ {
				switch x := rng.IntN(20); {
				case x < 12:
					h.produce(nkeys)
				case x < 16:
					h.now += int64(rng.IntN(3_000))
				case x < 19:
					h.rewrite([]int{48, 200, 1 << 16}[rng.IntN(3)])
				default:
					if h.next > 0 {
						h.logStart = max(h.logStart, int64(rng.IntN(int(h.next))))
					}
				}
			}
			// Enough time and an ample map compact everything.
			h.now += 100_000
			h.rewrite(1 << 20)
			h.rewrite(1 << 20)
			if c := h.commit; c.Clean != c.Cut {
				t.Fatalf("after ample rewrites the clean offset is %d, the cut %d", c.Clean, c.Cut)
			}
			if len(h.commit.Compacted) > 2 {
				t.Errorf("compacted spans did not merge: %+v", h.commit.Compacted)
			}
		})
	}
}

// TestRewriteRetention: a delete topic keeps what is within retention.ms
// and retention.bytes, as a prefix of whole batches, and moves the log
// start past what it drops.
func TestRewriteRetention(t *testing.T) {
	h := &history{t: t, rng: rand.New(rand.NewPCG(1, 2)), now: 0, p: Policy{Delete: true, RetentionMs: 10_000, RetentionBytes: -1}}
	for range 10 {
		h.produce(5)
		h.now += 2_000
	}
	h.rewrite(0)
	// Batches written at 0..18 s, now 20 s: those at 0–8 s are past 10 s.
	if got, want := h.commit.LogStart, h.stream[5].BaseOffset; got != want {
		t.Errorf("log start after retention.ms: %d, want %d (the first batch within retention)", got, want)
	}
	if got := len(h.gen); got != 5 {
		t.Errorf("generation has %d batches, want 5", got)
	}

	h.p = Policy{Delete: true, RetentionMs: -1, RetentionBytes: 6}
	h.rewrite(0)
	var n int64
	for _, b := range h.gen {
		n += int64(len(b.Records))
	}
	if n < 6 || n-int64(len(h.gen[0].Records)) >= 6 {
		t.Errorf("retention.bytes 6 kept %d in %d batches: dropping the first would still leave 6", n, len(h.gen))
	}
}

// TestDue: half a DIS retention after the last rewrite began, or once
// max.compaction.lag.ms passed with records not compacted; a partition
// never rewritten as soon as it has records.
func TestDue(t *testing.T) {
	day := int64(86_400_000)
	c := &Commit{StartedMs: 0, Clean: 10, Cut: 20}
	for _, tc := range []struct {
		c          *Commit
		p          Policy
		now        int64
		hasRecords bool
		want       bool
	}{
		{nil, Policy{Compact: true}, 0, false, false},
		{nil, Policy{Compact: true}, 0, true, true},
		{c, Policy{Compact: true}, 36*day/24 - 1, true, false},
		{c, Policy{Compact: true}, 36 * day / 24, true, true},
		{c, Policy{Compact: true, MaxCompactionLagMs: 1000}, 1000, true, true},
		{&Commit{Clean: 20, Cut: 20}, Policy{Compact: true, MaxCompactionLagMs: 1000}, 1000, true, false},
		{c, Policy{Delete: true, MaxCompactionLagMs: 1000}, 1000, true, false},
	} {
		if got := Due(tc.c, tc.p, tc.now, 3*day, tc.hasRecords); got != tc.want {
			t.Errorf("Due(%+v, %+v, now %d): %v, want %v", tc.c, tc.p, tc.now, got, tc.want)
		}
	}
}
