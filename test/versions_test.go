package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// TestEveryAdvertisedVersion sends every (key, version) pair the gateway
// advertises through a live gateway with kmsg, and checks that the response
// decodes at that version and carries no error. The gateway runs the ACL
// authorizer, allowing what no ACL decides, so the ACL APIs answer too.
func TestEveryAdvertisedVersion(t *testing.T) {
	t.Parallel()
	c := startCluster(t, func(cfg *gateway.Config) {
		cfg.Authorizer, cfg.AllowEveryoneIfNoACLFound = gateway.AuthorizerACL, true
	})
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
			req := versionedRequest(t, rc, k.ApiKey, v, topicID)
			resp := rc.roundTrip(req)
			if err := responseError(resp); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// initTxn makes a transactional producer for id and returns its producer
// id and epoch.
func initTxn(t *testing.T, rc *rawConn, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	for range 50 {
		resp := rc.roundTrip(req).(*kmsg.InitProducerIDResponse)
		switch resp.ErrorCode {
		case 0:
			return resp.ProducerID, resp.ProducerEpoch
		case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code:
			time.Sleep(50 * time.Millisecond)
		default:
			t.Fatalf("InitProducerId for %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	t.Fatalf("InitProducerId for %s: busy for ever", id)
	return 0, 0
}

// versionedRequest builds a minimal valid request for key at version v,
// first sending whatever it needs (a group to sync with, offsets to delete).
func versionedRequest(t *testing.T, rc *rawConn, key, v int16, topicID [16]byte) kmsg.Request {
	t.Helper()
	switch key {
	case 20:
		name := fmt.Sprintf("ver-deltopic-%d", v)
		createTopicRaw(t, rc, name, 1)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis = v, 5000
		req.TopicNames = []string{name}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(name)}}
		return req
	case 23:
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = v, -1
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "ver", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}}}
		return req
	case 37:
		name := fmt.Sprintf("ver-cp-%d", v)
		createTopicRaw(t, rc, name, 1)
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = v, 5000
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: name, Count: 2}}
		return req
	case 32:
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "ver"}}
		return req
	case 33:
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "ver",
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("86400000")}}}}
		return req
	case 44:
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "ver",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("86400000")}}}}
		return req
	case 29:
		req := kmsg.NewPtrDescribeACLsRequest()
		req.Version = v
		req.ResourceType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return req
	case 30:
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = v
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceTypeTopic, fmt.Sprintf("ver-acl-%d", v)
		c.Principal, c.Host = "User:someone", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = []kmsg.CreateACLsRequestCreation{c}
		return req
	case 31:
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = v
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(fmt.Sprintf("ver-acl-%d", v))
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Filters = []kmsg.DeleteACLsRequestFilter{f}
		return req
	case 21:
		// Each version moves the log start of "ver" no further than the
		// end (the seed record): 0, then 1, then -1 (the end again).
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = v, 5000
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = min(int64(v), 1)
		if v == 2 {
			rp.Offset = -1
		}
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "ver", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{rp}}}
		return req
	case 60:
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = v, 1
		return req
	case 66:
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters = v, []string{"Ongoing"}
		return req
	case 61:
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Version = v
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "ver", Partitions: []int32{0}}}
		return req
	case 8:
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = v, "ver-commit", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "ver"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = 1, kmsg.StringPtr("m")
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		return req
	case 9:
		commitOffset(t, rc, "ver-commit", 1)
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		if v >= 8 {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "ver-commit"
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = "ver", []int32{0}
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{gt}
			req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		} else {
			req.Group = "ver-commit"
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = "ver", []int32{0}
			req.Topics = []kmsg.OffsetFetchRequestTopic{rt}
		}
		return req
	case 10:
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = v, "g", []string{"g"}
		return req
	case 11:
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group = v, fmt.Sprintf("ver-join-%d", v)
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
		if v >= 4 {
			first := rc.roundTrip(req).(*kmsg.JoinGroupResponse)
			if first.ErrorCode != kerr.MemberIDRequired.Code {
				t.Fatalf("JoinGroup v%d without a member id: %v, want MEMBER_ID_REQUIRED", v, kerr.ErrorForCode(first.ErrorCode))
			}
			req.MemberID = first.MemberID
		}
		return req
	case 12, 13, 14:
		member, gen := joinedMember(t, rc, fmt.Sprintf("ver-%d-%d", key, v), key != 14)
		switch key {
		case 12:
			req := kmsg.NewPtrHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.Generation = v, fmt.Sprintf("ver-%d-%d", key, v), member, gen
			return req
		case 13:
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Version, req.Group, req.MemberID = v, fmt.Sprintf("ver-%d-%d", key, v), member
			if v >= 3 {
				req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
			}
			return req
		default:
			req := kmsg.NewPtrSyncGroupRequest()
			req.Version, req.Group, req.MemberID, req.Generation = v, fmt.Sprintf("ver-%d-%d", key, v), member, gen
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
			return req
		}
	case 15:
		commitOffset(t, rc, "ver-commit", 1)
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = v, []string{"ver-commit"}
		return req
	case 16:
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = v
		return req
	case 42:
		group := fmt.Sprintf("ver-delete-%d", v)
		commitOffset(t, rc, group, 1)
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = v, []string{group}
		return req
	case 47:
		commitOffset(t, rc, "ver-commit", 1)
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Version, req.Group = v, "ver-commit"
		req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "ver", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
		return req
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
	case 24:
		id := fmt.Sprintf("ver-apt-%d", v)
		pid, epoch := initTxn(t, rc, id)
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = v
		if v < 4 {
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
			req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "ver", Partitions: []int32{0}}}
			return req
		}
		txn := kmsg.NewAddPartitionsToTxnRequestTransaction()
		txn.TransactionalID, txn.ProducerID, txn.ProducerEpoch = id, pid, epoch
		txn.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "ver", Partitions: []int32{0}}}
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{txn}
		return req
	case 25:
		id := fmt.Sprintf("ver-aot-%d", v)
		pid, epoch := initTxn(t, rc, id)
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = v, id, pid, epoch, "ver-txn-group"
		return req
	case 26:
		id := fmt.Sprintf("ver-end-%d", v)
		pid, epoch := initTxn(t, rc, id)
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "ver", Partitions: []int32{0}}}
		if code := rc.roundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("AddPartitionsToTxn before EndTxn v%d: %v", v, kerr.ErrorForCode(code))
		}
		req := kmsg.NewPtrEndTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = v, id, pid, epoch, true
		return req
	case 27:
		// A marker for a producer the partition never saw: nothing to end.
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = v
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = 4242, 0, false
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "ver", Partitions: []int32{0}}}
		req.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
		return req
	case 28:
		id := fmt.Sprintf("ver-toc-%d", v)
		pid, epoch := initTxn(t, rc, id)
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, "ver-txn-group"
		if code := rc.roundTrip(add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
			t.Fatalf("AddOffsetsToTxn before TxnOffsetCommit v%d: %v", v, kerr.ErrorForCode(code))
		}
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = v, id, pid, epoch, "ver-txn-group"
		req.Generation = -1
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "ver", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
		return req
	case 65:
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.Version, req.TransactionalIDs = v, []string{"ver-end-0"}
		return req
	case 84:
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.Version, req.GroupID = v, "ver-share"
		req.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}}}}
		return req
	case 85:
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version, req.GroupID = v, "ver-share"
		req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
		return req
	case 86:
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.Version, req.GroupID = v, "ver-share"
		req.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
		return req
	case 87:
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.Version, req.GroupID = v, "ver-share"
		req.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: topicID, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
		return req
	case 68:
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = v
		req.Group, req.MemberID = fmt.Sprintf("ver-cg-%d", v), fmt.Sprintf("ver-member-%d", v)
		req.RebalanceTimeoutMillis = 10000
		req.SubscribedTopicNames = []string{"ver"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return req
	case 69:
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version = v
		req.Groups = []string{"ver-cg-0"}
		return req
	case 90:
		req := describeShareReq("ver-share", "ver", 0)
		req.Version = v
		return req
	case 91:
		req := alterShareReq("ver-share", "ver", 0, 0)
		req.Version = v
		return req
	case 92:
		req := deleteShareReq("ver-share", "ver")
		req.Version = v
		return req
	case 76:
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version = v
		req.GroupID, req.MemberID = fmt.Sprintf("ver-sg-%d", v), fmt.Sprintf("ver-share-member-%d", v)
		req.SubscribedTopicNames = []string{"ver"}
		return req
	case 78:
		return shareFetchRaw(t, rc, fmt.Sprintf("ver-sf-%d", v), v, topicID)
	case 79:
		// A session to acknowledge in: opened by a share fetch, whose
		// first record is then accepted.
		group := fmt.Sprintf("ver-sa-%d", v)
		fetch := shareFetchRaw(t, rc, group, 1, topicID)
		resp := rc.roundTrip(fetch).(*kmsg.ShareFetchResponse)
		if err := responseError(resp); err != nil {
			t.Fatalf("ShareFetch before ShareAcknowledge v%d: %v", v, err)
		}
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch = v, fetch.GroupID, fetch.MemberID, 1
		p := kmsg.NewShareAcknowledgeRequestTopicPartition()
		first := resp.Topics[0].Partitions[0].AcquiredRecords[0].FirstOffset
		p.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: first, AcknowledgeTypes: []int8{1}}}
		req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: topicID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{p}}}
		return req
	case 77:
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.Version = v
		req.GroupIDs = []string{"ver-sg-1"}
		return req
	}
	t.Fatalf("the gateway advertises API key %d, which this test does not know how to exercise", key)
	return nil
}

