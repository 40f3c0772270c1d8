package gateway

import (
	"context"
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadShareGroupState v0.
//
// Between gateways only (share_peers.go): a holder on another gateway
// takes share-partitions whose log partition this gateway serves
// (plog.ShareStates.Take). Each partition's answer carries the new
// holder's token and the records its state loads from in tags, the log
// partition's epoch as the state epoch and the kept share-partition
// start offset (-1: none). Anyone but a peer is refused
// CLUSTER_AUTHORIZATION_FAILED.

func init() {
	regKey(84, 0, 0, api[*kmsg.ReadShareGroupStateRequest]{Concurrent: handleReadShareGroupState, Errors: readShareGroupStateError})
}

func readShareGroupStateError(req *kmsg.ReadShareGroupStateRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.StartOffset = p.Partition, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleReadShareGroupState(ctx context.Context, gw *Gateway, r *request, req *kmsg.ReadShareGroupStateRequest) (kmsg.Response, error) {
	if !peerOnly(r, "ReadShareGroupState") {
		return readShareGroupStateError(req, clusterDenied), nil
	}
	s := r.Tenant().shares
	resp := readShareGroupStateError(req, 0).(*kmsg.ReadShareGroupStateResponse)
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			k, ok := peerShareKey(req.GroupID, &t.UnknownTags, p.Partition)
			if !ok {
				rp.ErrorCode, rp.ErrorMessage = shareCode(errNoTopicName), shareMessage(errNoTopicName)
				continue
			}
			sv, err := s.servedForPeer(ctx, k, false)
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = shareCode(err), shareMessage(err)
				continue
			}
			recs, token, err := s.takeServed(ctx, sv, k)
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = shareCode(err), shareMessage(err)
				continue
			}
			rp.StateEpoch = int32(token >> 32)
			rp.UnknownTags.Set(peerShareTokenTag, binary.BigEndian.AppendUint64(nil, token))
			if len(recs) > 0 {
				rp.StartOffset = recs[len(recs)-1].Start
				rp.UnknownTags.Set(peerShareRecordsTag, encodeShareRecords(recs))
			}
		}
	}
	return resp, nil
}
