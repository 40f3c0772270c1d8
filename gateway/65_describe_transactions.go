package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/txncoord"
)

// DescribeTransactions v0 (KIP-664): what `kafka-transactions.sh describe`
// shows of a transactional id: state, producer id and epoch, timeout, when
// the open transaction began and its partitions, as the coordinator holds
// them (docs/design.md §13). An id the client may not describe is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, one the coordinator does not know
// TRANSACTIONAL_ID_NOT_FOUND.

func init() {
	regKey(65, 0, 0, api[*kmsg.DescribeTransactionsRequest]{Concurrent: handleDescribeTransactions, Errors: describeTransactionsError})
}

func describeTransactionsError(req *kmsg.DescribeTransactionsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode, st.ProducerID, st.ProducerEpoch = id, code, -1, -1
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

func handleDescribeTransactions(ctx context.Context, gw *Gateway, r *request, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	resp := describeTransactionsError(req, 0).(*kmsg.DescribeTransactionsResponse)
	for i := range resp.TransactionStates {
		st := &resp.TransactionStates[i]
		switch {
		case !gw.transactional(r.Tenant()) || st.TransactionalID == "":
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
			continue
		case !gw.authorize(r, authz.OpDescribe, authz.ResourceTransactionalID, st.TransactionalID):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			continue
		}
		if st.ErrorCode = gw.txns.Loaded(ctx, r.Tenant(), st.TransactionalID); st.ErrorCode != 0 {
			continue
		}
		var d txncoord.Describe
		var ok bool
		gw.txns.With(r.Tenant(), func(c *txncoord.Coordinator) { d, ok = c.Describe(st.TransactionalID) })
		if !ok {
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMillis, d.StartMillis
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.Epoch
		for _, tp := range d.Partitions {
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			t := &st.Topics[len(st.Topics)-1]
			t.Partitions = append(t.Partitions, tp.Partition)
		}
	}
	return resp, nil
}
