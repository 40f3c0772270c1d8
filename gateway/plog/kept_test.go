package plog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/disclient/dislocal/dislocaltest"
	"github.com/disgw/disgw/gateway/keep"
	"github.com/disgw/disgw/protocol"
)

// testClock is a clock a test moves: the embedded DIS expires records by
// it, and rewrites decide by it.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// keptFixture is a kept topic "t" (DIS retention 24 h) with its keep
// stream "k" (72 h) on an embedded DIS whose clock the test moves.
type keptFixture struct {
	t      testing.TB
	ctx    context.Context
	clock  *testClock
	dis    disclient.API
	policy keep.Policy
	next   int64 // the offset the next produced record gets, for the model
	// latest is the model: each key's latest value, nil for a tombstone.
	latest map[string][]byte
}

func newKeptFixture(t testing.TB, p keep.Policy) *keptFixture {
	clock := &testClock{}
	clock.ms.Store(time.Now().UnixMilli())
	srv := dislocaltest.Start(t, dislocaltest.WithDIS(func(c *dislocal.Config) {
		c.Sync = dislocal.SyncNone
		c.Now = clock.Now
		c.RetentionCheckInterval = 5 * time.Millisecond
	}))
	f := &keptFixture{t: t, ctx: context.Background(), clock: clock, dis: srv.Client, policy: p, latest: map[string][]byte{}}
	for name, hours := range map[string]int32{"t": 24, "k": 72} {
		h := hours
		if err := srv.Client.CreateStream(f.ctx, &disclient.CreateStreamRequest{StreamName: name, PartitionCount: 1, DataDuration: &h}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// gateway is a new gateway's view of the partition over dis: a partition
// log recovered from DIS alone.
func (f *keptFixture) gateway(dis disclient.API) *Partition {
	tn := testTenant(f.t, testSettings{}, dis)
	tn.d.Kept = func(context.Context, string) (keep.Policy, string, bool, error) { return f.policy, "k", true, nil }
	return tn.Partition(testKey("t", 0))
}

// produce writes one batch of the records key=value (value "" for a
// tombstone) and records them in the model.
func (f *keptFixture) produce(ps *Partition, kv ...string) {
	f.t.Helper()
	now := f.clock.Now().UnixMilli()
	recs := make([]protocol.Record, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		r := protocol.Record{Offset: int64(i / 2), Timestamp: now, Key: []byte(kv[i])}
		if kv[i+1] != "" {
			r.Value = []byte(kv[i+1])
		}
		recs = append(recs, r)
		f.latest[kv[i]] = r.Value
	}
	f.append(ps, recs)
}

// append writes recs, their offsets counted from 0, as one batch.
func (f *keptFixture) append(ps *Partition, recs []protocol.Record) {
	f.t.Helper()
	now := f.clock.Now().UnixMilli()
	batch, err := protocol.AppendBatch(nil, recs, protocol.CodecNone, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	op := NewAppend(true)
	op.Entries = []disclient.PutRecordsEntry{{PartitionID: disclient.PartitionID(0), Data: batch, Timestamp: &now}}
	op.Bytes = len(batch)
	if _, code := ps.Enqueue(f.ctx, op); code != 0 {
		f.t.Fatalf("enqueue: code %d", code)
	}
	<-op.Done()
	if op.ErrCode != 0 {
		f.t.Fatalf("write: %d %s", op.ErrCode, op.ErrMsg)
	}
	f.next = op.BaseOffset + int64(len(recs))
}

// produceKeys writes a value for every key of [from, to), in batches of
// 100, the value naming round.
func (f *keptFixture) produceKeys(ps *Partition, from, to, round int) {
	for ; from < to; from += 100 {
		var kv []string
		for k := from; k < min(to, from+100); k++ {
			kv = append(kv, fmt.Sprint("k", k), fmt.Sprint("v", k, "-", round))
		}
		f.produce(ps, kv...)
	}
}

// rewrite runs a rewrite of ps now.
func (f *keptFixture) rewrite(ps *Partition) (KeepResult, error) {
	return ps.Keep(f.ctx, KeepRun{Now: f.clock.Now, DISRetention: 24 * time.Hour, Keys: keep.NewOffsetMap(1 << 20), Writer: "test"})
}

// mustRewrite runs a rewrite that must write a generation.
func (f *keptFixture) mustRewrite(ps *Partition) {
	f.t.Helper()
	res, err := f.rewrite(ps)
	if err != nil || !res.Written {
		f.t.Fatalf("rewrite: %+v, %v", res, err)
	}
}

// advance moves the clock on by d and waits until the embedded DIS has
// expired what is older than its retention.
func (f *keptFixture) advance(d time.Duration) {
	f.clock.ms.Add(d.Milliseconds())
	time.Sleep(40 * time.Millisecond)
}

// earliestSeq is the first sequence number DIS still holds of stream.
func (f *keptFixture) earliestSeq(stream string) int64 {
	earliest, _, _, err := describeRange(f.dis)(f.ctx, stream, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return earliest
}

// readAll reads ps from its log start to its end as a consumer fetches
// it, and checks that offsets only go up.
func (f *keptFixture) readAll(ps *Partition) []protocol.Record {
	f.t.Helper()
	earliestSeq, nextSeq, _, err := describeRange(f.dis)(f.ctx, "t", 0)
	if err != nil {
		f.t.Fatal(err)
	}
	start, err := ps.Earliest(f.ctx, earliestSeq)
	if err != nil {
		f.t.Fatal(err)
	}
	end, err := ps.Next(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []protocol.Record
	last := int64(-1)
	for off := start; off < end; {
		p := &FetchPart{Partition: ps, Kafka: true, Offset: off, Limit: 1 << 20, Earliest: earliestSeq, Next: nextSeq}
		p.readBatches(f.ctx)
		if p.ErrorCode == 0 && len(p.Batches) == 0 && ps.currentGen().cut() == end {
			// Compaction left a gap at the end of the generation, and
			// nothing follows it yet: a consumer waits there.
			break
		}
		if p.ErrorCode != 0 || len(p.Batches) == 0 {
			f.t.Fatalf("fetch at %d of [%d, %d): error %d, %d batches", off, start, end, p.ErrorCode, len(p.Batches))
		}
		for _, b := range p.Batches {
			decoded, err := protocol.DecodeStoredBatch(b.Data, protocol.NewDecompressBudget(1<<30))
			if err != nil {
				f.t.Fatal(err)
			}
			for _, r := range decoded.Records {
				if r.Offset < off {
					continue
				}
				if r.Offset <= last {
					f.t.Fatalf("offset %d after %d: a reader saw two generations", r.Offset, last)
				}
				last = r.Offset
				out = append(out, protocol.Record{Offset: r.Offset, Key: append([]byte(nil), r.Key...), Value: r.Value})
			}
			off = b.last + 1
		}
	}
	return out
}

// checkLatest checks that ps serves every key's latest value, and no
// tombstone older than tombstonesGone when that is set.
func (f *keptFixture) checkLatest(ps *Partition, tombstonesGone bool) {
	f.t.Helper()
	seen := map[string][]byte{}
	for _, r := range f.readAll(ps) {
		seen[string(r.Key)] = r.Value
	}
	for k, v := range f.latest {
		got, ok := seen[k]
		switch {
		case v == nil && tombstonesGone && ok:
			f.t.Fatalf("key %s: tombstone still there", k)
		case v == nil:
			if ok && got != nil {
				f.t.Fatalf("key %s: %q after its tombstone", k, got)
			}
		case !ok || string(got) != string(v):
			f.t.Fatalf("key %s: read %q (found %v), want %q", k, got, ok, v)
		}
	}
}

// A compacted partition keeps the latest value of 10 000 keys over ten DIS
// retention periods while DIS expires everything older, and a gateway that
// recovers the partition from DIS alone serves the same.
func TestKeptCompactedOutlivesDISRetention(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Compact: true, DeleteRetentionMs: 24 * 3600_000})
	ps := f.gateway(f.dis)
	f.produceKeys(ps, 0, 10_000, 0)
	f.mustRewrite(ps)
	for round := 1; round <= 20; round++ {
		f.advance(12 * time.Hour)
		// Some keys change each half period; the rest live on only in
		// the generations.
		f.produceKeys(ps, 300*round%9_000, 300*round%9_000+300, round)
		f.mustRewrite(ps)
		if res, err := f.rewrite(ps); err != nil || res.Written {
			t.Fatalf("a rewrite right after one: %+v, %v", res, err)
		}
	}
	f.advance(12 * time.Hour)
	if f.earliestSeq("t") == 0 || f.earliestSeq("k") == 0 {
		t.Fatalf("DIS expired nothing: earliest %d and %d", f.earliestSeq("t"), f.earliestSeq("k"))
	}
	f.checkLatest(ps, false)
	f.checkLatest(f.gateway(f.dis), false)
}

// A tombstone stays until delete.retention.ms after the rewrite that first
// compacted it, then goes with the key.
func TestKeptTombstonesExpire(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Compact: true, DeleteRetentionMs: 3600_000})
	ps := f.gateway(f.dis)
	f.produceKeys(ps, 0, 100, 0)
	f.produce(ps, "k1", "", "k2", "")
	f.mustRewrite(ps)
	f.checkLatest(ps, false)
	tombstones := 0
	for _, r := range f.readAll(ps) {
		if r.Value == nil {
			tombstones++
		}
	}
	if tombstones != 2 {
		t.Fatalf("%d tombstones after the first compaction, want 2", tombstones)
	}
	f.advance(12 * time.Hour)
	f.mustRewrite(ps)
	f.checkLatest(ps, true)
	f.checkLatest(f.gateway(f.dis), true)
}

// A delete-policy topic with retention.ms -1 keeps every record, however
// long DIS has expired them.
func TestKeptForeverKeepsEveryRecord(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Delete: true, RetentionMs: -1, RetentionBytes: -1})
	ps := f.gateway(f.dis)
	want := 0
	for round := range 8 {
		f.produceKeys(ps, 0, 300, round) // the same keys: nothing is compacted
		want += 300
		if res, err := f.rewrite(ps); err != nil || res.Records != int64(want) || res.Batches != int64(want/100) {
			t.Fatalf("rewrite after %d records: %+v, %v", want, res, err)
		}
		f.advance(12 * time.Hour)
	}
	f.advance(48 * time.Hour)
	if f.earliestSeq("t") == 0 {
		t.Fatal("DIS expired nothing")
	}
	for _, p := range []*Partition{ps, f.gateway(f.dis)} {
		got := f.readAll(p)
		if len(got) != want || got[0].Offset != 0 || got[len(got)-1].Offset != int64(want-1) {
			t.Fatalf("read %d records, want %d, every offset from 0", len(got), want)
		}
	}
}

