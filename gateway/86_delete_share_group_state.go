package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteShareGroupState v0.
//
// Between gateways only (share_peers.go): a holder or admin call on
// another gateway deletes share-partitions whose log partition this
// gateway serves (plog.ShareStates.Delete), fencing their holders. Anyone
// but a peer is refused CLUSTER_AUTHORIZATION_FAILED.

func init() {
	regKey(86, 0, 0, api[*kmsg.DeleteShareGroupStateRequest]{Concurrent: handleDeleteShareGroupState, Errors: deleteShareGroupStateError})
}

func deleteShareGroupStateError(req *kmsg.DeleteShareGroupStateRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleDeleteShareGroupState(ctx context.Context, gw *Gateway, r *request, req *kmsg.DeleteShareGroupStateRequest) (kmsg.Response, error) {
	if !peerOnly(r, "DeleteShareGroupState") {
		return deleteShareGroupStateError(req, clusterDenied), nil
	}
	s := r.Tenant().shares
	resp := deleteShareGroupStateError(req, 0).(*kmsg.DeleteShareGroupStateResponse)
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			err := func() error {
				k, ok := peerShareKey(req.GroupID, &t.UnknownTags, p.Partition)
				if !ok {
					return errNoTopicName
				}
				sv, err := s.servedForPeer(ctx, k, true)
				if sv == nil || err != nil {
					return err
				}
				return s.deleteServed(ctx, sv, k)
			}()
			rp.ErrorCode, rp.ErrorMessage = shareCode(err), shareMessage(err)
		}
	}
	return resp, nil
}
