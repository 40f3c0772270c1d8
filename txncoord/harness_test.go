package txncoord

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// t0 is the injected clock's start; tests move time by passing later times.
var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

const testTimeout = 60000 // transaction.timeout.ms the tests ask for

// harness drives a Coordinator the way the driver does: it persists state
// records into an in-memory log per partition, writes markers and commits
// offsets, each at once unless told to hold or fail them, and checks the
// contract on every Ready: each response answers a request stepped, once,
// with its key and version, and encodes.
type harness struct {
	t      *testing.T
	c      *Coordinator
	cfg    Config
	now    time.Time
	lastID uint64
	sent   map[uint64]kmsg.Request
	got    map[uint64]kmsg.Response

	holdPersist bool // leave Persists in persists instead of reporting them
	failPersist int  // fail this many Persists to come
	holdMarkers bool
	// markerCode answers every marker with this code when not held.
	markerCode  int16
	holdCommits bool
	failCommits int

	persists []Persist
	markers  []Markers
	commits  []CommitOffsets

	log        map[int32][]Record // the state partitions' records, tombstones as Dead
	allMarkers []Markers          // every Markers asked for
	// written are the markers written, by partition, in order.
	written   map[TopicPartition][]Markers
	committed map[string][]Offset // offsets committed, by group
	nextTick  time.Time
	// onReady, when set, sees every Ready before the harness acts on it.
	onReady func(Ready)
	// onAnswer, when set, sees every answer as it comes.
	onAnswer func(id uint64, req kmsg.Request, resp kmsg.Response)
	// maxEpoch is the highest epoch persisted per producer id.
	maxEpoch map[int64]int16
	ended    []Ended // every Ready.Ended, in order
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{
		t:         t,
		cfg:       cfg,
		c:         New(cfg),
		now:       t0,
		sent:      make(map[uint64]kmsg.Request),
		got:       make(map[uint64]kmsg.Response),
		log:       make(map[int32][]Record),
		written:   make(map[TopicPartition][]Markers),
		committed: make(map[string][]Offset),
		maxEpoch:  make(map[int64]int16),
	}
	h.c.Load(h.now, 0, 1, nil)
	h.collect()
	return h
}

// step sends req at the current time and returns its handle.
func (h *harness) step(req kmsg.Request) uint64 {
	h.t.Helper()
	h.lastID++
	id := h.lastID
	h.sent[id] = req
	if err := h.c.Step(h.now, id, req); err != nil {
		h.t.Fatalf("Step(%T): %v", req, err)
	}
	h.collect()
	return id
}

// collect takes Ready, checks it, and carries out what is not held until
// nothing is left to do.
func (h *harness) collect() {
	h.t.Helper()
	for {
		rd := h.c.Ready()
		if h.onReady != nil {
			h.onReady(rd)
		}
		for _, r := range rd.Responses {
			req, ok := h.sent[r.ID]
			if !ok {
				h.t.Fatalf("response to unknown id %d", r.ID)
			}
			if _, dup := h.got[r.ID]; dup {
				h.t.Fatalf("request %d answered twice", r.ID)
			}
			if r.Msg.Key() != req.Key() || r.Msg.GetVersion() != req.GetVersion() {
				h.t.Fatalf("request %d (key %d v%d) answered with key %d v%d", r.ID, req.Key(), req.GetVersion(), r.Msg.Key(), r.Msg.GetVersion())
			}
			r.Msg.AppendTo(nil)
			h.got[r.ID] = r.Msg
			if h.onAnswer != nil {
				h.onAnswer(r.ID, req, r.Msg)
			}
		}
		if !rd.NextTick.IsZero() && !rd.NextTick.After(h.now) {
			h.t.Fatalf("NextTick %v is not after now %v", rd.NextTick, h.now)
		}
		h.nextTick = rd.NextTick
		h.persists = append(h.persists, rd.Persist...)
		h.markers = append(h.markers, rd.Markers...)
		h.allMarkers = append(h.allMarkers, rd.Markers...)
		h.commits = append(h.commits, rd.Commits...)
		h.ended = append(h.ended, rd.Ended...)
		did := false
		if !h.holdPersist && len(h.persists) > 0 {
			h.persistAll()
			did = true
		}
		if !h.holdMarkers && len(h.markers) > 0 {
			h.writeMarkers(h.markerCode)
			did = true
		}
		if !h.holdCommits && len(h.commits) > 0 {
			h.commitAll()
			did = true
		}
		if !did {
			return
		}
	}
}

