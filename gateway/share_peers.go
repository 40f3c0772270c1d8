package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/sharestore"
)

// Share-group state between gateways: a holder whose share-partition's
// log partition another gateway serves calls it with Kafka's inter-broker
// share-state APIs, ReadShareGroupState (Take), WriteShareGroupState
// (Persist), DeleteShareGroupState (Delete) and
// ReadShareGroupStateSummary (Start, and with peerShareLogsTag Keys).
// Kafka names topics by id there; the gateway keeps share-partitions by
// name, so a tag carries it, and the holder's token and the records,
// which no Kafka field holds, are tags too.

// Tags of the share-state calls, after the transaction ones
// (peerVersionTag, peerPendingTag).
const (
	// peerShareTopicTag is a topic's name and stream id
	// (encodeShareTopic), on each topic of the requests and of
	// ReadShareGroupStateSummary's answer to Keys.
	peerShareTopicTag = 0x444b
	// peerShareTokenTag is a holder's token, 8 bytes big-endian, on a
	// partition of ReadShareGroupState's answer and of
	// WriteShareGroupState.
	peerShareTokenTag = 0x444c
	// peerShareRecordsTag is sharestate records (encodeShareRecords):
	// what a share-partition loads from, on a partition of
	// ReadShareGroupState's answer (absent when nothing is kept), and
	// the one to persist, on a partition of WriteShareGroupState.
	peerShareRecordsTag = 0x444d
	// peerShareLogsTag makes a ReadShareGroupStateSummary a Keys: the
	// log partitions to list the group's share-partitions of, 4 bytes
	// big-endian each.
	peerShareLogsTag = 0x444e
	// peerShareErrorTag is the error code, 2 bytes big-endian, of a
	// ReadShareGroupStateSummary asking for Keys that could not be
	// answered.
	peerShareErrorTag = 0x444f
)

// tagValue is the value tags carry under key.
func tagValue(tags *kmsg.Tags, key uint32) (val []byte, ok bool) {
	tags.Each(func(k uint32, v []byte) {
		if k == key {
			val, ok = v, true
		}
	})
	return val, ok
}

// topicTags are the tags naming k's topic.
func topicTags(k sharestore.Key) kmsg.Tags {
	var tags kmsg.Tags
	tags.Set(peerShareTopicTag, encodeShareTopic(k))
	return tags
}

// encodeShareTopic is k's topic name after its length, then its stream
// id.
func encodeShareTopic(k sharestore.Key) []byte {
	b := binary.AppendUvarint(nil, uint64(len(k.Topic)))
	return append(append(b, k.Topic...), k.Stream...)
}

// peerShareKey is the share-partition of group and partition in the
// topic a peer's tags name; ok is false without a well-formed name.
func peerShareKey(group string, tags *kmsg.Tags, partition int32) (k sharestore.Key, ok bool) {
	b, ok := tagValue(tags, peerShareTopicTag)
	if !ok {
		return k, false
	}
	n, used := binary.Uvarint(b)
	if used <= 0 || n > uint64(len(b)-used) {
		return k, false
	}
	name := b[used : used+int(n)]
	return sharestore.Key{Group: group, Topic: string(name), Stream: string(b[used+int(n):]), Partition: partition}, true
}

// encodeShareRecords is recs one after the other, each after its length.
func encodeShareRecords(recs []sharestate.Record) []byte {
	var b []byte
	for _, r := range recs {
		enc := r.Encode()
		b = binary.AppendUvarint(b, uint64(len(enc)))
		b = append(b, enc...)
	}
	return b
}

// decodeShareRecords reads what encodeShareRecords wrote.
func decodeShareRecords(b []byte) ([]sharestate.Record, error) {
	var out []sharestate.Record
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, errors.New("share state records truncated")
		}
		r, err := sharestate.Decode(b[w : w+int(n)])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		b = b[w+int(n):]
	}
	return out, nil
}

