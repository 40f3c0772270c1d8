package test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/test/faultproxy"
)

// The transaction checker, in the spirit of Jepsen: transactional
// producers write random histories while read_committed consumers read
// them and a nemesis restarts the gateway and makes DIS fail; a delayed
// Produce and EndTxn are replayed into a later transaction; then every
// read is checked against what each producer was told. The run is random
// but its choices come from a seed that is logged, so a failure can be
// replayed with DISGW_TXN_SEED (the interleaving with the nemesis differs
// from run to run; the choices do not).

// txnCheckDefault is how long the history runs by default: with the final
// reads and checks the test takes under a minute.
const txnCheckDefault = 20 * time.Second

// chkTopics are the topics the producers write and their partition
// counts: five partitions, so that a transaction of two or three of them
// spans topics as often as not.
var chkTopics = map[string]int32{"chk-a": 2, "chk-b": 2, "chk-c": 1}

// chkPart is one topic partition.
type chkPart struct {
	topic string
	part  int32
}

func (p chkPart) String() string { return fmt.Sprintf("%s[%d]", p.topic, p.part) }

// chkParts lists every partition of chkTopics in a fixed order, so that a
// seed picks the same partitions on every run.
func chkParts() []chkPart {
	var out []chkPart
	for _, topic := range slices.Sorted(func(yield func(string) bool) {
		for t := range chkTopics {
			if !yield(t) {
				return
			}
		}
	}) {
		for p := range chkTopics[topic] {
			out = append(out, chkPart{topic, p})
		}
	}
	return out
}

// chkOutcome is what a producer was told about its transaction.
type chkOutcome int

const (
	// chkCommitted: EndTxn with commit succeeded; every value must be read.
	chkCommitted chkOutcome = iota
	// chkAborted: the producer never asked to commit (it aborted, or
	// another producer of its id or the coordinator's timeout did); no
	// value may be read committed, whatever the abort answered.
	chkAborted
	// chkUnknown: the commit failed, timed out or was fenced; the
	// transaction may have committed or not, but all or nothing of it.
	chkUnknown
)

func (o chkOutcome) String() string {
	return [...]string{"committed", "aborted", "unknown"}[o]
}

// chkTxn is one transaction of the history.
type chkTxn struct {
	name    string
	outcome chkOutcome
	// values maps every value the producer tried to write to the
	// partition it wrote it to.
	values map[string]chkPart
	// offsets is whether it committed a group offset (TxnOffsetCommit).
	offsets bool
	err     error
}

// chkRecord is one record a consumer read.
type chkRecord struct {
	at     chkPart
	offset int64
	value  string
}

// chkReading is everything one consumer read.
type chkReading struct {
	name      string
	committed bool
	records   []chkRecord
}

// chkRun is one run's history: the transactions, the nemesis' doings and
// what the last stable offset poller saw.
type chkRun struct {
	t    *testing.T
	seed int64
	// addrs are the gateways' addresses as they were at the start:
	// Cluster.Addr is rewritten by every restart, and the nemesis
	// restarts the gateway while producers make clients.
	addrs []string
	// members are the gateways' memberships, with several.
	members []*Membership
	parts   []chkPart

	mu         sync.Mutex
	txns       map[string]*chkTxn
	events     map[string]int
	violations []string
	lso, hwm   map[chkPart]int64
}

func (r *chkRun) addTxn(tx *chkTxn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.txns[tx.name] = tx
}

func (r *chkRun) event(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[what]++
}

func (r *chkRun) violation(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// client makes a franz-go client bootstrapped at every gateway.
func (r *chkRun) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(r.addrs...),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })}, opts...)...)
}

// txnCheckSeed is DISGW_TXN_SEED or, without it, a new seed.
func txnCheckSeed(t *testing.T) int64 {
	if s := os.Getenv("DISGW_TXN_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("DISGW_TXN_SEED: %v", err)
		}
		return seed
	}
	return time.Now().UnixNano()
}

// txnCheckDuration is DISGW_TXN_CHECK_DURATION (a Go duration) or the
// default.
func txnCheckDuration(t *testing.T) time.Duration {
	if s := os.Getenv("DISGW_TXN_CHECK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("DISGW_TXN_CHECK_DURATION: %v", err)
		}
		return d
	}
	return txnCheckDefault
}

