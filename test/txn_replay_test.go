package test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
)

// rawTxnProducer is a transactional producer spoken by hand with kmsg, so
// that its requests can be sent again later, as a network that delays a
// request delivers it after its producer moved on.
type rawTxnProducer struct {
	t *testing.T
	// route is the connection to the gateway a request goes to.
	route func(kmsg.Request) *rawConn
	id    string
	pid   int64
	epoch int16
}

// retry sends build's request until its error code, told by code, is not
// one that asks to retry (the coordinator busy ending the last
// transaction, or loading).
func (p *rawTxnProducer) retry(build func() kmsg.Request, code func(kmsg.Response) int16) int16 {
	p.t.Helper()
	for range 100 {
		req := build()
		switch c := code(p.route(req).roundTrip(req)); c {
		case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotEnoughReplicas.Code:
			time.Sleep(100 * time.Millisecond)
		default:
			return c
		}
	}
	p.t.Fatalf("%s: still busy after 100 tries", p.id)
	return 0
}

// init (re)initializes the producer: a new epoch, which fences the one
// before and aborts its open transaction.
func (p *rawTxnProducer) init() {
	p.t.Helper()
	var resp *kmsg.InitProducerIDResponse
	code := p.retry(func() kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 4
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(p.id), 60_000
		req.ProducerID, req.ProducerEpoch = -1, -1
		return req
	}, func(r kmsg.Response) int16 { resp = r.(*kmsg.InitProducerIDResponse); return resp.ErrorCode })
	if code != 0 {
		p.t.Fatalf("%s: InitProducerId: %v", p.id, kerr.ErrorForCode(code))
	}
	p.pid, p.epoch = resp.ProducerID, resp.ProducerEpoch
}

// add adds partitions to the open transaction (transaction version 1).
func (p *rawTxnProducer) add(parts ...chkPart) {
	p.t.Helper()
	code := p.retry(func() kmsg.Request {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
		for _, at := range parts {
			tt := kmsg.NewAddPartitionsToTxnRequestTopic()
			tt.Topic, tt.Partitions = at.topic, []int32{at.part}
			req.Topics = append(req.Topics, tt)
		}
		return req
	}, func(r kmsg.Response) int16 {
		for _, t := range r.(*kmsg.AddPartitionsToTxnResponse).Topics {
			for _, pp := range t.Partitions {
				if pp.ErrorCode != 0 {
					return pp.ErrorCode
				}
			}
		}
		return 0
	})
	if code != 0 {
		p.t.Fatalf("%s: AddPartitionsToTxn %v: %v", p.id, parts, kerr.ErrorForCode(code))
	}
}

// produceReq is the Produce of values to at with sequence seq at the
// producer's epoch now.
func (p *rawTxnProducer) produceReq(at chkPart, seq int32, values ...string) *kmsg.ProduceRequest {
	req := produceReq(9, at.topic, at.part, txnBatch(p.pid, p.epoch, seq, values...))
	req.TransactionID = kmsg.StringPtr(p.id)
	return req
}

// send sends a Produce and returns the partition's error code; it sends
// again while the gateway answers that the coordinator is busy (ending the
// last transaction), as a producer retries, so that a replay is judged on
// what the transaction's state is, not on when it came.
func (p *rawTxnProducer) send(req *kmsg.ProduceRequest) int16 {
	p.t.Helper()
	return p.retry(func() kmsg.Request { return req }, func(r kmsg.Response) int16 {
		return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	})
}

// endReq is the EndTxn of the open transaction at the producer's epoch now.
func (p *rawTxnProducer) endReq(commit bool) *kmsg.EndTxnRequest {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
	return req
}

// end sends an EndTxn, retried while the coordinator is busy.
func (p *rawTxnProducer) end(req *kmsg.EndTxnRequest) int16 {
	p.t.Helper()
	return p.retry(func() kmsg.Request { return req }, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode })
}