// faultDIS fails its armed call number: before the call, or for
// PutRecords after DIS stored the records, as a gateway that stops just
// after its write does.
type faultDIS struct {
	disclient.API
	calls, failAt atomic.Int64
}

var errInjected = errors.New("injected failure")

func (d *faultDIS) hit() bool { return d.calls.Add(1) == d.failAt.Load() }

func (d *faultDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	fail := d.hit()
	resp, err := d.API.PutRecords(ctx, req)
	if fail {
		return nil, errInjected
	}
	return resp, err
}

func (d *faultDIS) GetCursor(ctx context.Context, req *disclient.GetCursorRequest) (*disclient.GetCursorResponse, error) {
	if d.hit() {
		return nil, errInjected
	}
	return d.API.GetCursor(ctx, req)
}

func (d *faultDIS) GetRecords(ctx context.Context, cursor string, n int) (*disclient.GetRecordsResponse, error) {
	if d.hit() {
		return nil, errInjected
	}
	return d.API.GetRecords(ctx, cursor, n)
}

func (d *faultDIS) DescribeStream(ctx context.Context, name, start string, limit int) (*disclient.DescribeStreamResponse, error) {
	if d.hit() {
		return nil, errInjected
	}
	return d.API.DescribeStream(ctx, name, start, limit)
}

