package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/plog"
)

// WriteTxnMarkers v1–v2.
//
// A coordinator's request to a partition's leader to end a transaction
// there (v0 is gone from Kafka 4; v2 adds the transaction version). Only
// brokers and admins send it, so it needs CLUSTER_ACTION: the gateway's own
// coordinator writes markers in process, and `kafka-transactions.sh abort`
// sends one to end a hanging transaction with the producer id, epoch and
// coordinator epoch DescribeProducers reported. Each partition's marker
// goes through its writer (plog.Partition.WriteMarker), fenced by producer
// and coordinator epoch.

func init() {
	regKey(27, 1, 2, api[*kmsg.WriteTxnMarkersRequest]{Concurrent: handleWriteTxnMarkers, Errors: writeTxnMarkersError})
}

func writeTxnMarkersError(req *kmsg.WriteTxnMarkersRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

func handleWriteTxnMarkers(ctx context.Context, gw *Gateway, r *request, req *kmsg.WriteTxnMarkersRequest) (kmsg.Response, error) {
	if !gw.authorizeCluster(r, authz.OpClusterAction) {
		return writeTxnMarkersError(req, clusterDenied), nil
	}
	resp := writeTxnMarkersError(req, 0).(*kmsg.WriteTxnMarkersResponse)
	for i, m := range req.Markers {
		marker := plog.Marker{ProducerID: m.ProducerID, Epoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}
		for j, t := range m.Topics {
			st := gw.serveTopic(ctx, r, authz.OpWrite, t.Topic, false)
			for k, p := range t.Partitions {
				rp := &resp.Markers[i].Topics[j].Partitions[k]
				if rp.ErrorCode = gw.partitionCode(st, p); rp.ErrorCode != 0 {
					continue
				}
				if st.t.Format != FormatKafka {
					continue // a raw topic holds no transaction to end
				}
				code, msg := gw.partitionFor(r.Tenant().key(st.t, p)).WriteMarker(ctx, marker)
				if code != 0 {
					r.Log().Info().Str("topic", t.Topic).Int32("partition", p).Int64("producer_id", m.ProducerID).
						Str("error", kerr.ErrorForCode(code).Error()).Str("reason", msg).Msg("WriteTxnMarkers: marker refused")
				}
				rp.ErrorCode = code
			}
		}
	}
	return resp, nil
}