// Transactional producers commit and abort random transactions over five
// partitions of three topics, some with a group's offsets, while
// read_committed consumers read from the start, the last stable offset is
// polled, and a nemesis restarts the gateway and makes DIS's PutRecords
// and GetRecords fail, hang, throttle and lose answers; afterwards a
// delayed Produce and EndTxn of an earlier transaction are replayed into a
// later one. Every read, concurrent and final, read_committed and
// read_uncommitted, is checked against what the producers were told: no
// aborted read, no lost committed write, no torn transaction (committed,
// aborted or of unknown outcome), no duplicate, offsets in order and each
// offset one value for every reader; the last stable offset never goes
// back and ends at the high watermark; each group's offset is that of its
// last committed transaction. DISGW_TXN_SEED replays a seed's choices,
// DISGW_TXN_CHECK_DURATION runs longer.
func TestTransactionsChecker(t *testing.T) {
	t.Parallel()
	c, proxy := startFaultyCluster(t)
	checkTransactions(t, c, proxy)
}

// The checker over three gateways: every transaction's coordinator,
// partitions and group coordinator are spread over them, so markers,
// verifications and offset commits cross gateways, and the nemesis also
// takes a gateway out of the live set for a while and puts it back, which
// moves a third of the coordinators and partitions away and back.
func TestTransactionsCheckerAcrossGateways(t *testing.T) {
	t.Parallel()
	proxy := faultproxy.New()
	log := zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger().Level(zerolog.ErrorLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, DISHandler: proxy.Wrap, Gateways: 3})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		proxy.Close()
		_ = c.Close()
	})
	checkTransactions(t, c, proxy)
}

