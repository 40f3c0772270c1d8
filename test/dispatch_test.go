package test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A produce request whose v2 batch is only the 61-byte batch header, with a
// valid CRC and zero records, once crashed the gateway. Kafka refuses a
// batch whose record count is not positive with INVALID_RECORD; so does
// disgw, and the connection and the gateway carry on.
func TestProduceEmptyBatch(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "empty-batch", 1, nil)
	rc := dialRaw(t, c.Addr)

	batch := testBatch(-1, -1, -1, 1000)
	if len(batch) != 61 {
		t.Fatalf("the empty batch is %d bytes, want the 61-byte header", len(batch))
	}
	for _, v := range []int16{3, 9, 11} {
		p := rc.roundTrip(produceReq(v, "empty-batch", 0, batch)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("Produce v%d of an empty batch: %v, want INVALID_RECORD", v, kerr.ErrorForCode(p.ErrorCode))
		}
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	if code := rc.roundTrip(av).(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		t.Fatalf("ApiVersions after the empty batch: %v", kerr.ErrorForCode(code))
	}
	if code := rc.roundTrip(produceReq(9, "empty-batch", 0, testBatch(-1, -1, -1, 1000, "v"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("a real batch on the same connection: %v", kerr.ErrorForCode(code))
	}
	other := dialRaw(t, c.Addr)
	if code := other.roundTrip(produceReq(9, "empty-batch", 0, testBatch(-1, -1, -1, 1000, "w"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("another connection: %v", kerr.ErrorForCode(code))
	}
}