// router routes a raw producer's requests: with several gateways a
// Produce goes to its partition's owner and the rest to the transaction's
// coordinator, as a client would send them once every gateway is live.
func (r *chkRun) router(t *testing.T) func(kmsg.Request) *rawConn {
	conns := map[string]*rawConn{}
	conn := func(addr string) *rawConn {
		if conns[addr] == nil {
			conns[addr] = dialRaw(t, addr)
		}
		return conns[addr]
	}
	if len(r.members) < 2 {
		return func(kmsg.Request) *rawConn { return conn(r.addrs[0]) }
	}
	owner := func(key string) *rawConn { return conn(r.addrs[r.members[0].Owner(key).ID]) }
	return func(req kmsg.Request) *rawConn {
		switch req := req.(type) {
		case *kmsg.ProduceRequest:
			return owner(cluster.PartitionKey(req.Topics[0].Topic, req.Topics[0].Partitions[0].Partition))
		case *kmsg.InitProducerIDRequest:
			return owner(txnStateKey(*req.TransactionalID))
		case *kmsg.AddPartitionsToTxnRequest:
			return owner(txnStateKey(req.TransactionalID))
		case *kmsg.EndTxnRequest:
			return owner(txnStateKey(req.TransactionalID))
		}
		t.Fatalf("no route for %s", kmsg.NameForKey(req.Key()))
		return nil
	}
}

// refused says whether code refuses a replayed request of an ended
// transaction or an older epoch.
func refused(code int16) bool {
	switch code {
	case kerr.InvalidTxnState.Code, kerr.TransactionAbortable.Code, kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code:
		return true
	}
	return false
}