// checkTransactions runs the checker's history against c.
func checkTransactions(t *testing.T, c *Cluster, proxy *faultproxy.Proxy) {
	seed, duration := txnCheckSeed(t), txnCheckDuration(t)
	t.Logf("seed %d (DISGW_TXN_SEED=%d), history of %v", seed, seed, duration)
	for topic, n := range chkTopics {
		createTopic(t, c, topic, n, nil)
	}
	r := &chkRun{t: t, seed: seed, addrs: slices.Clone(c.Addrs), members: c.Members, parts: chkParts(), txns: map[string]*chkTxn{}, events: map[string]int{},
		lso: map[chkPart]int64{}, hwm: map[chkPart]int64{}}

	readCtx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	var readers sync.WaitGroup
	concurrent := make([]*chkReading, 2)
	for i := range concurrent {
		concurrent[i] = &chkReading{name: fmt.Sprintf("concurrent read_committed consumer %d", i), committed: true}
		readers.Add(1)
		go func() {
			defer readers.Done()
			r.consume(readCtx, concurrent[i], nil)
		}()
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		r.pollStable(readCtx)
	}()

	histCtx, stopHistory := context.WithTimeout(context.Background(), duration)
	defer stopHistory()
	var writers sync.WaitGroup
	for i := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			r.produce(histCtx, i)
		}()
	}
	nemesisDone := make(chan struct{})
	go func() {
		defer close(nemesisDone)
		r.nemesis(histCtx, c, proxy)
	}()
	<-nemesisDone
	proxy.Clear()
	writers.Wait()

	r.replay(t)

	endCtx := testContext(t, 2*time.Minute)
	r.awaitStable(endCtx)
	final := &chkReading{name: "final read_committed read", committed: true}
	r.readAll(endCtx, final)
	uncommitted := &chkReading{name: "final read_uncommitted read"}
	r.readAll(endCtx, uncommitted)
	// The concurrent consumers read on until they read what the final
	// read did (or the context ends: the check reports what they lack).
	for _, cr := range concurrent {
		for endCtx.Err() == nil {
			r.mu.Lock()
			n := len(cr.records)
			r.mu.Unlock()
			if n >= len(final.records) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(time.Second)
	stopReading()
	readers.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	counts := map[chkOutcome]int{}
	for _, tx := range r.txns {
		counts[tx.outcome]++
	}
	t.Logf("%d transactions: %d committed, %d aborted, %d unknown; nemesis %v; %d DIS requests faulted",
		len(r.txns), counts[chkCommitted], counts[chkAborted], counts[chkUnknown], r.events, proxy.Faulted())
	if counts[chkCommitted] == 0 || counts[chkAborted] == 0 {
		t.Errorf("the history needs both committed and aborted transactions to check anything")
	}
	for _, v := range r.violations {
		t.Error(v)
	}
	readings := append(slices.Clone(concurrent), final, uncommitted)
	for _, v := range checkTxnReads(r.txns, readings) {
		t.Error(v)
	}
	r.checkGroupOffsets(endCtx)
	if t.Failed() {
		t.Logf("seed %d failed: rerun with DISGW_TXN_SEED=%d", seed, seed)
	}
}

// produce runs producer i's transactions until ctx ends: each writes one to
// three values to each of two or three partitions, sometimes commits a
// group offset too, and commits or aborts. A producer whose transaction
// failed in any way is replaced by a new client of the same transactional
// id, whose InitProducerId fences the old one and aborts what it left
// open: the simplest recovery that is always right.
func (r *chkRun) produce(ctx context.Context, i int) {
	rng := rand.New(rand.NewPCG(uint64(r.seed), uint64(i)))
	id := fmt.Sprintf("p%d", i)
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for j := 0; ctx.Err() == nil; j++ {
		if cl == nil {
			var err error
			cl, err = r.client(kgo.TransactionalID("chk-"+id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.TransactionTimeout(10*time.Second), kgo.RecordDeliveryTimeout(8*time.Second), kgo.RetryTimeout(8*time.Second))
			if err != nil {
				r.violation("producer %s: new client: %v", id, err)
				return
			}
		}
		tx := r.txn(cl, rng, id, j)
		r.addTxn(tx)
		if tx.err != nil {
			cl.Close()
			cl = nil
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	}
}

// txn runs transaction j of producer id and records what it was told.
func (r *chkRun) txn(cl *kgo.Client, rng *rand.Rand, id string, j int) *chkTxn {
	tx := &chkTxn{name: fmt.Sprintf("%s-t%d", id, j), values: map[string]chkPart{}}
	// Not the history's context: a transaction begun is ended.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		tx.outcome, tx.err = chkAborted, err
		return tx
	}
	var recs []*kgo.Record
	for _, p := range rng.Perm(len(r.parts))[:2+rng.IntN(2)] {
		at := r.parts[p]
		for range 1 + rng.IntN(3) {
			v := fmt.Sprintf("%s-r%d", tx.name, len(tx.values))
			tx.values[v] = at
			recs = append(recs, &kgo.Record{Topic: at.topic, Partition: at.part, Value: []byte(v)})
		}
	}
	err := cl.ProduceSync(ctx, recs...).FirstErr()
	if err == nil && rng.IntN(4) == 0 {
		tx.offsets = true
		err = txnCommitOffset(ctx, cl, id, j, tx.name)
	}
	commit := err == nil && rng.IntN(10) < 7
	if endErr := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); endErr != nil {
		err = errors.Join(err, endErr)
	}
	switch {
	case !commit:
		tx.outcome = chkAborted
	case err == nil:
		tx.outcome = chkCommitted
	default:
		tx.outcome = chkUnknown
	}
	tx.err = err
	return tx
}

// txnCommitOffset adds producer id's group to its transaction and commits
// offset j+1 of chk-a[0] with the transaction's name as metadata, as a
// consume-transform-produce application would (franz-go's
// GroupTransactSession does so only for a group member).
func txnCommitOffset(ctx context.Context, cl *kgo.Client, id string, j int, name string) error {
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "chk-"+id, pid, epoch, "chk-g-"+id
	addResp, err := add.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(addResp.ErrorCode); err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = "chk-"+id, "chk-g-"+id, pid, epoch
	commit.Generation = -1
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "chk-a"
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset, tp.Metadata = 0, int64(j+1), kmsg.StringPtr(name)
	tt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{tp}
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{tt}
	resp, err := commit.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("TxnOffsetCommit: %w", err)
			}
		}
	}
	return nil
}

// chkFaults are the nemesis' DIS faults: each for a second or two, on
// writes (which the producers' data, markers and the coordinator's state
// records all are) or on reads (consumers, recoveries after a restart).
var chkFaults = []struct {
	name string
	rule faultproxy.Rule
}{
	{"PutRecords 5xx", faultproxy.Rule{Match: faultproxy.PutRecords, Fault: faultproxy.Fault{Status: http.StatusInternalServerError, Code: disclient.CodeSystemError}}},
	{"PutRecords throttled", faultproxy.Rule{Match: faultproxy.PutRecords, Fault: faultproxy.Fault{Status: http.StatusBadRequest, Code: disclient.CodeTrafficControl}}},
	{"PutRecords slow", faultproxy.Rule{Match: faultproxy.PutRecords, Fault: faultproxy.Fault{Latency: 1500 * time.Millisecond}}},
	{"PutRecords answer lost", faultproxy.Rule{Match: faultproxy.PutRecords, Fault: faultproxy.Fault{CutBody: true}}},
	{"PutRecords dropped", faultproxy.Rule{Match: faultproxy.PutRecords, Fault: faultproxy.Fault{Drop: true}}},
	{"GetRecords 5xx", faultproxy.Rule{Match: faultproxy.Op(http.MethodGet, "records"), Fault: faultproxy.Fault{Status: http.StatusServiceUnavailable, Code: disclient.CodeServiceUnavailable}}},
	{"GetRecords slow", faultproxy.Rule{Match: faultproxy.Op(http.MethodGet, "records"), Fault: faultproxy.Fault{Latency: time.Second}}},
}

