package txncoord

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestList: ListTransactions' filters by state, producer id, duration and
// id pattern.
func TestList(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.initID("a")
	b := h.initID("b")
	h.initID("c")
	h.ok(h.step(addPartsReq(3, a, tp("t", 0))))
	h.after(10 * time.Second)
	h.ok(h.step(addPartsReq(3, b, tp("t", 0))))
	h.after(5 * time.Second)
	ids := func(l []kmsg.ListTransactionsResponseTransactionState) string {
		var s []string
		for _, x := range l {
			s = append(s, x.TransactionalID+":"+x.TransactionState)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		states []string
		pids   []int64
		dur    int64
		match  func(string) bool
		want   string
	}{
		{nil, nil, -1, nil, "a:Ongoing,b:Ongoing,c:Empty"},
		{[]string{"Ongoing"}, nil, -1, nil, "a:Ongoing,b:Ongoing"},
		{[]string{"Empty", "Nonsense"}, nil, -1, nil, "c:Empty"},
		{[]string{"Nonsense"}, nil, -1, nil, ""},
		{nil, []int64{b.pid}, -1, nil, "b:Ongoing"},
		{nil, nil, 6000, nil, "a:Ongoing"},
		{nil, nil, 0, nil, "a:Ongoing,b:Ongoing"},
		{nil, nil, -1, func(id string) bool { return id != "a" }, "b:Ongoing,c:Empty"},
	} {
		if got := ids(h.c.List(h.now, tc.states, tc.pids, tc.dur, tc.match)); got != tc.want {
			t.Errorf("List(%v, %v, %d) = %q, want %q", tc.states, tc.pids, tc.dur, got, tc.want)
		}
	}
}

// TestStateNames: Kafka's names.
func TestStateNames(t *testing.T) {
	want := []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"}
	for s, n := range want {
		if State(s).String() != n {
			t.Errorf("%d is %q, want %q", s, State(s).String(), n)
		}
	}
	if State(42).String() != "Unknown" {
		t.Error("an unknown state has a name")
	}
}