func (d *faultDIS) GetCheckpoint(ctx context.Context, req *disclient.GetCheckpointRequest) (*disclient.GetCheckpointResponse, error) {
	if d.hit() {
		return nil, errInjected
	}
	return d.API.GetCheckpoint(ctx, req)
}

func (d *faultDIS) CommitCheckpoint(ctx context.Context, req *disclient.CommitCheckpointRequest) error {
	if d.hit() {
		return errInjected
	}
	return d.API.CommitCheckpoint(ctx, req)
}

// A rewrite that stops at any of its DIS calls loses nothing: a gateway
// recovering afterwards serves every key's latest value from one
// generation, and its own rewrite then succeeds.
func TestKeptRewriteCrashAtEveryStep(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Compact: true, DeleteRetentionMs: 24 * 3600_000})
	f.produceKeys(f.gateway(f.dis), 0, 2_000, 0)
	f.mustRewrite(f.gateway(f.dis))
	for k := int64(1); ; k++ {
		f.advance(12 * time.Hour)
		f.produceKeys(f.gateway(f.dis), 0, 300, int(k))
		fd := &faultDIS{API: f.dis}
		ps := f.gateway(fd)
		if err := ps.ensure(f.ctx); err != nil {
			t.Fatal(err)
		}
		fd.failAt.Store(k)
		fd.calls.Store(0)
		res, err := f.rewrite(ps)
		if fd.calls.Load() < k {
			if err != nil || !res.Written {
				t.Fatalf("a rewrite without a failure: %+v, %v", res, err)
			}
			t.Logf("failed each of %d DIS calls of a rewrite in turn", k-1)
			f.checkLatest(f.gateway(f.dis), false)
			return
		}
		// The hint checkpoint is the one step whose failure still
		// makes the generation current.
		if err == nil && !res.Written {
			t.Fatalf("step %d: the rewrite neither failed nor wrote", k)
		}
		f.checkLatest(ps, false)
		f.checkLatest(f.gateway(f.dis), false)
		if res.Written {
			continue
		}
		// Stopped after its commit landed, the rewrite made its
		// generation current all the same, and none is due; else the
		// next one writes.
		if _, err := f.rewrite(f.gateway(f.dis)); err != nil {
			t.Fatalf("step %d: the rewrite after: %v", k, err)
		}
		f.checkLatest(f.gateway(f.dis), false)
	}
}