// nemesis, until ctx ends, now and then restarts the gateway (on the same
// DIS data, as a crash and restart would leave it) or injects a DIS fault
// for a while.
func (r *chkRun) nemesis(ctx context.Context, c *Cluster, proxy *faultproxy.Proxy) {
	rng := rand.New(rand.NewPCG(uint64(r.seed), 1000))
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for sleep(time.Second + time.Duration(rng.IntN(2000))*time.Millisecond) {
		if len(r.members) > 1 && rng.IntN(2) == 0 {
			r.takeAway(rng, sleep)
			continue
		}
		if rng.IntN(3) == 0 {
			if err := c.RestartGateway(); err != nil {
				r.violation("restart the gateway: %v", err)
				return
			}
			r.event("restart")
			r.t.Logf("%v: gateway restarted", time.Now().Format("15:04:05.000"))
			continue
		}
		f := chkFaults[rng.IntN(len(chkFaults))]
		proxy.Set(f.rule)
		r.event(f.name)
		sleep(500*time.Millisecond + time.Duration(rng.IntN(1500))*time.Millisecond)
		proxy.Clear()
	}
}

// takeAway takes one gateway out of every gateway's live set, itself
// included, for one to three seconds, and puts it back: its partitions,
// groups and transaction coordinators move to the others and back.
func (r *chkRun) takeAway(rng *rand.Rand, sleep func(time.Duration) bool) {
	away := int32(rng.IntN(len(r.members)))
	var live, all []int32
	for i := range int32(len(r.members)) {
		all = append(all, i)
		if i != away {
			live = append(live, i)
		}
	}
	for _, m := range r.members {
		m.SetLive(live...)
	}
	r.event("gateway taken away")
	r.t.Logf("%v: gateway %d taken away", time.Now().Format("15:04:05.000"), away)
	sleep(time.Second + time.Duration(rng.IntN(2000))*time.Millisecond)
	for _, m := range r.members {
		m.SetLive(all...)
	}
}

// consume reads every partition from the start into into until ctx ends,
// or, with quiet set, until nothing came for that long.
func (r *chkRun) consume(ctx context.Context, into *chkReading, quiet *time.Duration) {
	iso := kgo.ReadUncommitted()
	if into.committed {
		iso = kgo.ReadCommitted()
	}
	offsets := map[string]map[int32]kgo.Offset{}
	for _, p := range r.parts {
		if offsets[p.topic] == nil {
			offsets[p.topic] = map[int32]kgo.Offset{}
		}
		offsets[p.topic][p.part] = kgo.NewOffset().AtStart()
	}
	cl, err := r.client(kgo.ConsumePartitions(offsets), kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		r.violation("%s: new client: %v", into.name, err)
		return
	}
	defer cl.Close()
	last := time.Now()
	for ctx.Err() == nil && (quiet == nil || time.Since(last) < *quiet) {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		r.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			into.records = append(into.records, chkRecord{chkPart{rec.Topic, rec.Partition}, rec.Offset, string(rec.Value)})
			last = time.Now()
		})
		r.mu.Unlock()
	}
}

// readAll reads every partition from the start to its end: until nothing
// came for two seconds, once the last stable offset is at the high
// watermark everywhere and DIS is well.
func (r *chkRun) readAll(ctx context.Context, into *chkReading) {
	quiet := 2 * time.Second
	r.consume(ctx, into, &quiet)
	if ctx.Err() != nil {
		r.violation("%s: %v", into.name, ctx.Err())
	}
}