// persistAll reports every waiting Persist, failing failPersist of them.
func (h *harness) persistAll() {
	h.t.Helper()
	ps := h.persists
	h.persists = nil
	for _, p := range ps {
		ok := h.failPersist == 0
		if !ok {
			h.failPersist--
		}
		h.persistOne(p, ok)
	}
}

// persistOne writes p to the log when ok, checking it, and reports it.
func (h *harness) persistOne(p Persist, ok bool) {
	h.t.Helper()
	if ok {
		if p.Record.CoordinatorEpoch != h.c.parts[p.Partition] {
			h.t.Fatalf("record of %s carries coordinator epoch %d, want %d", p.Record.TxnID, p.Record.CoordinatorEpoch, h.c.parts[p.Partition])
		}
		if p.Tombstone != (p.Record.State == Dead) {
			h.t.Fatalf("persist of %s: tombstone %v with state %v", p.Record.TxnID, p.Tombstone, p.Record.State)
		}
		if max, seen := h.maxEpoch[p.Record.ProducerID]; seen && p.Record.Epoch < max {
			h.t.Fatalf("producer id %d went back from epoch %d to %d", p.Record.ProducerID, max, p.Record.Epoch)
		}
		h.maxEpoch[p.Record.ProducerID] = p.Record.Epoch
		h.log[p.Partition] = append(h.log[p.Partition], p.Record.clone())
	}
	h.c.Persisted(h.now, p.Seq, ok)
}

// writeMarkers answers every waiting Markers with code for all partitions.
func (h *harness) writeMarkers(code int16) {
	h.t.Helper()
	ms := h.markers
	h.markers = nil
	for _, m := range ms {
		h.markerOne(m, code)
	}
}

// markerOne answers m with code for every partition.
func (h *harness) markerOne(m Markers, code int16) {
	var res []MarkerResult
	for _, tp := range m.Partitions {
		res = append(res, MarkerResult{TopicPartition: tp, ErrorCode: code})
		if code == 0 {
			h.written[tp] = append(h.written[tp], m)
		}
	}
	h.c.MarkersWritten(h.now, m.Seq, res)
}

// commitAll reports every waiting CommitOffsets, failing failCommits.
func (h *harness) commitAll() {
	cs := h.commits
	h.commits = nil
	for _, cm := range cs {
		ok := h.failCommits == 0
		if !ok {
			h.failCommits--
		} else {
			h.committed[cm.Group] = append(h.committed[cm.Group], cm.Offsets...)
		}
		h.c.OffsetsCommitted(h.now, cm.Seq, ok)
	}
}

// at moves the clock to t and ticks.
func (h *harness) at(t time.Time) {
	h.t.Helper()
	h.now = t
	h.c.Tick(t)
	h.collect()
}

// after moves the clock by d and ticks.
func (h *harness) after(d time.Duration) {
	h.t.Helper()
	h.at(h.now.Add(d))
}

// release stops holding persists and reports those waiting.
func (h *harness) release() {
	h.t.Helper()
	h.holdPersist = false
	h.collect()
}

func (h *harness) waiting(id uint64) bool {
	_, ok := h.got[id]
	return !ok
}

func (h *harness) answer(id uint64) kmsg.Response {
	h.t.Helper()
	resp, ok := h.got[id]
	if !ok {
		h.t.Fatalf("request %d (%T) is unanswered", id, h.sent[id])
	}
	return resp
}

// codes lists every error code in the answer to id: the top-level one, or
// each partition's.
func (h *harness) codes(id uint64) []int16 {
	h.t.Helper()
	var out []int16
	switch r := h.answer(id).(type) {
	case *kmsg.InitProducerIDResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.EndTxnResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.AddOffsetsToTxnResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.AddPartitionsToTxnResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
		for _, tx := range r.Transactions {
			for _, t := range tx.Topics {
				for _, p := range t.Partitions {
					out = append(out, p.ErrorCode)
				}
			}
		}
	case *kmsg.TxnOffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	default:
		h.t.Fatalf("unexpected answer %T", r)
	}
	return out
}

// wantCode checks every error code in the answer to id is want.
func (h *harness) wantCode(id uint64, want *kerr.Error) {
	h.t.Helper()
	codes := h.codes(id)
	if len(codes) == 0 {
		h.t.Fatalf("request %d (%T): no error codes in the answer", id, h.sent[id])
	}
	for _, got := range codes {
		if got != codeOf(want) {
			h.t.Fatalf("request %d (%T): error %v, want %v", id, h.sent[id], kerr.ErrorForCode(got), want)
		}
	}
}

