package gateway

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/topics"
)

// Kafka lists its group offsets topic, __consumer_offsets, in Metadata as
// an internal topic, and clients rely on that: regex subscriptions skip
// internal topics, admin tools hide them. disgw keeps committed offsets in
// DIS checkpoints (docs/design.md §5), so the topic holds nothing; it is
// listed as Kafka lists it, with Kafka's default of 50 partitions led by
// their owners like every other partition (so every gateway gives the same
// answer), and reads as 50 empty partitions. Writing it, creating it,
// deleting it or adding partitions to it is refused as Kafka refuses it to
// a client. A DIS stream of that name, which only a DIS-side tool could
// make, is hidden behind it (docs/kafka-api.md, "The internal offsets
// topic"; docs/kafka-compat.md item 14).

// offsetsTopic is the name Kafka gives its group offsets topic.
const offsetsTopic = "__consumer_offsets"

// offsetsTopicPartitions is Kafka's default offsets.topic.num.partitions.
const offsetsTopicPartitions = 50

// offsetsTopicID is the offsets topic's id: fixed, and the same on every
// gateway. DIS stream ids hold no NUL byte, so no stream's id is derived
// from the same input.
var offsetsTopicID = topics.TopicID("\x00internal\x00" + offsetsTopic)

// offsetsTopicMetadata is the offsets topic as Metadata lists it.
func (gw *Gateway) offsetsTopicMetadata() kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(offsetsTopic)
	mt.TopicID = offsetsTopicID
	mt.IsInternal = true
	for p := range int32(offsetsTopicPartitions) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.Leader = gw.partitionOwner(offsetsTopic, p).ID
		mp.Replicas = []int32{mp.Leader}
		mp.ISR = []int32{mp.Leader}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// offsetsPartition reports whether p is a partition of the offsets topic.
func offsetsPartition(p int32) bool { return p >= 0 && p < offsetsTopicPartitions }

// internalTopicRefused is the error answered to a client that writes or
// changes an internal topic, as Kafka answers it: INVALID_TOPIC_EXCEPTION.
func (gw *Gateway) internalTopicRefused(r *request, topic, api string) (int16, *string) {
	why := "disgw keeps committed offsets in DIS checkpoints"
	switch topic {
	case txnStateTopic:
		why = "it holds the transaction coordinator's state"
	case shareStateTopic:
		why = "it holds the share groups' state"
	}
	r.Log().Info().Str("topic", topic).Str("api", api).Msg("refused: an internal topic is not the client's to change")
	return kerr.InvalidTopicException.Code, kmsg.StringPtr("topic '" + topic + "' is internal: " + why)
}

// isInternalTopic reports whether name is one of Kafka's internal topics,
// which clients may read but never write, create, delete or grow.
func isInternalTopic(name string) bool {
	return name == offsetsTopic || name == txnStateTopic || name == shareStateTopic
}

// fetchOffsetsPartition answers a fetch of the offsets topic: an empty log.
func fetchOffsetsPartition(sp *kmsg.FetchResponseTopicPartition, offset int64) {
	switch {
	case !offsetsPartition(sp.Partition):
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
	case offset != 0:
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = 0, 0, 0
	default:
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = 0, 0, 0
	}
}

// waitEmptyFetch holds a fetch that can only answer empty until its wait
// ends, as Kafka holds one at the end of every log, so a consumer of the
// offsets topic polls at its fetch.max.wait.ms and does not spin.
func (gw *Gateway) waitEmptyFetch(ctx context.Context, req *kmsg.FetchRequest) {
	timer := time.NewTimer(fetchWait(req))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-gw.draining:
	case <-timer.C:
	}
}

// listOffsetsPartition answers ListOffsets of the offsets topic: the start
// and end of an empty log are 0, and no record has a timestamp.
func listOffsetsPartition(sp *kmsg.ListOffsetsResponseTopicPartition, ts int64) {
	switch {
	case !offsetsPartition(sp.Partition):
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
	case ts == listLatest || ts == listEarliest || ts == listEarliestLoc:
		sp.Offset = 0
	default:
		sp.LeaderEpoch = -1
	}
}
