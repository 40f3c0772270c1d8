package gateway

import (
	"context"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/txncoord"
)

// ListTransactions v0–v2 (KIP-664; v1 added a duration filter, v2 a
// transactional id pattern), what `kafka-transactions.sh list` and
// find-hanging ask every broker: the transactional ids of the client's
// tenant that the coordinator holds (docs/design.md §13) and the client may
// describe. The filters are checked as Kafka checks them: a state filter
// that names no transaction state comes back in UnknownStateFilters, and a
// pattern that does not compile is INVALID_REGULAR_EXPRESSION.

func init() {
	regKey(66, 0, 2, api[*kmsg.ListTransactionsRequest]{Concurrent: handleListTransactions, Errors: listTransactionsError})
}

// transactionStates are the states Kafka names a transaction by, in
// DescribeTransactions and the ListTransactions filter.
var transactionStates = map[string]bool{
	"Empty": true, "Ongoing": true, "PrepareCommit": true, "PrepareAbort": true,
	"CompleteCommit": true, "CompleteAbort": true, "Dead": true, "PrepareEpochFence": true,
}

func listTransactionsError(req *kmsg.ListTransactionsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	resp.ErrorCode = code
	return resp
}

func handleListTransactions(ctx context.Context, gw *Gateway, r *request, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if p := req.TransactionalIDPattern; p != nil && *p != "" {
		var err error
		if pattern, err = regexp.Compile(*p); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
	}
	for _, s := range req.StateFilters {
		if !transactionStates[s] {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	if !gw.transactional(r.Tenant()) {
		return resp, nil
	}
	load := gw.txns.LoadAll
	if r.Peer() {
		// Another gateway found transactions open (loadTxnStateEverywhere).
		load = gw.loadOwnedTxnState
	}
	if resp.ErrorCode = load(ctx, r.Tenant()); resp.ErrorCode != 0 {
		return resp, nil
	}
	match := func(id string) bool {
		return (pattern == nil || pattern.MatchString(id)) && gw.permits(r, authz.OpDescribe, authz.ResourceTransactionalID, id)
	}
	gw.txns.With(r.Tenant(), func(c *txncoord.Coordinator) {
		resp.TransactionStates = c.List(time.Now(), req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis, match)
	})
	return resp, nil
}