// gateDIS holds each PutRecords until both rewriters have reached theirs,
// so that two gateways rewrite the same generation at once.
type gateDIS struct {
	disclient.API
	gate *sync.WaitGroup
	once sync.Once
}

func (d *gateDIS) PutRecords(ctx context.Context, req *disclient.PutRecordsRequest) (*disclient.PutRecordsResponse, error) {
	if req.StreamName == "k" {
		d.once.Do(func() {
			d.gate.Done()
			d.gate.Wait()
		})
	}
	return d.API.PutRecords(ctx, req)
}

// Two gateways rewriting one partition at once: at most one generation
// becomes current, and nothing is lost.
func TestKeptTwoRewritersAtOnce(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Compact: true, DeleteRetentionMs: 24 * 3600_000})
	f.produceKeys(f.gateway(f.dis), 0, 3_000, 0)
	f.mustRewrite(f.gateway(f.dis))
	for round := 1; round <= 3; round++ {
		f.advance(12 * time.Hour)
		f.produceKeys(f.gateway(f.dis), 0, 1_000, round)
		var gate sync.WaitGroup
		gate.Add(2)
		var results [2]KeepResult
		var errs [2]error
		var wg sync.WaitGroup
		for i := range 2 {
			ps := f.gateway(&gateDIS{API: f.dis, gate: &gate})
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = f.rewrite(ps)
			}()
		}
		wg.Wait()
		written := 0
		for i := range 2 {
			if results[i].Written {
				written++
			} else if !errors.Is(errs[i], ErrRewriteFenced) {
				t.Fatalf("round %d: rewriter %d: %+v, %v; want written or fenced", round, i, results[i], errs[i])
			}
		}
		t.Logf("round %d: written %d, errors %v", round, written, errs)
		if written > 1 {
			t.Fatalf("round %d: both rewriters made their generation current", round)
		}
		f.checkLatest(f.gateway(f.dis), false)
		if written == 0 {
			f.mustRewrite(f.gateway(f.dis))
		}
		f.checkLatest(f.gateway(f.dis), false)
	}
}

// halfExpiredDIS, once armed, says the cursor of every other GetRecords
// has expired, as DIS does to a cursor held longer than it lasts.
type halfExpiredDIS struct {
	disclient.API
	armed atomic.Bool
	calls atomic.Int64
}

func (d *halfExpiredDIS) GetRecords(ctx context.Context, cursor string, n int) (*disclient.GetRecordsResponse, error) {
	if d.armed.Load() && d.calls.Add(1)%2 == 1 {
		return nil, &disclient.Error{Code: disclient.CodeCursorExpired, Message: "Partition cursor has expired."}
	}
	return d.API.GetRecords(ctx, cursor, n)
}