// shareCode is the Kafka code a share-state call's error is answered
// with: FENCED_STATE_EPOCH for a fenced holder, the code a Kafka error
// carries, else what a DIS failure is.
func shareCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case err == nil:
		return 0
	case errors.Is(err, plog.ErrShareFenced):
		return kerr.FencedStateEpoch.Code
	case errors.As(err, &ke):
		return ke.Code
	}
	return kafkaCodeForDIS(err)
}

// shareMessage is the message an answer carries with err, nil without.
func shareMessage(err error) *string {
	if err == nil {
		return nil
	}
	return kmsg.StringPtr(err.Error())
}

// shareError is the error a peer's code and message stand for.
func shareError(code int16, msg *string) error {
	switch {
	case code == 0:
		return nil
	case code == kerr.FencedStateEpoch.Code:
		return plog.ErrShareFenced
	case msg != nil && *msg != "":
		return fmt.Errorf("%w: %s", kerr.ErrorForCode(code), *msg)
	}
	return kerr.ErrorForCode(code)
}

// errShareAnswer is a peer's answer that does not hold the partition
// asked about.
var errShareAnswer = fmt.Errorf("%w: a peer's share state answer does not hold the partition asked", kerr.UnknownServerError)

// callShareServer sends req to the gateway serving log partition part.
func (gw *Gateway) callShareServer(ctx context.Context, part int32, req kmsg.Request) (kmsg.Response, error) {
	return gw.callSharePeer(ctx, gw.partitionOwner(shareStateTopic, part), req)
}

// callSharePeer sends req to p.
func (gw *Gateway) callSharePeer(ctx context.Context, p cluster.Peer, req kmsg.Request) (kmsg.Response, error) {
	resp, code := gw.callPeer(ctx, p, req, kerr.CoordinatorNotAvailable.Code)
	if code != 0 {
		return nil, fmt.Errorf("%w: calling gateway %d", kerr.ErrorForCode(code), p.ID)
	}
	return resp, nil
}

// peerShareTake is Take at the peer serving log partition part: the
// records k loads from and the token.
func (gw *Gateway) peerShareTake(ctx context.Context, part int32, k sharestore.Key) ([]sharestate.Record, uint64, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.UnknownTags = topicTags(k)
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, -1
	rt.Partitions = []kmsg.ReadShareGroupStateRequestTopicPartition{rp}
	req.Topics = []kmsg.ReadShareGroupStateRequestTopic{rt}
	resp, err := gw.callShareServer(ctx, part, req)
	if err != nil {
		return nil, 0, err
	}
	ts := resp.(*kmsg.ReadShareGroupStateResponse).Topics
	if len(ts) != 1 || len(ts[0].Partitions) != 1 {
		return nil, 0, errShareAnswer
	}
	p := &ts[0].Partitions[0]
	if err := shareError(p.ErrorCode, p.ErrorMessage); err != nil {
		return nil, 0, err
	}
	tok, ok := tagValue(&p.UnknownTags, peerShareTokenTag)
	if !ok || len(tok) != 8 {
		return nil, 0, errShareAnswer
	}
	enc, _ := tagValue(&p.UnknownTags, peerShareRecordsTag)
	recs, err := decodeShareRecords(enc)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", kerr.UnknownServerError, err)
	}
	return recs, binary.BigEndian.Uint64(tok), nil
}

// peerSharePersist is Persist at the peer serving log partition part.
func (gw *Gateway) peerSharePersist(ctx context.Context, part int32, k sharestore.Key, token uint64, rec sharestate.Record) error {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.UnknownTags = topicTags(k)
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = k.Partition, int32(token>>32), -1, rec.Start
	rp.UnknownTags.Set(peerShareTokenTag, binary.BigEndian.AppendUint64(nil, token))
	rp.UnknownTags.Set(peerShareRecordsTag, encodeShareRecords([]sharestate.Record{rec}))
	rt.Partitions = []kmsg.WriteShareGroupStateRequestTopicPartition{rp}
	req.Topics = []kmsg.WriteShareGroupStateRequestTopic{rt}
	resp, err := gw.callShareServer(ctx, part, req)
	if err != nil {
		return err
	}
	ts := resp.(*kmsg.WriteShareGroupStateResponse).Topics
	if len(ts) != 1 || len(ts[0].Partitions) != 1 {
		return errShareAnswer
	}
	return shareError(ts[0].Partitions[0].ErrorCode, ts[0].Partitions[0].ErrorMessage)
}