func codeOf(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

func (h *harness) allAnswered() {
	h.t.Helper()
	for id, req := range h.sent {
		if h.waiting(id) {
			h.t.Fatalf("request %d (%T) was never answered", id, req)
		}
	}
}

// state is the id's state, or -1 when the coordinator does not hold it.
func (h *harness) state(txnID string) State {
	d, ok := h.c.Describe(txnID)
	if !ok {
		return -1
	}
	return d.State
}

func (h *harness) wantState(txnID string, want State) {
	h.t.Helper()
	if got := h.state(txnID); got != want {
		h.t.Fatalf("%s is %v, want %v", txnID, got, want)
	}
}

// producer is a client's view of its producer id and epoch.
type producer struct {
	id    string
	pid   int64
	epoch int16
}

func initReq(version int16, txnID string, timeout int32, pid int64, epoch int16) *kmsg.InitProducerIDRequest {
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version = version
	r.TransactionalID = kmsg.StringPtr(txnID)
	r.TransactionTimeoutMillis = timeout
	r.ProducerID = pid
	r.ProducerEpoch = epoch
	return r
}

// init runs a v5 InitProducerId without a producer id, expecting success.
func (h *harness) initID(txnID string) producer {
	h.t.Helper()
	id := h.step(initReq(5, txnID, testTimeout, -1, -1))
	r := h.answer(id).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 {
		h.t.Fatalf("InitProducerId %s: %v", txnID, kerr.ErrorForCode(r.ErrorCode))
	}
	return producer{txnID, r.ProducerID, r.ProducerEpoch}
}

func addPartsReq(version int16, p producer, tps ...TopicPartition) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = version
	r.TransactionalID, r.ProducerID, r.ProducerEpoch = p.id, p.pid, p.epoch
	for _, tp := range tps {
		r.Topics = append(r.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	return r
}

// batchReq is a v5 AddPartitionsToTxn of one transaction.
func batchReq(p producer, verify bool, tps ...TopicPartition) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = 5
	tx := kmsg.AddPartitionsToTxnRequestTransaction{TransactionalID: p.id, ProducerID: p.pid, ProducerEpoch: p.epoch, VerifyOnly: verify}
	for _, tp := range tps {
		tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	r.Transactions = append(r.Transactions, tx)
	return r
}

func addOffsetsReq(version int16, p producer, group string) *kmsg.AddOffsetsToTxnRequest {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.Version = version
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = p.id, p.pid, p.epoch, group
	return r
}

func endReq(version int16, p producer, commit bool) *kmsg.EndTxnRequest {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version = version
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = p.id, p.pid, p.epoch, commit
	return r
}

func txnCommitReq(version int16, p producer, group string, offs ...Offset) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = version
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = p.id, p.pid, p.epoch, group
	for _, o := range offs {
		r.Topics = append(r.Topics, kmsg.TxnOffsetCommitRequestTopic{Topic: o.Topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch}}})
	}
	return r
}

// end sends EndTxn and returns its answer.
func (h *harness) end(version int16, p producer, commit bool) *kmsg.EndTxnResponse {
	h.t.Helper()
	return h.answer(h.step(endReq(version, p, commit))).(*kmsg.EndTxnResponse)
}

// ok fails the test unless the request with handle id succeeded.
func (h *harness) ok(id uint64) {
	h.t.Helper()
	h.wantCode(id, nil)
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }

// markersFor lists the markers asked for the id, in order.
func (h *harness) markersFor(txnID string) []Markers {
	var out []Markers
	for _, m := range h.allMarkers {
		if m.TxnID == txnID {
			out = append(out, m)
		}
	}
	return out
}

// records lists the records persisted for the id, in order.
func (h *harness) records(txnID string) []Record {
	var out []Record
	for _, recs := range h.log {
		for _, r := range recs {
			if r.TxnID == txnID {
				out = append(out, r)
			}
		}
	}
	return out
}

// lastRecord is the id's latest persisted record.
func (h *harness) lastRecord(txnID string) Record {
	h.t.Helper()
	recs := h.records(txnID)
	if len(recs) == 0 {
		h.t.Fatalf("no record of %s persisted", txnID)
	}
	return recs[len(recs)-1]
}

// states lists the states of the id's persisted records, in order.
func (h *harness) states(txnID string) []State {
	var out []State
	for _, r := range h.records(txnID) {
		out = append(out, r.State)
	}
	return out
}

func wantStates(t *testing.T, got []State, want ...State) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
}