// replay captures a transaction's Produce and EndTxn and sends them again
// into later transactions of the same producer: between transactions
// (KIP-890 part 1's verification refuses a batch outside a transaction),
// into a later transaction at the same epoch on a partition it did not
// add, and after the producer re-initialized, into a transaction that did
// add the partition (the epoch fences both). Its transactions go into the
// history, so the checker sees that nothing of the replays was read and
// that the later transaction is whole.
func (r *chkRun) replay(t *testing.T) {
	t.Run("delayed replay", func(t *testing.T) {
		a0, a1, b0 := chkPart{"chk-a", 0}, chkPart{"chk-a", 1}, chkPart{"chk-b", 0}
		p := &rawTxnProducer{t: t, route: r.router(t), id: "chk-replay"}
		p.init()
		first := &chkTxn{name: "rp-t0", values: map[string]chkPart{"rp-t0-r0": a0, "rp-t0-r1": a0, "rp-t0-r2": b0}, outcome: chkAborted}
		r.addTxn(first)
		p.add(a0, b0)
		delayedProduce := p.produceReq(a0, 0, "rp-t0-r0", "rp-t0-r1")
		if code := p.send(delayedProduce); code != 0 {
			t.Fatalf("produce of rp-t0 to %v: %v", a0, kerr.ErrorForCode(code))
		}
		if code := p.send(p.produceReq(b0, 0, "rp-t0-r2")); code != 0 {
			t.Fatalf("produce of rp-t0 to %v: %v", b0, kerr.ErrorForCode(code))
		}
		delayedEnd := p.endReq(true)
		first.outcome = chkUnknown
		if code := p.end(delayedEnd); code != 0 {
			t.Fatalf("commit of rp-t0: %v", kerr.ErrorForCode(code))
		}
		first.outcome = chkCommitted

		if code := p.send(delayedProduce); !refused(code) {
			t.Errorf("rp-t0's produce replayed after it committed: %v, want it refused", kerr.ErrorForCode(code))
		}

		second := &chkTxn{name: "rp-t1", values: map[string]chkPart{"rp-t1-r0": a1}, outcome: chkAborted}
		r.addTxn(second)
		p.add(a1)
		secondProduce := p.produceReq(a1, 0, "rp-t1-r0")
		if code := p.send(secondProduce); code != 0 {
			t.Fatalf("produce of rp-t1: %v", kerr.ErrorForCode(code))
		}
		if code := p.send(delayedProduce); !refused(code) {
			t.Errorf("rp-t0's produce replayed into rp-t1, which did not add %v: %v, want it refused", a0, kerr.ErrorForCode(code))
		}

		// The producer restarts: its new epoch aborts rp-t1.
		p.init()
		third := &chkTxn{name: "rp-t2", values: map[string]chkPart{"rp-t2-r0": a0, "rp-t2-r1": a1, "rp-t2-r2": b0}, outcome: chkAborted}
		r.addTxn(third)
		p.add(a0, a1, b0)
		if code := p.send(p.produceReq(a0, 0, "rp-t2-r0")); code != 0 {
			t.Fatalf("produce of rp-t2 to %v: %v", a0, kerr.ErrorForCode(code))
		}
		if code := p.send(delayedProduce); !refused(code) {
			t.Errorf("rp-t0's produce replayed into rp-t2 at a newer epoch: %v, want it refused", kerr.ErrorForCode(code))
		}
		if code := p.send(secondProduce); !refused(code) {
			t.Errorf("rp-t1's produce replayed into rp-t2 at a newer epoch: %v, want it refused", kerr.ErrorForCode(code))
		}
		if code := p.end(delayedEnd); !refused(code) {
			t.Errorf("rp-t0's commit replayed into rp-t2 at a newer epoch: %v, want it refused", kerr.ErrorForCode(code))
		}
		if code := p.send(p.produceReq(a1, 0, "rp-t2-r1")); code != 0 {
			t.Fatalf("produce of rp-t2 to %v: %v", a1, kerr.ErrorForCode(code))
		}
		if code := p.send(p.produceReq(b0, 0, "rp-t2-r2")); code != 0 {
			t.Fatalf("produce of rp-t2 to %v: %v", b0, kerr.ErrorForCode(code))
		}
		third.outcome = chkUnknown
		if code := p.end(p.endReq(true)); code != 0 {
			t.Fatalf("commit of rp-t2: %v", kerr.ErrorForCode(code))
		}
		third.outcome = chkCommitted
	})
	t.Run("delayed EndTxn at the same epoch", func(t *testing.T) {
		// Under transaction version 2 every EndTxn bumps the epoch, so a
		// commit of an ended transaction delayed into the next one
		// carries the epoch before: whatever it is answered, it cannot
		// end the open transaction, whose abort then succeeds and whose
		// value the checker must never see committed.
		a0, a1 := chkPart{"chk-a", 0}, chkPart{"chk-a", 1}
		p := &rawTxnProducer{t: t, route: r.router(t), id: "chk-replay-v2"}
		p.init()
		first := &chkTxn{name: "rp2-t0", values: map[string]chkPart{"rp2-t0-r0": a0}, outcome: chkAborted}
		r.addTxn(first)
		if code := p.send(p.produceReqV2(a0, 0, "rp2-t0-r0")); code != 0 {
			t.Fatalf("produce of rp2-t0: %v", kerr.ErrorForCode(code))
		}
		delayedEnd := p.endReq(true)
		delayedEnd.Version = 5
		first.outcome = chkUnknown
		var ended *kmsg.EndTxnResponse
		code := p.retry(func() kmsg.Request { return delayedEnd }, func(r kmsg.Response) int16 {
			ended = r.(*kmsg.EndTxnResponse)
			return ended.ErrorCode
		})
		if code != 0 {
			t.Fatalf("commit of rp2-t0: %v", kerr.ErrorForCode(code))
		}
		first.outcome = chkCommitted
		if ended.ProducerEpoch != p.epoch+1 {
			t.Fatalf("EndTxn v5 answered epoch %d, want %d: version 2 bumps it", ended.ProducerEpoch, p.epoch+1)
		}
		p.pid, p.epoch = ended.ProducerID, ended.ProducerEpoch
		second := &chkTxn{name: "rp2-t1", values: map[string]chkPart{"rp2-t1-r0": a1}, outcome: chkAborted}
		r.addTxn(second)
		if code := p.send(p.produceReqV2(a1, 0, "rp2-t1-r0")); code != 0 {
			t.Fatalf("produce of rp2-t1: %v", kerr.ErrorForCode(code))
		}
		t.Logf("rp2-t0's commit replayed into rp2-t1: %v", kerr.ErrorForCode(p.end(delayedEnd)))
		abort := p.endReq(false)
		abort.Version = 5
		if code := p.end(abort); code != 0 {
			t.Fatalf("abort of rp2-t1 after the replay: %v, want it still open", kerr.ErrorForCode(code))
		}
	})
}

// produceReqV2 is produceReq at Produce v12, transaction version 2: the
// partition joins the transaction with the batch.
func (p *rawTxnProducer) produceReqV2(at chkPart, seq int32, values ...string) *kmsg.ProduceRequest {
	req := p.produceReq(at, seq, values...)
	req.Version = 12
	return req
}