// peerShareDelete is Delete at the peer serving log partition part.
func (gw *Gateway) peerShareDelete(ctx context.Context, part int32, k sharestore.Key) error {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.UnknownTags = topicTags(k)
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = k.Partition
	rt.Partitions = []kmsg.DeleteShareGroupStateRequestTopicPartition{rp}
	req.Topics = []kmsg.DeleteShareGroupStateRequestTopic{rt}
	resp, err := gw.callShareServer(ctx, part, req)
	if err != nil {
		return err
	}
	ts := resp.(*kmsg.DeleteShareGroupStateResponse).Topics
	if len(ts) != 1 || len(ts[0].Partitions) != 1 {
		return errShareAnswer
	}
	return shareError(ts[0].Partitions[0].ErrorCode, ts[0].Partitions[0].ErrorMessage)
}

// peerShareStart is Start at the peer serving log partition part; a start
// offset of -1 is none kept.
func (gw *Gateway) peerShareStart(ctx context.Context, part int32, k sharestore.Key) (int64, bool, error) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.UnknownTags = topicTags(k)
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, -1
	rt.Partitions = []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{rp}
	req.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{rt}
	resp, err := gw.callShareServer(ctx, part, req)
	if err != nil {
		return 0, false, err
	}
	ts := resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics
	if len(ts) != 1 || len(ts[0].Partitions) != 1 {
		return 0, false, errShareAnswer
	}
	p := ts[0].Partitions[0]
	if err := shareError(p.ErrorCode, p.ErrorMessage); err != nil {
		return 0, false, err
	}
	return p.StartOffset, p.StartOffset >= 0, nil
}

// peerShareKeys is Keys at peer p, over the log partitions parts it
// serves.
func (gw *Gateway) peerShareKeys(ctx context.Context, p cluster.Peer, parts []int32, group string) ([]sharestore.Key, error) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = group
	var b []byte
	for _, part := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(part))
	}
	req.UnknownTags.Set(peerShareLogsTag, b)
	resp, err := gw.callSharePeer(ctx, p, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
	if code, ok := tagValue(&r.UnknownTags, peerShareErrorTag); ok && len(code) == 2 {
		return nil, fmt.Errorf("%w: listing share-partitions at gateway %d", kerr.ErrorForCode(int16(binary.BigEndian.Uint16(code))), p.ID)
	}
	var out []sharestore.Key
	for _, t := range r.Topics {
		for _, tp := range t.Partitions {
			k, ok := peerShareKey(group, &t.UnknownTags, tp.Partition)
			if !ok {
				return nil, errShareAnswer
			}
			out = append(out, k)
		}
	}
	return out, nil
}

// peerOnly reports whether r comes from another gateway, logging a
// refusal otherwise: the share-state APIs are between gateways only, as
// Kafka's are between brokers.
func peerOnly(r *request, api string) bool {
	if r.Peer() {
		return true
	}
	r.Log().Info().Str("api", api).Msg("refused: only another gateway of the cluster may call it")
	return false
}

// errNoTopicName answers a topic a peer sent without its name.
var errNoTopicName = fmt.Errorf("%w: no topic name tag", kerr.InvalidRequest)

// servedForPeer is the log partition of k, served here, for a peer's
// call; kept is as for serveKept: nil without an error when the state
// topic does not exist.
func (s *shareStates) servedForPeer(ctx context.Context, k sharestore.Key, kept bool) (*shareServed, error) {
	part := sharestore.PartitionOf(k, s.gw.cfg.ShareStatePartitions)
	if kept {
		return s.serveKept(ctx, part)
	}
	return s.serve(ctx, part)
}
