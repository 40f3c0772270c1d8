package groups

import (
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/groupcoord"
)

// TestShareDeparturesReachTheirTenant: a share member that leaves is handed
// to ShareDeparted with the tenant it joined as, after the driver's lock
// is released, and another tenant's member of a
// group with the same id is not.
func TestShareDeparturesReachTheirTenant(t *testing.T) {
	type departed struct {
		tn            *testTenant
		group, member string
	}
	var mu sync.Mutex
	var got []departed
	deps := testDeps()
	var d *Driver[*testTenant]
	deps.ShareDeparted = func(tn *testTenant, group, member string) {
		if !d.mu.TryLock() {
			t.Error("ShareDeparted called under the driver's lock")
		} else {
			d.mu.Unlock()
		}
		mu.Lock()
		got = append(got, departed{tn, group, member})
		mu.Unlock()
	}
	d = New(deps)
	t.Cleanup(d.Close)
	a, b := &testTenant{id: "a"}, &testTenant{id: "b"}
	conn := func(tn *testTenant) Conn[*testTenant] {
		return Conn[*testTenant]{Tenant: tn, ClientID: "c", Host: "h", Refuse: func(int16) kmsg.Response { return nil }}
	}
	heartbeat := func(tn *testTenant, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version = 1
		req.GroupID, req.MemberID, req.MemberEpoch = "g", member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"t"}
		}
		resp := d.StepShare(conn(tn), req, groupcoord.Topics{Info: map[string]groupcoord.TopicInfo{"t": {ID: [16]byte{1}, Partitions: 2}}}).(*kmsg.ShareGroupHeartbeatResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at epoch %d: code %d", member, epoch, resp.ErrorCode)
		}
		return resp
	}
	heartbeat(a, "m1", 0)
	heartbeat(b, "m2", 0)
	heartbeat(a, "m1", -1)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != (departed{a, "g", "m1"}) {
		t.Fatalf("departures %+v, want m1 of g at tenant a", got)
	}
}
