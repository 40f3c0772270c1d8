package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEveryAdvertisedVersion sends every (key, version) pair the gateway
// advertises through a live gateway with kmsg, and checks that the response
// decodes at that version and carries no error.
func TestEveryAdvertisedVersion(t *testing.T) {
	c := startCluster(t, nil)
	createTopic(t, c, "ver", 1, nil)
	rc := dialRaw(t, c.Addr)

	// Seed a record, and learn the topic id for Fetch v13+.
	if code := rc.roundTrip(produceReq(9, "ver", 0, testBatch(-1, -1, -1, 1000, "seed"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("ver")
	meta.Topics = []kmsg.MetadataRequestTopic{mt}
	topicID := rc.roundTrip(meta).(*kmsg.MetadataResponse).Topics[0].TopicID

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	keys := rc.roundTrip(av).(*kmsg.ApiVersionsResponse).ApiKeys
	if len(keys) == 0 {
		t.Fatal("no API keys advertised")
	}
	for _, k := range keys {
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			name := fmt.Sprintf("%s/v%d", kmsg.NameForKey(k.ApiKey), v)
			req := versionedRequest(t, k.ApiKey, v, topicID)
			resp := rc.roundTrip(req)
			if err := responseError(resp); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// versionedRequest builds a minimal valid request for key at version v.
func versionedRequest(t *testing.T, key, v int16, topicID [16]byte) kmsg.Request {
	t.Helper()
	switch key {
	case 0:
		return produceReq(v, "ver", 0, testBatch(-1, -1, -1, time.Now().UnixMilli(), fmt.Sprintf("v%d", v)))
	case 1:
		req := fetchReq(v, "ver", topicID, 0, 0)
		req.MaxWaitMillis = 10
		return req
	case 2:
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "ver"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -2
		rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
		return req
	case 3:
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("ver")
		req.Topics = []kmsg.MetadataRequestTopic{mt}
		return req
	case 18:
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "versions-test", "1.0"
		return req
	case 19:
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = v
		req.TimeoutMillis = 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = fmt.Sprintf("created-v%d", v)
		rt.NumPartitions, rt.ReplicationFactor = 2, 1
		req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
		return req
	case 22:
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = v
		req.TransactionTimeoutMillis = 60000
		return req
	}
	t.Fatalf("the gateway advertises API key %d, which this test does not know how to exercise", key)
	return nil
}

// responseError finds the first error code in a response.
func responseError(resp kmsg.Response) error {
	check := func(code int16) error { return kerr.ErrorForCode(code) }
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		if err := check(r.Topics[0].Partitions[0].ErrorCode); err != nil {
			return err
		}
		if r.Topics[0].Partitions[0].BaseOffset < 1 {
			return fmt.Errorf("base offset %d", r.Topics[0].Partitions[0].BaseOffset)
		}
	case *kmsg.FetchResponse:
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		p := r.Topics[0].Partitions[0]
		if err := check(p.ErrorCode); err != nil {
			return err
		}
		if len(p.RecordBatches) == 0 || p.HighWatermark < 1 {
			return fmt.Errorf("no records (high watermark %d)", p.HighWatermark)
		}
	case *kmsg.ListOffsetsResponse:
		p := r.Topics[0].Partitions[0]
		if err := check(p.ErrorCode); err != nil {
			return err
		}
		if p.Offset != 0 {
			return fmt.Errorf("earliest offset %d", p.Offset)
		}
	case *kmsg.MetadataResponse:
		if len(r.Brokers) != 1 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%d brokers, %d topics", len(r.Brokers), len(r.Topics))
		}
		return check(r.Topics[0].ErrorCode)
	case *kmsg.ApiVersionsResponse:
		return check(r.ErrorCode)
	case *kmsg.CreateTopicsResponse:
		return check(r.Topics[0].ErrorCode)
	case *kmsg.InitProducerIDResponse:
		if r.ProducerID < 0 {
			return fmt.Errorf("producer id %d", r.ProducerID)
		}
		return check(r.ErrorCode)
	}
	return nil
}
