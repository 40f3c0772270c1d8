package gateway

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions v0–v2 (KIP-664; v1 added a duration filter, v2 a
// transactional id pattern), what `kafka-transactions.sh list` and
// find-hanging ask every broker. disgw has no transactions yet
// (docs/design.md §13), so the list is empty; the filters are still
// checked as Kafka checks them: a state filter that names no transaction
// state comes back in UnknownStateFilters, and a pattern that does not
// compile is INVALID_REGULAR_EXPRESSION.

func init() {
	regKey(66, 0, 2, api[*kmsg.ListTransactionsRequest]{Ordered: handleListTransactions, Errors: listTransactionsError})
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

func handleListTransactions(_ *Gateway, _ *request, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if p := req.TransactionalIDPattern; p != nil && *p != "" {
		if _, err := regexp.Compile(*p); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
	}
	for _, s := range req.StateFilters {
		if !transactionStates[s] {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	return resp, nil
}
