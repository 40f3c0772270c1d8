package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
)

// AddPartitionsToTxn v0–v5.
//
// v0–v3 are a producer adding partitions to its transaction (v3 made it
// flexible); v4 batches transactions and v5 adds VerifyOnly (KIP-890 part
// 1), both sent only between brokers, so they need CLUSTER_ACTION. The
// coordinator (docs/design.md §13) answers once the state record naming
// the partitions is in DIS. A partition the client may not write, or that
// does not exist, fails the request before it reaches the coordinator,
// and the others are answered OPERATION_NOT_ATTEMPTED, as Kafka does.

func init() {
	regKey(24, 0, 5, api[*kmsg.AddPartitionsToTxnRequest]{Concurrent: handleAddPartitionsToTxn, Errors: addPartitionsToTxnError})
}

// addPartitionsToTxnError answers every partition of req with code (v0–v3)
// or the whole request (v4+).
func addPartitionsToTxnError(req *kmsg.AddPartitionsToTxnRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		resp.ErrorCode = code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleAddPartitionsToTxn(ctx context.Context, gw *Gateway, r *request, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	fail := func(code int16) kmsg.Response { return addPartitionsToTxnError(req, code) }
	switch {
	case !gw.transactional(r.Tenant()):
		return fail(kerr.TransactionalIDAuthorizationFailed.Code), nil
	case req.Version >= 4 && !gw.authorizeCluster(r, authz.OpClusterAction):
		return fail(clusterDenied), nil
	case req.Version >= 4:
		// Another gateway's verification of a produce (KIP-890 part
		// 1), one transaction at a time.
		return gw.addPartitionsBatched(ctx, r, req), nil
	}
	if code := gw.txnRefusal(r, req.TransactionalID); code != 0 {
		return fail(code), nil
	}
	// Every partition must be one the client may write and that exists.
	bad := make(map[string]int16)
	for _, t := range req.Topics {
		st := gw.serveTopic(ctx, r, authz.OpWrite, t.Topic, false)
		for _, p := range t.Partitions {
			code := existingPartitionCode(st, p)
			if code == 0 && isInternalTopic(t.Topic) {
				code = kerr.InvalidTopicException.Code
			}
			if code != 0 {
				bad[t.Topic] = code
				break
			}
		}
	}
	if len(bad) > 0 {
		resp := addPartitionsToTxnError(req, kerr.OperationNotAttempted.Code).(*kmsg.AddPartitionsToTxnResponse)
		for i := range resp.Topics {
			if code, ok := bad[resp.Topics[i].Topic]; ok {
				for j := range resp.Topics[i].Partitions {
					resp.Topics[i].Partitions[j].ErrorCode = code
				}
			}
		}
		return resp, nil
	}
	return gw.stepTxn(ctx, r, req.TransactionalID, req, fail), nil
}

// addPartitionsBatched serves the v4+ form, each transaction through its
// coordinator as a request of its own.
func (gw *Gateway) addPartitionsBatched(ctx context.Context, r *request, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, txn := range req.Transactions {
		one := kmsg.NewPtrAddPartitionsToTxnRequest()
		one.Version = req.Version
		one.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{txn}
		fail := func(code int16) kmsg.Response {
			out := one.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = txn.TransactionalID
			for _, t := range txn.Topics {
				top := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				top.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					top.Partitions = append(top.Partitions, rp)
				}
				rt.Topics = append(rt.Topics, top)
			}
			out.Transactions = append(out.Transactions, rt)
			return out
		}
		got := gw.stepTxn(ctx, r, txn.TransactionalID, one, fail).(*kmsg.AddPartitionsToTxnResponse)
		if got.ErrorCode != 0 {
			got = fail(got.ErrorCode).(*kmsg.AddPartitionsToTxnResponse)
		}
		resp.Transactions = append(resp.Transactions, got.Transactions...)
	}
	return resp
}