// A rewrite's scans, and loading the generation, go on with a new cursor
// when DIS says theirs expired (a page that took longer than a cursor
// lasts), rather than failing the rewrite.
func TestKeptScanRenewsExpiredCursor(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Compact: true, DeleteRetentionMs: 24 * 3600_000})
	f.produceKeys(f.gateway(f.dis), 0, 1_000, 0)
	f.mustRewrite(f.gateway(f.dis))
	f.advance(12 * time.Hour)
	f.produceKeys(f.gateway(f.dis), 0, 300, 1)
	d := &halfExpiredDIS{API: f.dis}
	ps := f.gateway(d)
	if err := ps.ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	d.armed.Store(true)
	f.mustRewrite(ps)
	if d.calls.Load() < 2 {
		t.Fatalf("%d GetRecords calls", d.calls.Load())
	}
	f.checkLatest(f.gateway(f.dis), false)
}

// A rewrite reads the topic's stream no faster than its throttle lets it,
// so that the partition's consumers keep their share of DIS's read quota:
// with a throttle that gives out less than the partition holds and
// nothing after, it stops, makes no generation current, and leaves the
// next rewrite the whole partition.
func TestKeptRewriteReadsWithinItsThrottle(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Compact: true})
	ps := f.gateway(f.dis)
	f.produceKeys(ps, 0, 5_000, 0)
	throttled := f.gateway(f.dis)
	const budget = 64 << 10
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	res, err := throttled.Keep(ctx, KeepRun{Now: f.clock.Now, DISRetention: 24 * time.Hour, Keys: keep.NewOffsetMap(1 << 20),
		Writer: "test", Throttle: rate.NewLimiter(rate.Every(time.Hour), budget)})
	if err == nil || res.Written {
		t.Fatalf("a rewrite with a read budget smaller than the partition: %+v, %v", res, err)
	}
	f.mustRewrite(f.gateway(f.dis))
	f.checkLatest(f.gateway(f.dis), false)
}

// ListOffsets by timestamp and max timestamp find records that live on
// only in the generation, after DIS expired them from the topic's stream,
// and those after the cut in the stream.
func TestKeptByTimestampReadsTheGeneration(t *testing.T) {
	f := newKeptFixture(t, keep.Policy{Delete: true, RetentionMs: -1, RetentionBytes: -1})
	ps := f.gateway(f.dis)
	var starts []int64 // the clock at each round's records
	for round := range 6 {
		starts = append(starts, f.clock.Now().UnixMilli())
		f.produceKeys(ps, 0, 300, round)
		if round < 5 {
			f.mustRewrite(ps)
		}
		f.advance(12 * time.Hour)
	}
	if f.earliestSeq("t") == 0 {
		t.Fatal("DIS expired nothing")
	}
	for _, p := range []*Partition{ps, f.gateway(f.dis)} {
		for round, ts := range starts {
			off, got, err := p.ByTimestamp(f.ctx, ts)
			if err != nil || off != int64(300*round) || got != ts {
				t.Fatalf("by timestamp %d (round %d): offset %d at %d, %v; want %d", ts, round, off, got, err, 300*round)
			}
		}
		if off, _, err := p.ByTimestamp(f.ctx, starts[0]-1); err != nil || off != 0 {
			t.Fatalf("by a timestamp before every record: offset %d, %v; want 0", off, err)
		}
	}
	// The largest timestamp is the last round's: in the topic's stream,
	// then, once rewritten and expired there, in the generation alone.
	f.checkMaxTimestamp(ps, 1500, starts[5])
	f.mustRewrite(ps)
	f.advance(30 * time.Hour)
	if earliest, next, _, _ := describeRange(f.dis)(f.ctx, "t", 0); earliest != next {
		t.Fatalf("the topic's stream still holds [%d, %d)", earliest, next)
	}
	f.checkMaxTimestamp(ps, 1500, starts[5])
	f.checkMaxTimestamp(f.gateway(f.dis), 1500, starts[5])
}

// checkMaxTimestamp checks ListOffsets -3 on ps.
func (f *keptFixture) checkMaxTimestamp(ps *Partition, offset, timestamp int64) {
	f.t.Helper()
	earliestSeq, _, _, err := describeRange(f.dis)(f.ctx, "t", 0)
	if err != nil {
		f.t.Fatal(err)
	}
	off, ts, err := ps.MaxTimestamp(f.ctx, earliestSeq)
	if err != nil || off != offset || ts != timestamp {
		f.t.Fatalf("max timestamp: offset %d at %d, %v; want %d at %d", off, ts, err, offset, timestamp)
	}
}
