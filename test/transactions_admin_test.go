package test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactionsCommand is kafka-transactions.sh's main class.
const transactionsCommand = "org.apache.kafka.tools.TransactionsCommand"

// ListTransactions at every version, with the edges Kafka answers: no
// transaction is listed (disgw refuses transactional producers), a state
// filter that is no state comes back as unknown, a bad pattern is
// INVALID_REGULAR_EXPRESSION.
func TestListTransactions(t *testing.T) {
	c := startCluster(t, nil)
	rc := dialRaw(t, c.Addr)
	for v := int16(0); v <= 2; v++ {
		list := kmsg.NewPtrListTransactionsRequest()
		list.Version = v
		list.StateFilters = []string{"Ongoing", "Bogus"}
		resp := rc.roundTrip(list).(*kmsg.ListTransactionsResponse)
		if resp.ErrorCode != 0 || len(resp.TransactionStates) != 0 || strings.Join(resp.UnknownStateFilters, ",") != "Bogus" {
			t.Fatalf("ListTransactions v%d: %+v", v, resp)
		}
	}
	list := kmsg.NewPtrListTransactionsRequest()
	list.Version = 2
	bad := "app-(["
	list.TransactionalIDPattern = &bad
	if code := rc.roundTrip(list).(*kmsg.ListTransactionsResponse).ErrorCode; code != kerr.InvalidRegularExpression.Code {
		t.Fatalf("ListTransactions with pattern %q: %v, want INVALID_REGULAR_EXPRESSION", bad, kerr.ErrorForCode(code))
	}
}

// kafka-transactions.sh list and find-hanging run against disgw and say
// what is true: no transactions, none hanging; describe stops at
// FindCoordinator, which refuses transactional ids at once.
func TestKafkaTransactionsListAndFindHanging(t *testing.T) {
	k, c := startKafkaTools(t)
	createTopic(t, c, "txn-hang", 2, nil)
	produceIdempotent(t, []string{c.Addr}, "txn-hang", map[int32]int{0: 3, 1: 2})

	if got := lines(k.run(transactionsCommand, "list")); len(got) != 1 || !strings.HasPrefix(got[0], "TransactionalId") {
		t.Errorf("list: %q, want the header alone", got)
	}
	if got := lines(k.run(transactionsCommand, "find-hanging", "--topic", "txn-hang")); len(got) != 1 || !strings.HasPrefix(got[0], "Topic") {
		t.Errorf("find-hanging: %q, want the header alone", got)
	}
	k.fail("authorization failure", transactionsCommand, "describe", "--transactional-id", "app-1")
}
