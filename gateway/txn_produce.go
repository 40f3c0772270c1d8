package gateway

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/protocol"
)

// A produce's transactional batches are verified with the coordinator
// before they are queued (docs/design.md §13, KIP-890 part 1).

// verifyRetryPause is the first pause before a produce asks its busy
// coordinator again.
const verifyRetryPause = 5 * time.Millisecond

// txnVerdicts are the transactional partitions of one produce request and
// what the coordinator said of each (verifyTxnBatches).
type txnVerdicts struct {
	parts []txnPart
	index map[txnPartKey]int
}

type txnPartKey struct {
	topic     string
	partition int32
}

// txnPart is one partition whose records begin with a transactional
// batch: its producer, and the verdict once asked.
type txnPart struct {
	txnPartKey
	pid   int64
	epoch int16
	code  int16
	msg   string
}

// want notes rp when its records begin with a transactional batch, read
// from the header before anything is decoded.
func (v *txnVerdicts) want(topic string, rp *kmsg.ProduceRequestTopicPartition) {
	if len(rp.Records) < protocol.BatchHeaderSize {
		return
	}
	size := int(int32(binary.BigEndian.Uint32(rp.Records[8:]))) + 12 // the length counts from byte 12
	info, ok := protocol.ParseBatchHead(rp.Records, min(size, len(rp.Records)))
	if !ok || !info.Transactional() || info.Control() {
		return
	}
	if v.index == nil {
		v.index = make(map[txnPartKey]int)
	}
	k := txnPartKey{topic, rp.Partition}
	v.index[k] = len(v.parts)
	v.parts = append(v.parts, txnPart{txnPartKey: k, pid: info.ProducerID, epoch: info.ProducerEpoch})
}

// verdict is what op, a transactional append to partition p of topic, is
// answered before it is queued: the coordinator's verdict for the
// partition, or a refusal when the batch was not the one verified.
func (v *txnVerdicts) verdict(topic string, p int32, op *plog.Append) (int16, string) {
	i, ok := v.index[txnPartKey{topic, p}]
	if !ok || v.parts[i].pid != op.ProducerID || v.parts[i].epoch != op.Epoch {
		return kerr.InvalidRecord.Code, "a partition's transactional batch must be its only one"
	}
	return v.parts[i].code, v.parts[i].msg
}

// verifyTxnBatches asks the coordinator, before a produce request's
// transactional batches are queued, whether their partitions are in their
// producer's open transaction, as Kafka's leaders ask (KIP-890 part 1);
// under transaction version 2 (Produce v12+) the partitions join the
// transaction here, all in one state write. A batch outside the
// transaction is refused, so a delayed Produce of an ended transaction
// cannot open a new one on the partition and leave it hanging.
func (gw *Gateway) verifyTxnBatches(ctx context.Context, r *request, req *kmsg.ProduceRequest, v *txnVerdicts) {
	if len(v.parts) == 0 {
		return
	}
	refuse := func(code int16, msg string) {
		for i := range v.parts {
			v.parts[i].code, v.parts[i].msg = code, msg
		}
	}
	if req.TransactionID == nil || *req.TransactionID == "" {
		refuse(kerr.InvalidRecord.Code, "a transactional batch needs the produce request's transactional id")
		return
	}
	id := *req.TransactionID
	if code := gw.txnRefusal(r, id); code != 0 {
		refuse(code, "")
		return
	}
	// One request per producer: a well-formed request has one.
	byProducer := make(map[[2]int64][]int)
	for i, tp := range v.parts {
		k := [2]int64{tp.pid, int64(tp.epoch)}
		byProducer[k] = append(byProducer[k], i)
	}
	for k, parts := range byProducer {
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.Version = 5
		txn := kmsg.NewAddPartitionsToTxnRequestTransaction()
		txn.TransactionalID, txn.ProducerID, txn.ProducerEpoch = id, k[0], int16(k[1])
		txn.VerifyOnly = req.Version < 12
		for _, i := range parts {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = v.parts[i].topic, []int32{v.parts[i].partition}
			txn.Topics = append(txn.Topics, tt)
		}
		add.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{txn}
		codes, code := gw.verifyWithCoordinator(ctx, r, id, add)
		for _, i := range parts {
			c := code
			if c == 0 {
				c = codes[v.parts[i].txnPartKey]
			}
			v.parts[i].code, v.parts[i].msg = produceTxnCode(c, req.Version)
		}
	}
}

// verifyWithCoordinator sends a produce's verification to the
// coordinator, here or at a peer, and returns each partition's answer, or
// one code for all. While the
// coordinator writes the last transaction's markers, a
// transaction-version-2 producer's first batches of the next one wait
// here, as Kafka's leaders wait, rather than fail and back off.
func (gw *Gateway) verifyWithCoordinator(ctx context.Context, r *request, id string, add *kmsg.AddPartitionsToTxnRequest) (map[txnPartKey]int16, int16) {
	for pause := verifyRetryPause; ; pause = min(2*pause, 8*verifyRetryPause) {
		resp, code := gw.askTxnCoordinator(ctx, r.Tenant(), id, add)
		if resp != nil {
			ar := resp.(*kmsg.AddPartitionsToTxnResponse)
			code = ar.ErrorCode
			if code == 0 {
				codes := make(map[txnPartKey]int16)
				busy := false
				for _, txn := range ar.Transactions {
					for _, t := range txn.Topics {
						for _, p := range t.Partitions {
							codes[txnPartKey{t.Topic, p.Partition}] = p.ErrorCode
							busy = busy || p.ErrorCode == kerr.ConcurrentTransactions.Code
						}
					}
				}
				if !busy {
					return codes, 0
				}
				code = kerr.ConcurrentTransactions.Code
			}
		}
		if code != kerr.ConcurrentTransactions.Code {
			return nil, code
		}
		wait := time.NewTimer(pause)
		select {
		case <-wait.C:
		case <-ctx.Done():
			wait.Stop()
			return nil, code
		}
	}
}

// produceTxnCode is what a produce partition is answered for the
// coordinator's verdict code, as Kafka's leaders answer.
func produceTxnCode(code int16, version int16) (int16, string) {
	switch code {
	case 0:
		return 0, ""
	case kerr.InvalidTxnState.Code:
		if version >= 11 {
			return kerr.TransactionAbortable.Code, "the partition is not in the producer's open transaction"
		}
		return code, "the partition is not in the producer's open transaction"
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code, "a newer producer with the same transactional id fenced this one"
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.RequestTimedOut.Code:
		// The coordinator is busy ending the last transaction or loading:
		// a retriable error the producer retries, as Kafka answers.
		return kerr.NotEnoughReplicas.Code, "the transaction coordinator is busy: " + kerr.ErrorForCode(code).Error()
	}
	return code, ""
}
