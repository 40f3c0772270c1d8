package gateway

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/sharestore"
)

// ReadShareGroupStateSummary v0–v1.
//
// Between gateways only (share_peers.go). Naming share-partitions whose
// log partition this gateway serves, it answers each one's kept start
// offset (-1: none kept) without taking it (plog.ShareStates.Start).
// With peerShareLogsTag and no topics it lists the group's
// share-partitions kept in the log partitions the tag names, which the
// caller counts this gateway to serve (plog.ShareStates.Keys): each topic
// of the answer carries its name in a tag, and an error, such as
// NOT_COORDINATOR for a log partition not served here, is a tag of the
// answer. Anyone but a peer is refused CLUSTER_AUTHORIZATION_FAILED.

func init() {
	regKey(87, 0, 1, api[*kmsg.ReadShareGroupStateSummaryRequest]{Concurrent: handleReadShareGroupStateSummary, Errors: readShareGroupStateSummaryError})
}

func readShareGroupStateSummaryError(req *kmsg.ReadShareGroupStateSummaryRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = p.Partition, code, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if code != 0 && hasTag(&req.UnknownTags, peerShareLogsTag) {
		resp.UnknownTags.Set(peerShareErrorTag, binary.BigEndian.AppendUint16(nil, uint16(code)))
	}
	return resp
}

func handleReadShareGroupStateSummary(ctx context.Context, gw *Gateway, r *request, req *kmsg.ReadShareGroupStateSummaryRequest) (kmsg.Response, error) {
	if !peerOnly(r, "ReadShareGroupStateSummary") {
		return readShareGroupStateSummaryError(req, clusterDenied), nil
	}
	s := r.Tenant().shares
	if parts, ok := tagValue(&req.UnknownTags, peerShareLogsTag); ok {
		return s.answerKeys(ctx, req, parts), nil
	}
	resp := readShareGroupStateSummaryError(req, 0).(*kmsg.ReadShareGroupStateSummaryResponse)
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
				rp.StateEpoch = int32(sv.lp.Epoch())
				start, found, err := startServed(sv, k)
				if found {
					rp.StartOffset = start
				}
				return err
			}()
			rp.ErrorCode, rp.ErrorMessage = shareCode(err), shareMessage(err)
		}
	}
	return resp, nil
}

// errShareLogs answers a Keys whose log partitions tag is malformed.
var errShareLogs = fmt.Errorf("%w: a list of log partitions is 4 bytes each", kerr.InvalidRequest)

// answerKeys answers a peer's Keys over the log partitions parts names.
func (s *shareStates) answerKeys(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest, parts []byte) kmsg.Response {
	if len(parts)%4 != 0 {
		return readShareGroupStateSummaryError(req, shareCode(errShareLogs))
	}
	var keys []sharestore.Key
	for ; len(parts) > 0; parts = parts[4:] {
		ks, err := s.keysHere(ctx, int32(binary.BigEndian.Uint32(parts)), req.GroupID)
		if err != nil {
			s.gw.log.Info().Str("group", req.GroupID).Err(err).Msg("could not list a share group's share-partitions for a peer")
			return readShareGroupStateSummaryError(req, shareCode(err))
		}
		keys = append(keys, ks...)
	}
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	type topicStream struct{ topic, stream string }
	byTopic := make(map[topicStream]int)
	for _, k := range keys {
		i, ok := byTopic[topicStream{k.Topic, k.Stream}]
		if !ok {
			i = len(resp.Topics)
			byTopic[topicStream{k.Topic, k.Stream}] = i
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.UnknownTags = topicTags(k)
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
		rp.Partition, rp.StartOffset, rp.LeaderEpoch = k.Partition, -1, -1
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}