// shareFetchRaw is a ShareFetch v of group opening a session that acquires
// records of ver/0 from its log start (share.auto.offset.reset, set first),
// after a record is produced there: DeleteRecords may have moved the log
// start to the end.
func shareFetchRaw(t *testing.T, rc *rawConn, group string, v int16, topicID [16]byte) *kmsg.ShareFetchRequest {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{c}
	alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	if code := rc.roundTrip(alter).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != 0 {
		t.Fatalf("share.auto.offset.reset of %s: %v", group, kerr.ErrorForCode(code))
	}
	if code := rc.roundTrip(produceReq(9, "ver", 0, testBatch(-1, -1, -1, 1000, group))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce for %s: %v", group, kerr.ErrorForCode(code))
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.Version, req.GroupID, req.MemberID = v, kmsg.StringPtr(group), kmsg.StringPtr(group+"-member")
	req.MaxWaitMillis, req.MinBytes, req.MaxRecords = 2000, 1, 1
	p := kmsg.NewShareFetchRequestTopicPartition()
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: topicID, Partitions: []kmsg.ShareFetchRequestTopicPartition{p}}}
	return req
}

// createTopicRaw creates a topic with CreateTopics v7.
func createTopicRaw(t *testing.T, rc *rawConn, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}}
	if code := rc.roundTrip(req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: %v", name, kerr.ErrorForCode(code))
	}
}