// offsetsNow lists every partition's last stable offset and then its high
// watermark, so that the one is never of a later moment than the other.
func (r *chkRun) offsetsNow(ctx context.Context, adm *kadm.Client) (lso, hwm map[chkPart]int64, err error) {
	topics := slices.Collect(func(yield func(string) bool) {
		for t := range chkTopics {
			if !yield(t) {
				return
			}
		}
	})
	stable, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	lso, hwm = map[chkPart]int64{}, map[chkPart]int64{}
	for _, p := range r.parts {
		s, _ := stable.Lookup(p.topic, p.part)
		e, _ := ends.Lookup(p.topic, p.part)
		if s.Err != nil || e.Err != nil {
			return nil, nil, errors.Join(s.Err, e.Err)
		}
		lso[p], hwm[p] = s.Offset, e.Offset
	}
	return lso, hwm, nil
}

// observe checks offsets just listed against the ones before: neither the
// last stable offset nor the high watermark goes back, and the one is
// never past the other.
func (r *chkRun) observe(lso, hwm map[chkPart]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.parts {
		if prev, ok := r.lso[p]; ok && lso[p] < prev {
			r.violations = append(r.violations, fmt.Sprintf("%v: the last stable offset went back from %d to %d", p, prev, lso[p]))
		}
		if prev, ok := r.hwm[p]; ok && hwm[p] < prev {
			r.violations = append(r.violations, fmt.Sprintf("%v: the high watermark went back from %d to %d", p, prev, hwm[p]))
		}
		if lso[p] > hwm[p] {
			r.violations = append(r.violations, fmt.Sprintf("%v: last stable offset %d past the high watermark %d listed after it", p, lso[p], hwm[p]))
		}
		r.lso[p], r.hwm[p] = max(r.lso[p], lso[p]), max(r.hwm[p], hwm[p])
	}
}

