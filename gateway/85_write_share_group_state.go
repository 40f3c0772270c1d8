package gateway

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// WriteShareGroupState v0–v1.
//
// Between gateways only (share_peers.go): a holder on another gateway
// persists a record of a share-partition whose log partition this
// gateway serves (plog.ShareStates.Persist). The holder's token and the
// record travel in tags (the state epoch repeats the token's epoch); a
// token that is no longer the share-partition's is FENCED_STATE_EPOCH,
// and nothing is written. Anyone but a peer is refused
// CLUSTER_AUTHORIZATION_FAILED.

func init() {
	regKey(85, 0, 1, api[*kmsg.WriteShareGroupStateRequest]{Concurrent: handleWriteShareGroupState, Errors: writeShareGroupStateError})
}

func writeShareGroupStateError(req *kmsg.WriteShareGroupStateRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// errShareWrite answers a WriteShareGroupState partition without a token
// or with other than one record.
var errShareWrite = fmt.Errorf("%w: a share state write carries a token and one record", kerr.InvalidRequest)

func handleWriteShareGroupState(ctx context.Context, gw *Gateway, r *request, req *kmsg.WriteShareGroupStateRequest) (kmsg.Response, error) {
	if !peerOnly(r, "WriteShareGroupState") {
		return writeShareGroupStateError(req, clusterDenied), nil
	}
	s := r.Tenant().shares
	resp := writeShareGroupStateError(req, 0).(*kmsg.WriteShareGroupStateResponse)
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			err := func() error {
				k, ok := peerShareKey(req.GroupID, &t.UnknownTags, p.Partition)
				if !ok {
					return errNoTopicName
				}
				tok, ok := tagValue(&p.UnknownTags, peerShareTokenTag)
				enc, _ := tagValue(&p.UnknownTags, peerShareRecordsTag)
				recs, err := decodeShareRecords(enc)
				if !ok || len(tok) != 8 || err != nil || len(recs) != 1 {
					return errShareWrite
				}
				sv, err := s.servedForPeer(ctx, k, false)
				if err != nil {
					return err
				}
				return s.persistServed(ctx, sv, k, binary.BigEndian.Uint64(tok), recs[0])
			}()
			rp.ErrorCode, rp.ErrorMessage = shareCode(err), shareMessage(err)
		}
	}
	return resp, nil
}
