package dislocal

import (
	"testing"
	"time"

	"github.com/disgw/disgw/disclient"
)

// With DIS's limits the account's partition quota counts ACTIVE partitions
// per stream type over every stream (DIS.4308), on CreateStream and on
// scaling out; scaling in and deleting free them; the quota survives a
// restart.
func TestPartitionQuota(t *testing.T) {
	e := newEnv(t)
	e.limits = DISLimits()
	e.reopen()
	create := func(name string, n int32, typ string) (int, []byte) {
		return e.do("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: name, PartitionCount: n, StreamType: typ})
	}
	if st, raw := create("a", 40, disclient.StreamTypeCommon); st != 201 {
		t.Fatalf("create a: %d %s", st, raw)
	}
	if st, raw := create("adv", 10, disclient.StreamTypeAdvanced); st != 201 {
		t.Fatalf("create adv: %d %s", st, raw)
	}
	e.fails("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: "b", PartitionCount: 11}, 400, disclient.CodeQuotaExceeded)
	e.fails("POST", v2("/streams"), disclient.CreateStreamRequest{StreamName: "adv2", PartitionCount: 1, StreamType: disclient.StreamTypeAdvanced}, 400, disclient.CodeQuotaExceeded)
	if st, raw := create("b", 10, ""); st != 201 {
		t.Fatalf("create b up to the quota: %d %s", st, raw)
	}
	e.reopen()
	e.fails("PUT", v2("/streams/b"), disclient.UpdatePartitionCountRequest{StreamName: "b", TargetPartitionCount: 11}, 400, disclient.CodeQuotaExceeded)
	e.must("PUT", v2("/streams/a"), disclient.UpdatePartitionCountRequest{StreamName: "a", TargetPartitionCount: 30}, 200, nil)
	e.must("DELETE", v2("/streams/adv"), nil, 204, nil)
	if st, raw := create("c", 10, ""); st != 201 {
		t.Fatalf("create c after scaling a in: %d %s", st, raw)
	}
	if st, raw := create("adv2", 10, disclient.StreamTypeAdvanced); st != 201 {
		t.Fatalf("create adv2 after deleting adv: %d %s", st, raw)
	}
}

// DIS allows at most 5 scalings per stream per hour and none within an
// hour of a successful one; with only the hourly count set, the sixth
// change within an hour is refused.
func TestScalingLimits(t *testing.T) {
	e := newEnv(t)
	e.limits = DISLimits()
	e.reopen()
	e.createStream("s", 2)
	scale := func(n int32) (int, []byte) {
		return e.do("PUT", v2("/streams/s"), disclient.UpdatePartitionCountRequest{StreamName: "s", TargetPartitionCount: n})
	}
	if st, raw := scale(3); st != 200 {
		t.Fatalf("first scaling: %d %s", st, raw)
	}
	e.clock.Advance(59 * time.Minute)
	e.fails("PUT", v2("/streams/s"), disclient.UpdatePartitionCountRequest{StreamName: "s", TargetPartitionCount: 4}, 400, disclient.CodeInvalidRequest)
	e.clock.Advance(time.Minute)
	if st, raw := scale(4); st != 200 {
		t.Fatalf("scaling an hour later: %d %s", st, raw)
	}

	e.limits = Limits{ScalingsPerHour: 5}
	e.reopen()
	e.clock.Advance(time.Hour)
	for i := range int32(5) {
		if st, raw := scale(5 + i%2); st != 200 {
			t.Fatalf("scaling %d within the hour: %d %s", i+1, st, raw)
		}
		e.clock.Advance(time.Minute)
	}
	e.fails("PUT", v2("/streams/s"), disclient.UpdatePartitionCountRequest{StreamName: "s", TargetPartitionCount: 2}, 400, disclient.CodeInvalidRequest)
	// No change is not a scaling.
	if st, raw := scale(5); st != 200 {
		t.Fatalf("unchanged count: %d %s", st, raw)
	}
}

// The app quota answers DIS.4329; deleting an app makes room.
func TestAppQuota(t *testing.T) {
	e := newEnv(t)
	e.limits = Limits{Apps: 2}
	e.reopen()
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g1"}, 201, nil)
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g2"}, 201, nil)
	e.fails("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g3"}, 400, disclient.CodeAppQuotaExceeded)
	e.fails("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g1"}, 400, disclient.CodeAppExists)
	e.must("DELETE", v2("/apps/g1"), nil, 204, nil)
	e.must("POST", v2("/apps"), disclient.CreateAppRequest{AppName: "g3"}, 201, nil)
}