// pollStable lists the offsets every 100 ms until ctx ends; failures (the
// gateway restarting, DIS failing) are skipped.
func (r *chkRun) pollStable(ctx context.Context) {
	cl, err := r.client()
	if err != nil {
		r.violation("offset poller: new client: %v", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		lso, hwm, err := r.offsetsNow(lctx, adm)
		cancel()
		if err == nil {
			r.observe(lso, hwm)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitStable waits until, every transaction having ended, the last stable
// offset is the high watermark everywhere: what was left open (by a
// producer that gave up) is aborted at its timeout.
func (r *chkRun) awaitStable(ctx context.Context) {
	cl, err := r.client()
	if err != nil {
		r.violation("new client: %v", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		lso, hwm, err := r.offsetsNow(ctx, adm)
		if err == nil {
			r.observe(lso, hwm)
			if maps.Equal(lso, hwm) {
				return
			}
		}
		if ctx.Err() != nil {
			r.violation("the last stable offset never reached the high watermark: last stable %v, high watermark %v, %v", lso, hwm, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkTxnReads checks every reading against the transactions: each
// reading read every partition to its end, read_committed ones to a last
// stable offset at the high watermark. It returns the violations.
func checkTxnReads(txns map[string]*chkTxn, readings []*chkReading) []string {
	var out []string
	owner := map[string]*chkTxn{}
	for _, tx := range txns {
		for v := range tx.values {
			owner[v] = tx
		}
	}
	atOffset := map[chkPart]map[int64]string{}
	for _, rd := range readings {
		var bad []string
		last := map[chkPart]int64{}
		seen := map[string]int64{} // value → offset
		read := map[*chkTxn]int{}
		abortedRead := map[*chkTxn]bool{}
		for _, rec := range rd.records {
			if prev, ok := last[rec.at]; ok && rec.offset <= prev {
				bad = append(bad, fmt.Sprintf("%v: read offset %d after %d", rec.at, rec.offset, prev))
			}
			last[rec.at] = rec.offset
			if atOffset[rec.at] == nil {
				atOffset[rec.at] = map[int64]string{}
			}
			if v, ok := atOffset[rec.at][rec.offset]; ok && v != rec.value {
				bad = append(bad, fmt.Sprintf("%v: offset %d is %q here and %q for another reader", rec.at, rec.offset, rec.value, v))
			}
			atOffset[rec.at][rec.offset] = rec.value
			tx := owner[rec.value]
			switch {
			case tx == nil:
				bad = append(bad, fmt.Sprintf("%v: offset %d is %q, which no producer wrote", rec.at, rec.offset, rec.value))
				continue
			case tx.values[rec.value] != rec.at:
				bad = append(bad, fmt.Sprintf("%v: offset %d is %q, which %s wrote to %v", rec.at, rec.offset, rec.value, tx.name, tx.values[rec.value]))
			}
			if first, ok := seen[rec.value]; ok {
				bad = append(bad, fmt.Sprintf("%v: duplicate: %q at offset %d and again at %d", rec.at, rec.value, first, rec.offset))
				continue
			}
			seen[rec.value] = rec.offset
			read[tx]++
			if rd.committed && tx.outcome == chkAborted && !abortedRead[tx] {
				abortedRead[tx] = true
				bad = append(bad, fmt.Sprintf("aborted read: %q at %v offset %d, of %s, aborted (%v)", rec.value, rec.at, rec.offset, tx.name, tx.err))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(txns)) {
			tx := txns[name]
			n, all := read[tx], len(tx.values)
			switch {
			case tx.outcome == chkAborted:
			case !rd.committed && n < all:
				bad = append(bad, fmt.Sprintf("lost acknowledged write: %d of the %d values of %s (%v) read uncommitted", n, all, tx.name, tx.outcome))
			case rd.committed && tx.outcome == chkCommitted && n == 0:
				bad = append(bad, fmt.Sprintf("lost committed write: none of the %d values of %s read", all, tx.name))
			case rd.committed && n > 0 && n < all:
				bad = append(bad, fmt.Sprintf("torn transaction: %d of the %d values of %s (%v, %v) read: %v", n, all, tx.name, tx.outcome, tx.err, txnValuesRead(tx, seen)))
			}
		}
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("and %d more", len(bad)-20))
		}
		for _, b := range bad {
			out = append(out, fmt.Sprintf("%s (%d records): %s", rd.name, len(rd.records), b))
		}
	}
	return out
}

// txnValuesRead says which of tx's values were read, for a torn
// transaction's report.
func txnValuesRead(tx *chkTxn, seen map[string]int64) string {
	var b strings.Builder
	for _, v := range slices.Sorted(maps.Keys(tx.values)) {
		if off, ok := seen[v]; ok {
			fmt.Fprintf(&b, "%s@%v:%d ", v, tx.values[v], off)
		} else {
			fmt.Fprintf(&b, "%s@%v:unread ", v, tx.values[v])
		}
	}
	return strings.TrimSpace(b.String())
}

// checkGroupOffsets checks each producer's group offset once stable: that
// of its last transaction with offsets that committed, or of a later one
// of unknown outcome, never of an aborted one, and none without any.
func (r *chkRun) checkGroupOffsets(ctx context.Context) {
	t := r.t
	cl, err := r.client()
	if err != nil {
		t.Errorf("new client: %v", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for i := range 4 {
		id := fmt.Sprintf("p%d", i)
		var got kadm.OffsetResponse
		for {
			offs, err := adm.FetchOffsets(kadm.RequireStable(ctx), "chk-g-"+id)
			if err == nil {
				got, _ = offs.Lookup("chk-a", 0)
				if !errors.Is(got.Err, kerr.UnstableOffsetCommit) {
					err = got.Err
					if err == nil {
						break
					}
				}
			}
			if ctx.Err() != nil {
				t.Errorf("group of %s: offsets not stable: %v", id, err)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		lastCommitted, allowed := int64(-1), map[int64]bool{}
		for j := 0; ; j++ {
			tx := r.txns[fmt.Sprintf("%s-t%d", id, j)]
			if tx == nil {
				break
			}
			if tx.offsets && tx.outcome == chkCommitted {
				lastCommitted = int64(j + 1)
				clear(allowed)
			}
			if tx.offsets && tx.outcome != chkAborted {
				allowed[int64(j+1)] = true
			}
		}
		switch {
		case lastCommitted < 0 && len(allowed) == 0 && got.At >= 0:
			t.Errorf("group of %s: offset %d (%q) committed, but no transaction with offsets committed", id, got.At, got.Metadata)
		case got.At < 0 && lastCommitted >= 0:
			t.Errorf("group of %s: no offset, but %s-t%d committed offset %d", id, id, lastCommitted-1, lastCommitted)
		case got.At >= 0 && !allowed[got.At]:
			t.Errorf("group of %s: offset %d (%q), want that of the last committed transaction with offsets (%d) or of a later one of unknown outcome",
				id, got.At, got.Metadata, lastCommitted)
		}
	}
}

// txnBatch is a transactional record batch of values, as a producer with
// a transactional id sends it.
func txnBatch(producerID int64, epoch int16, seq int32, values ...string) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0x10, // transactional
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           producerID,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(len(values)),
	}
	for i, v := range values {
		b.Records = appendRecord(b.Records, kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)})
	}
	return rawBatch(b)
}
