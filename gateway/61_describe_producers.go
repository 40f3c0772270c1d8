package gateway

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/topics"
)

// DescribeProducers v0 (KIP-664), what `kafka-transactions.sh
// describe-producers` asks: the idempotent producers of each partition, as
// the partition's writer tracks them for de-duplication (docs/design.md §4).
//
// Only the partition's owner knows its producers, so another gateway answers
// NOT_LEADER_OR_FOLLOWER, as a Kafka follower does. On kafka-format topics
// the state is rebuilt from the partition's tail first, so the answer after
// a restart, or on the gateway a partition moved to, is the one before it;
// raw topics keep producer state in memory only, so there the answer is
// what this gateway has seen since it started, or since it dropped the
// idle partition's state. The coordinator epoch is that of the producer's
// last transaction marker on the partition and the transaction start
// offset its open transaction's first offset (-1 for none), which
// `kafka-transactions.sh abort` sends back in its marker.

func init() {
	regKey(61, 0, 0, api[*kmsg.DescribeProducersRequest]{Concurrent: handleDescribeProducers, Errors: describeProducersError})
}

// describeProducersError answers every partition of req with code.
func describeProducersError(req *kmsg.DescribeProducersRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func handleDescribeProducers(ctx context.Context, gw *Gateway, r *request, req *kmsg.DescribeProducersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		topic := gw.serveTopic(ctx, r, authz.OpRead, rt.Topic, false)
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			if sp.ErrorCode = gw.partitionCode(topic, p); sp.ErrorCode == 0 {
				sp.ActiveProducers, sp.ErrorCode = gw.describeProducers(ctx, r.Tenant(), topic.t, p)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// describeProducers lists the active producers of partition p of t, which
// this gateway owns, or returns the error code for why it cannot.
func (gw *Gateway) describeProducers(ctx context.Context, tn *tenant, t *topics.Meta, p int32) ([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, int16) {
	ps := gw.partitionFor(tn.key(t, p))
	if t.Format == FormatKafka {
		err := ps.EnsureProducers(ctx)
		if err == nil {
			_, err = ps.LastStableOffset(ctx)
		}
		if err != nil {
			gw.log.Warn().Err(err).Str("topic", t.Name).Int32("partition", p).Msg("describe producers: recovering the partition's producers from DIS failed")
			return nil, kafkaCodeForDIS(err)
		}
	}
	var out []kmsg.DescribeProducersResponseTopicPartitionActiveProducer
	for _, s := range ps.ActiveProducers(time.Now()) {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch = s.ID, int32(s.Epoch)
		ap.LastSequence, ap.LastTimestamp = s.LastSeq, s.LastTimestamp
		ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = s.CoordinatorEpoch, s.TxnStartOffset
		out = append(out, ap)
	}
	return out, 0
}
