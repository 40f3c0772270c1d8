package gateway

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/groupcoord"
)

// OffsetCommit v0–v9.
//
// v1 added the generation, member id and a per-partition timestamp; v2–v4 a
// retention time (ignored: DIS keeps checkpoints as long as the app); v6 the
// leader epoch; v7 the group instance id; v8 made it flexible; v9 is the
// KIP-848 version, whose member epoch travels in the generation field. The
// group coordinator checks membership and generation (a commit with
// generation -1 and no member id is a simple commit, allowed while the group
// has no members); each partition then becomes a DIS checkpoint.

func init() {
	regKey(8, 0, 9, api[*kmsg.OffsetCommitRequest]{concurrent: handleOffsetCommit, errors: offsetCommitError})
}

// offsetCommitError answers every partition of req with code.
func offsetCommitError(req *kmsg.OffsetCommitRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleOffsetCommit(ctx context.Context, gw *Gateway, r *request, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	tn := r.s.tenant
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	code := int16(0)
	if req.Group == "" {
		code = kerr.InvalidGroupID.Code
	} else {
		gen := req.Generation
		if req.Version == 0 {
			gen = -1
		}
		gw.groups.with(func(c *groupcoord.Coordinator) {
			code = c.CheckCommit(time.Now(), req.Group, req.MemberID, req.InstanceID, gen)
		})
	}
	type job struct {
		t, p   int
		topic  string
		commit kmsg.OffsetCommitRequestTopicPartition
	}
	var jobs []job
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
			if code == 0 {
				jobs = append(jobs, job{ti, pi, t.Topic, p})
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	gw.parallel(len(jobs), func(i int) {
		j := jobs[i]
		resp.Topics[j.t].Partitions[j.p].ErrorCode = gw.commitOffset(ctx, tn, req.Group, j.topic, j.commit.Partition, j.commit.Offset, j.commit.Metadata)
	})
	return resp, nil
}