// commitOffset makes a simple commit for group on ver/0.
func commitOffset(t *testing.T, rc *rawConn, group string, offset int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "ver", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset}}}}
	if code := rc.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit for %s: %v", group, kerr.ErrorForCode(code))
	}
}

// joinedMember joins group as its only member and, when synced is set,
// completes the SyncGroup too; it returns the member id and generation.
func joinedMember(t *testing.T, rc *rawConn, group string, synced bool) (string, int32) {
	t.Helper()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group = 9, group
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
	first := rc.roundTrip(join).(*kmsg.JoinGroupResponse)
	join.MemberID = first.MemberID
	jr := rc.roundTrip(join).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 {
		t.Fatalf("join %s: %v", group, kerr.ErrorForCode(jr.ErrorCode))
	}
	if synced {
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Version, sync.Group, sync.MemberID, sync.Generation = 5, group, jr.MemberID, jr.Generation
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
		if code := rc.roundTrip(sync).(*kmsg.SyncGroupResponse).ErrorCode; code != 0 {
			t.Fatalf("sync %s: %v", group, kerr.ErrorForCode(code))
		}
	}
	return jr.MemberID, jr.Generation
}

// peersOnly is the answer of an API only other gateways may call, to a
// client: nil when it is refused as one.
func peersOnly(code int16) error {
	if code != kerr.ClusterAuthorizationFailed.Code {
		return fmt.Errorf("a client was answered %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
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
		if r.Version >= 5 && len(r.Topics[0].Configs) == 0 {
			return fmt.Errorf("no configs for the new topic")
		}
		return check(r.Topics[0].ErrorCode)
	case *kmsg.OffsetCommitResponse:
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.OffsetFetchResponse:
		if r.Version >= 8 {
			g := r.Groups[0]
			if err := check(g.ErrorCode); err != nil {
				return err
			}
			if p := g.Topics[0].Partitions[0]; p.Offset != 1 {
				return fmt.Errorf("committed offset %d, want 1", p.Offset)
			}
			return check(g.Topics[0].Partitions[0].ErrorCode)
		}
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		if p := r.Topics[0].Partitions[0]; p.Offset != 1 {
			return fmt.Errorf("committed offset %d, want 1", p.Offset)
		}
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.FindCoordinatorResponse:
		if r.Version >= 4 {
			return check(r.Coordinators[0].ErrorCode)
		}
		return check(r.ErrorCode)
	case *kmsg.JoinGroupResponse:
		if r.Generation < 1 || r.MemberID == "" {
			return fmt.Errorf("generation %d, member %q", r.Generation, r.MemberID)
		}
		return check(r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		return check(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		if r.Version >= 3 {
			if err := check(r.Members[0].ErrorCode); err != nil {
				return err
			}
		}
		return check(r.ErrorCode)
	case *kmsg.SyncGroupResponse:
		if len(r.MemberAssignment) == 0 {
			return fmt.Errorf("empty assignment")
		}
		return check(r.ErrorCode)
	case *kmsg.DescribeGroupsResponse:
		if g := r.Groups[0]; g.State != "Empty" {
			return fmt.Errorf("state %q, want Empty", g.State)
		}
		return check(r.Groups[0].ErrorCode)
	case *kmsg.ListGroupsResponse:
		if len(r.Groups) == 0 {
			return fmt.Errorf("no groups listed")
		}
		return check(r.ErrorCode)
	case *kmsg.DeleteGroupsResponse:
		return check(r.Groups[0].ErrorCode)
	case *kmsg.DescribeShareGroupOffsetsResponse:
		if err := check(r.Groups[0].ErrorCode); err != nil {
			return err
		}
		return check(r.Groups[0].Topics[0].Partitions[0].ErrorCode)
	case *kmsg.AlterShareGroupOffsetsResponse:
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.DeleteShareGroupOffsetsResponse:
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		return check(r.Topics[0].ErrorCode)
	case *kmsg.OffsetDeleteResponse:
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.DeleteTopicsResponse:
		return check(r.Topics[0].ErrorCode)
	case *kmsg.DescribeACLsResponse:
		return check(r.ErrorCode)
	case *kmsg.CreateACLsResponse:
		return check(r.Results[0].ErrorCode)
	case *kmsg.DeleteACLsResponse:
		if err := check(r.Results[0].ErrorCode); err != nil {
			return err
		}
		if len(r.Results[0].MatchingACLs) != 1 {
			return fmt.Errorf("deleted %d ACLs, want the one CreateAcls at this version made", len(r.Results[0].MatchingACLs))
		}
	case *kmsg.OffsetForLeaderEpochResponse:
		p := r.Topics[0].Partitions[0]
		if p.EndOffset < 1 {
			return fmt.Errorf("end offset %d", p.EndOffset)
		}
		return check(p.ErrorCode)
	case *kmsg.CreatePartitionsResponse:
		return check(r.Topics[0].ErrorCode)
	case *kmsg.DescribeConfigsResponse:
		if len(r.Resources[0].Configs) == 0 {
			return fmt.Errorf("no configs")
		}
		return check(r.Resources[0].ErrorCode)
	case *kmsg.AlterConfigsResponse:
		return check(r.Resources[0].ErrorCode)
	case *kmsg.IncrementalAlterConfigsResponse:
		return check(r.Resources[0].ErrorCode)
	case *kmsg.DescribeClusterResponse:
		if len(r.Brokers) != 1 || r.ClusterID == "" {
			return fmt.Errorf("%d brokers, cluster id %q", len(r.Brokers), r.ClusterID)
		}
		return check(r.ErrorCode)
	case *kmsg.AddPartitionsToTxnResponse:
		if r.Version >= 4 {
			if err := check(r.ErrorCode); err != nil {
				return err
			}
			return check(r.Transactions[0].Topics[0].Partitions[0].ErrorCode)
		}
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.AddOffsetsToTxnResponse:
		return check(r.ErrorCode)
	case *kmsg.EndTxnResponse:
		return check(r.ErrorCode)
	case *kmsg.WriteTxnMarkersResponse:
		return check(r.Markers[0].Topics[0].Partitions[0].ErrorCode)
	case *kmsg.TxnOffsetCommitResponse:
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.DescribeTransactionsResponse:
		if st := r.TransactionStates[0]; st.ErrorCode == 0 && st.State != "CompleteCommit" {
			return fmt.Errorf("transaction state %q, want CompleteCommit", st.State)
		}
		return check(r.TransactionStates[0].ErrorCode)
	case *kmsg.ListTransactionsResponse:
		if len(r.UnknownStateFilters) != 0 {
			return fmt.Errorf("state filters %v unknown", r.UnknownStateFilters)
		}
		return check(r.ErrorCode)
	case *kmsg.DescribeProducersResponse:
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%d topics", len(r.Topics))
		}
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.ConsumerGroupHeartbeatResponse:
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		if r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics) != 1 {
			return fmt.Errorf("member epoch %d, assignment %+v", r.MemberEpoch, r.Assignment)
		}
	case *kmsg.ConsumerGroupDescribeResponse:
		g := r.Groups[0]
		if err := check(g.ErrorCode); err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != 1 || len(g.Members[0].Assignment.TopicPartitions) != 1 {
			return fmt.Errorf("state %s, %d members", g.State, len(g.Members))
		}
	case *kmsg.ShareFetchResponse:
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%d topics answered", len(r.Topics))
		}
		p := r.Topics[0].Partitions[0]
		if err := check(p.ErrorCode); err != nil {
			return err
		}
		if len(p.AcquiredRecords) == 0 || len(p.Records) == 0 {
			return fmt.Errorf("acquired %+v with %d bytes of records", p.AcquiredRecords, len(p.Records))
		}
	case *kmsg.ShareAcknowledgeResponse:
		if err := check(r.ErrorCode); err != nil {
			return err
		}
		return check(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.ReadShareGroupStateResponse:
		return peersOnly(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.WriteShareGroupStateResponse:
		return peersOnly(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.DeleteShareGroupStateResponse:
		return peersOnly(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.ReadShareGroupStateSummaryResponse:
		return peersOnly(r.Topics[0].Partitions[0].ErrorCode)
	case *kmsg.InitProducerIDResponse:
		if r.ProducerID < 0 {
			return fmt.Errorf("producer id %d", r.ProducerID)
		}
		return check(r.ErrorCode)
	}
	return nil
}
