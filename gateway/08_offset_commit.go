package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/wire"
)

// OffsetCommit v0–v9.
//
// v1 added the generation, member id and a per-partition timestamp; v2–v4 a
// retention time (ignored: DIS keeps checkpoints as long as the app); v6 the
// leader epoch; v7 the group instance id; v8 made it flexible; v9 is the
// KIP-848 version, whose member epoch travels in the generation field. The
// group coordinator checks membership and generation (a commit with
// generation -1 and no member id is a simple commit, allowed while the group
// has no members); each partition then becomes a DIS checkpoint. Commits of
// one group are written one after the other, in the order they were
// accepted, and a member's commit the group's next generation overtook is
// answered ILLEGAL_GENERATION instead of written.

func init() {
	regKey(8, 0, 9, api[*kmsg.OffsetCommitRequest]{Staged: handleOffsetCommit, Errors: offsetCommitError})
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

// handleOffsetCommit is staged: its ordered part has the coordinator accept
// the commit and queue its write, so commits of one connection join the
// group's queue in request order; the continuation waits for the write.
func handleOffsetCommit(ctx context.Context, gw *Gateway, r *request, req *kmsg.OffsetCommitRequest) (kmsg.Response, wire.Continuation, error) {
	tn := r.Tenant()
	resp := offsetCommitError(req, 0).(*kmsg.OffsetCommitResponse)
	type job struct {
		t, p   int
		topic  string
		commit kmsg.OffsetCommitRequestTopicPartition
	}
	if !gw.authorize(r, authz.OpRead, authz.ResourceGroup, req.Group) {
		return offsetCommitError(req, groupDenied), nil, nil
	}
	var jobs []job
	for ti, t := range req.Topics {
		if !gw.authorize(r, authz.OpRead, authz.ResourceTopic, t.Topic) {
			setTopicCommitCode(resp, ti, topicDenied)
			continue
		}
		for pi, p := range t.Partitions {
			jobs = append(jobs, job{ti, pi, t.Topic, p})
		}
	}
	written := make(chan struct{})
	// Runs in the group's commit queue, after every commit accepted before.
	write := func(stale bool) {
		defer close(written)
		if stale {
			gw.log.Info().Str("group", req.Group).Int32("generation", req.Generation).Msg("dropping a commit the group's newer generation overtook")
			setCommitCodes(resp, kerr.IllegalGeneration.Code)
			return
		}
		gw.parallel(len(jobs), func(i int) {
			j := jobs[i]
			resp.Topics[j.t].Partitions[j.p].ErrorCode = gw.groups.CommitOffset(ctx, tn, req.Group, j.topic, j.commit.Partition, j.commit.Offset, j.commit.Metadata)
		})
	}
	code := kerr.InvalidGroupID.Code
	if req.Group != "" {
		gen := req.Generation
		if req.Version == 0 {
			gen = -1
		}
		code = gw.groups.Commit(tn, req.Group, req.MemberID, req.InstanceID, gen, write)
	}
	if code != 0 {
		setCommitCodes(resp, code)
		return resp, nil, nil
	}
	return nil, func(ctx context.Context) (kmsg.Response, error) {
		select {
		case <-written:
			return resp, nil
		case <-ctx.Done():
			// The write still runs in its turn, under the same expired
			// context, so it cannot land after this answer.
			return nil, ctx.Err()
		}
	}, nil
}

// setCommitCodes answers every partition of an OffsetCommit with code.
func setCommitCodes(resp *kmsg.OffsetCommitResponse, code int16) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = code
		}
	}
}
